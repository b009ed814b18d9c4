package model

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tierbench/tierbench/internal/result"
)

// ErrNoResources: the result has no CPU times, because its run predates
// their measurement (or never reached its steady state).
var ErrNoResources = errors.New("the result has no CPU time of its steady state (resources): its run predates that measurement, or never reached its steady state; run it again with this tierbench")

// Explanation is how a network was built from a run and how well it
// reproduces the run.
type Explanation struct {
	Workload string
	// Clients is the run's terminals (the network's N at the run);
	// ServerThreads its --server-threads, 0 when the driver admitted all.
	Clients       int
	ServerThreads int
	// MeasuredX is the run's throughput (operations per second) and
	// MeasuredR its mean response time (seconds, queueing for a server
	// thread included); ModelX and ModelR the network's at Clients.
	MeasuredX, MeasuredR float64
	ModelX, ModelR       float64
	// Calibrated: the remaining time was fitted so that ModelX matches
	// MeasuredX; false when even no remaining time leaves the model
	// slower than the run (Notes say why).
	Calibrated bool
	Notes      []string
}

// Names of the stations FromResult builds.
const (
	StationCPU     = "cpu"
	StationAppCPU  = "app cpu"
	StationDBCPU   = "db cpu"
	StationLatency = "latency"
)

// FromResult builds the network of a measured run: the clients' time
// between operations, the CPUs as multi-server stations with the CPU time
// each operation cost in the steady state, the rest of each operation's
// time (round trips, I/O, lock waits) as a delay, and the pool of server
// threads as the network's admission limit. The delay's demand is fitted
// so that the network at the run's clients has the run's throughput.
// docs/model.md explains each.
func FromResult(r *result.Result) (Network, Explanation, error) {
	res := r.Resources
	if res == nil {
		return Network{}, Explanation{}, ErrNoResources
	}
	s := r.Summary
	if s.Completed < 1 || s.ElapsedS <= 0 {
		return Network{}, Explanation{}, fmt.Errorf("no operation completed in the run's steady state: nothing to model")
	}
	clients := 0
	for _, t := range r.Terminals {
		clients += t.Count
	}
	if clients == 0 {
		clients = r.Config.Clients
	}
	if clients < 1 {
		return Network{}, Explanation{}, fmt.Errorf("the result names no clients")
	}
	ex := Explanation{
		Workload:  r.Workload,
		Clients:   clients,
		MeasuredX: float64(s.Completed) / s.ElapsedS,
		MeasuredR: r.TotalLatency.Mean / 1000,
	}
	ops := float64(s.Completed)
	n := Network{}

	// The clients' time outside an operation, by Little's law on the
	// whole loop: N = X (R + Z). It holds whatever the pacing (think
	// time, cycle time, the driver's own work between operations).
	z := float64(clients)/ex.MeasuredX - ex.MeasuredR
	n.Think = max(z, 0)
	n.ThinkSource = fmt.Sprintf("Little's law: N/X − R = %d / %.1f/s − %s = %s per operation", clients, ex.MeasuredX, ms(ex.MeasuredR), ms(z))
	if think := time.Duration(r.Config.ThinkTime); think > 0 {
		n.ThinkSource += fmt.Sprintf(" (--think-time %v)", think)
	} else {
		n.ThinkSource += " (no --think-time: the driver's own time between operations)"
	}
	if len(r.Terminals) > 1 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the run had %d groups of terminals; the model treats them as one class of %d clients with the mix as measured", len(r.Terminals), clients))
	}

	// The CPUs.
	window := fmt.Sprintf("%.1f s steady state, %d operations", res.SteadyS, s.Completed)
	appCPUs := max(res.AppCPUs, 1)
	switch {
	case res.DBCPUSource == result.DBCPUProc && !res.SharedCPUs:
		n.Stations = append(n.Stations,
			Station{Name: StationAppCPU, Kind: Multi, Servers: appCPUs, Demand: res.AppCPUS / ops,
				Source: fmt.Sprintf("tierbench's CPU time %.2f s (%s) / %s, on %s", res.AppCPUS, res.AppCPUSource, window, cpus(appCPUs))},
			Station{Name: StationDBCPU, Kind: Multi, Servers: max(res.DBCPUs, 1), Demand: res.DBCPUS / ops,
				Source: fmt.Sprintf("the database server's CPU time %.2f s (/proc, %d processes) / %s, on %s of its own", res.DBCPUS, res.DBProcesses, window, cpus(max(res.DBCPUs, 1)))})
	case res.DBCPUSource == result.DBCPUProc:
		m := max(appCPUs, res.DBCPUs)
		n.Stations = append(n.Stations, Station{Name: StationCPU, Kind: Multi, Servers: m, Demand: (res.AppCPUS + res.DBCPUS) / ops,
			Source: fmt.Sprintf("CPU time of tierbench %.2f s (%s) + the database server %.2f s (/proc, %d processes) / %s; they share %s", res.AppCPUS, res.AppCPUSource, res.DBCPUS, res.DBProcesses, window, cpus(m))})
	case res.DBCPUSource == result.DBCPUInProcess:
		n.Stations = append(n.Stations, Station{Name: StationCPU, Kind: Multi, Servers: appCPUs, Demand: res.AppCPUS / ops,
			Source: fmt.Sprintf("tierbench's CPU time %.2f s (%s; SQLite runs in it) / %s, on %s", res.AppCPUS, res.AppCPUSource, window, cpus(appCPUs))})
	default:
		n.Stations = append(n.Stations, Station{Name: StationAppCPU, Kind: Multi, Servers: appCPUs, Demand: res.AppCPUS / ops,
			Source: fmt.Sprintf("tierbench's CPU time %.2f s (%s) / %s, on %s", res.AppCPUS, res.AppCPUSource, window, cpus(appCPUs))})
		ex.Notes = append(ex.Notes, "the database's CPU time is "+res.DBCPUSource+": its work is part of the remaining time, as if it never queued")
	}
	cpu := 0.0
	for _, st := range n.Stations {
		cpu += st.Demand
	}

	// The rest of an operation's time. Without queueing for threads, the
	// service time is the whole latency.
	service := r.TotalLatency.Mean / 1000
	if r.TotalService.Mean > 0 && r.TotalQueue.Mean > 0 {
		service = r.TotalService.Mean / 1000
	}
	naive := service - cpu
	if threads := r.Config.ServerThreads; threads > 0 && r.Environment.Target == "" {
		// Our middle tier admits --server-threads operations at once;
		// a drive's site admits whoever comes, as far as we know.
		// Each app server has its own pool of them.
		servers := max(r.Config.AppServers, 1)
		ex.ServerThreads = threads
		n.Admission = threads * servers
		n.AdmissionSource = fmt.Sprintf("--server-threads %d: a thread is held for the whole of an operation, the CPUs and the latency; clients beyond wait for one (measured wait %s)", threads, ms(r.TotalQueue.Mean/1000))
		if servers > 1 {
			n.AdmissionSource = fmt.Sprintf("--server-threads %d on each of %d app servers, as one pool of %d (the clients spread evenly): a thread is held for the whole of an operation; clients beyond wait for one (measured wait %s)", threads, servers, n.Admission, ms(r.TotalQueue.Mean/1000))
		}
	}
	idx := len(n.Stations)
	n.Stations = append(n.Stations, Station{Name: StationLatency, Kind: Delay})

	demandAt := func(d float64) (Point, error) {
		n.Stations[idx].Demand = d
		pts, err := Solve(n, []int{clients})
		if err != nil {
			return Point{}, err
		}
		return pts[0], nil
	}
	p0, err := demandAt(0)
	if err != nil {
		return Network{}, Explanation{}, err
	}
	fit := 0.0
	if p0.X < ex.MeasuredX {
		ex.Notes = append(ex.Notes, fmt.Sprintf("even with no time besides the CPUs the model reaches only %.1f/s at %d clients, below the %.1f/s measured: the CPU demand is too high for this run (CPU time spent outside its operations?)", p0.X, clients, ex.MeasuredX))
	} else {
		// X falls as the demand grows; the demand cannot exceed the
		// whole loop, N/X.
		lo, hi := 0.0, float64(clients)/ex.MeasuredX
		for range 200 {
			mid := (lo + hi) / 2
			p, err := demandAt(mid)
			if err != nil {
				return Network{}, Explanation{}, err
			}
			if p.X > ex.MeasuredX {
				lo = mid
			} else {
				hi = mid
			}
			if hi-lo <= 1e-12*hi {
				break
			}
		}
		fit = (lo + hi) / 2
		ex.Calibrated = true
	}
	p, err := demandAt(fit)
	if err != nil {
		return Network{}, Explanation{}, err
	}
	ex.ModelX, ex.ModelR = p.X, p.R
	n.Stations[idx].Source = fmt.Sprintf("an operation's time outside the CPUs (round trips to the database, I/O, lock waits, CPU of other processes), fitted so the model has the run's throughput at %d clients (mean service time − CPU demand = %s − %s = %s)",
		clients, ms(service), ms(cpu), ms(naive))
	return n, ex, nil
}

// ms writes seconds as milliseconds for a sentence.
func ms(s float64) string {
	switch a := math.Abs(s) * 1000; {
	case a >= 100:
		return fmt.Sprintf("%.0f ms", s*1000)
	case a >= 1:
		return fmt.Sprintf("%.2f ms", s*1000)
	}
	return fmt.Sprintf("%.3f ms", s*1000)
}

// cpus counts CPUs for a sentence: "1 CPU", "2 CPUs".
func cpus(n int) string {
	if n == 1 {
		return "1 CPU"
	}
	return fmt.Sprintf("%d CPUs", n)
}
