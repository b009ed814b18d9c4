package result

import (
	"testing"
	"time"
)

func TestBuildResourcesScalesToTheWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	// Read over 10.5 s for a 10 s steady state: 21 s of tierbench's CPU
	// and 10.5 s of the server's become 20 s and 10 s.
	in := &ResourceInputs{
		Start:  CPUSample{At: t0, App: 5 * time.Second, DB: 7 * time.Second, DBProcesses: 9},
		End:    CPUSample{At: t0.Add(10500 * time.Millisecond), App: 26 * time.Second, DB: 17500 * time.Millisecond, DBProcesses: 11},
		Window: 10 * time.Second, AppCPUSource: "getrusage", DBCPUSource: DBCPUProc, AppCPUs: 2, DBCPUs: 2, SharedCPUs: true,
	}
	got := *BuildResources(in)
	want := Resources{SteadyS: 10, SampledS: 10.5, AppCPUS: 20, AppCPUSource: "getrusage", DBCPUS: 10, DBCPUSource: DBCPUProc, DBProcesses: 11, AppCPUs: 2, DBCPUs: 2, SharedCPUs: true}
	if got != want {
		t.Errorf("BuildResources = %+v, want %+v", got, want)
	}
	// The server's time counts only when it was read.
	in.DBCPUSource = DBCPURemote
	if got := BuildResources(in); got.DBCPUS != 0 || got.DBProcesses != 0 {
		t.Errorf("a remote database: %+v, want no CPU time of it", got)
	}
	if BuildResources(nil) != nil {
		t.Error("BuildResources(nil) is not nil")
	}
}
