package result

import "time"

// Where a result's database CPU time came from (Resources.DBCPUSource).
const (
	// DBCPUProc: read from /proc for the local server's processes.
	DBCPUProc = "proc"
	// DBCPUInProcess: the database (SQLite) runs inside tierbench, so its
	// CPU time is in AppCPUS.
	DBCPUInProcess = "in-process"
	// DBCPURemote: the server is on another host (or the run reached no
	// database): its CPU time is not known.
	DBCPURemote = "unknown: remote database"
)

// Resources is what the run's steady state cost in CPU time, the demands
// a capacity model (tierbench model) starts from. Absent in results of
// runs from before it was measured.
type Resources struct {
	// SteadyS is the steady state the CPU times cover, in seconds: the
	// summary's elapsed_s.
	SteadyS float64 `json:"steady_s"`
	// SampledS is the interval the CPU times were read over; when it
	// differs from SteadyS, the times were scaled by SteadyS/SampledS
	// (see docs/model.md).
	SampledS float64 `json:"sampled_s"`
	// AppCPUS is tierbench's CPU time (user + system): the driver, the
	// middle tier and, for SQLite, the database; with --tiers 2|3, the
	// tier processes' too.
	AppCPUS float64 `json:"app_cpu_s"`
	// AppCPUSource says how AppCPUS was read.
	AppCPUSource string `json:"app_cpu_source"`
	// DBCPUS is the database server's CPU time, when DBCPUSource is
	// "proc"; zero otherwise.
	DBCPUS      float64 `json:"db_cpu_s"`
	DBCPUSource string  `json:"db_cpu_source"`
	// DBProcesses is how many server processes were read at the end.
	DBProcesses int `json:"db_processes,omitempty"`
	// AppCPUs and DBCPUs are how many CPUs each may use; SharedCPUs says
	// they are the same CPUs (one machine), as without --placement or
	// with --placement mixed.
	AppCPUs    int  `json:"app_cpus"`
	DBCPUs     int  `json:"db_cpus,omitempty"`
	SharedCPUs bool `json:"shared_cpus"`
}

// CPUSample is the CPU time used up to one instant.
type CPUSample struct {
	At  time.Time
	App time.Duration
	DB  time.Duration
	// DBProcesses is how many database processes the sample read.
	DBProcesses int
}

// ResourceInputs are a run's two CPU samples, at the start and the end of
// its steady state, and what they were read from.
type ResourceInputs struct {
	Start, End CPUSample
	// Window is the steady state's length (the driver's), which the
	// samples' interval approximates.
	Window       time.Duration
	AppCPUSource string
	DBCPUSource  string
	AppCPUs      int
	DBCPUs       int
	SharedCPUs   bool
}

// BuildResources turns the samples into the result's figures, scaled to
// the steady state: nil when nothing was sampled.
func BuildResources(in *ResourceInputs) *Resources {
	if in == nil {
		return nil
	}
	sampled := in.End.At.Sub(in.Start.At)
	scale := 1.0
	if sampled > 0 && in.Window > 0 {
		scale = in.Window.Seconds() / sampled.Seconds()
	}
	cpu := func(d time.Duration) float64 { return round(max(d, 0).Seconds()*scale, 4) }
	r := &Resources{
		SteadyS:      round(in.Window.Seconds(), 3),
		SampledS:     round(sampled.Seconds(), 3),
		AppCPUS:      cpu(in.End.App - in.Start.App),
		AppCPUSource: in.AppCPUSource,
		DBCPUSource:  in.DBCPUSource,
		AppCPUs:      in.AppCPUs,
		DBCPUs:       in.DBCPUs,
		SharedCPUs:   in.SharedCPUs,
	}
	if in.DBCPUSource == DBCPUProc {
		r.DBCPUS = cpu(in.End.DB - in.Start.DB)
		r.DBProcesses = in.End.DBProcesses
	}
	return r
}
