package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
)

// measured is a run of 20 clients and 5 server threads: 4000 operations
// in 20 s (X = 200/s), mean response 80 ms (service 60 ms, queue 20 ms).
// By Little's law the clients spend N/X − R = 20/200 − 0.08 = 20 ms
// between operations.
func measured(res *result.Resources) *result.Result {
	return &result.Result{
		Workload:     "stockonline",
		Config:       config.Run{Clients: 20, ServerThreads: 5},
		Summary:      result.Summary{Completed: 4000, ElapsedS: 20},
		Terminals:    []result.Terminals{{Group: "clients", Count: 20}},
		TotalLatency: metrics.Latency{Mean: 80},
		TotalService: metrics.Latency{Mean: 60},
		TotalQueue:   metrics.Latency{Mean: 20},
		Resources:    res,
	}
}

func TestFromResultStations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  result.Resources
		// want: the stations before the fitted one, as name/servers/demand.
		want  []Station
		notes string
	}{
		{"sqlite in-process", result.Resources{SteadyS: 20, AppCPUS: 8, DBCPUSource: result.DBCPUInProcess, AppCPUs: 2, SharedCPUs: true},
			// 8 s of CPU / 4000 operations = 2 ms.
			[]Station{{Name: StationCPU, Kind: Multi, Servers: 2, Demand: 0.002}}, ""},
		{"local server, one machine", result.Resources{SteadyS: 20, AppCPUS: 4, DBCPUS: 12, DBCPUSource: result.DBCPUProc, AppCPUs: 4, DBCPUs: 4, SharedCPUs: true},
			// (4 + 12) s / 4000 = 4 ms on the 4 CPUs they share.
			[]Station{{Name: StationCPU, Kind: Multi, Servers: 4, Demand: 0.004}}, ""},
		{"placement dual", result.Resources{SteadyS: 20, AppCPUS: 4, DBCPUS: 12, DBCPUSource: result.DBCPUProc, AppCPUs: 1, DBCPUs: 1},
			// 4 s / 4000 = 1 ms on tierbench's CPU; 12 s / 4000 = 3 ms on the server's.
			[]Station{{Name: StationAppCPU, Kind: Multi, Servers: 1, Demand: 0.001}, {Name: StationDBCPU, Kind: Multi, Servers: 1, Demand: 0.003}}, ""},
		{"remote server", result.Resources{SteadyS: 20, AppCPUS: 4, DBCPUSource: result.DBCPURemote, AppCPUs: 2},
			[]Station{{Name: StationAppCPU, Kind: Multi, Servers: 2, Demand: 0.001}}, "unknown: remote database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ex, err := FromResult(measured(&tt.res))
			if err != nil {
				t.Fatal(err)
			}
			if !near(n.Think, 0.02, 1e-12) || !near(ex.MeasuredX, 200, 1e-12) || !near(ex.MeasuredR, 0.08, 1e-12) || ex.Clients != 20 || ex.ServerThreads != 5 {
				t.Errorf("think %v, measured X %v R %v, clients %d, threads %d; want 0.02, 200, 0.08, 20, 5", n.Think, ex.MeasuredX, ex.MeasuredR, ex.Clients, ex.ServerThreads)
			}
			if len(n.Stations) != len(tt.want)+1 {
				t.Fatalf("stations %+v, want %d and the latency", n.Stations, len(tt.want))
			}
			for i, w := range tt.want {
				s := n.Stations[i]
				if s.Name != w.Name || s.Kind != w.Kind || s.Servers != w.Servers || !near(s.Demand, w.Demand, 1e-12) || s.Source == "" {
					t.Errorf("station %d: %+v, want %+v with a source", i, s, w)
				}
			}
			last := n.Stations[len(tt.want)]
			if last.Name != StationLatency || last.Kind != Delay || !strings.Contains(last.Source, "fitted") || n.Admission != 5 || n.AdmissionSource == "" {
				t.Errorf("last station %+v, admission %d; want the fitted latency and 5 server threads", last, n.Admission)
			}
			// The fit: the network has the run's throughput at its clients,
			// and so (Little's law on both) its response time.
			if !ex.Calibrated || !near(ex.ModelX, 200, 1e-9) || !near(ex.ModelR, 0.08, 1e-8) {
				t.Errorf("model at 20 clients: X %v R %v (calibrated %v), want 200/s and 80 ms", ex.ModelX, ex.ModelR, ex.Calibrated)
			}
			if tt.notes != "" && !strings.Contains(strings.Join(ex.Notes, "\n"), tt.notes) {
				t.Errorf("notes %q do not say %q", ex.Notes, tt.notes)
			}
		})
	}
}

func TestFromResultWithoutAdmission(t *testing.T) {
	t.Parallel()
	// A drive of a remote site: no server threads of ours, so no pool.
	r := measured(&result.Resources{SteadyS: 20, AppCPUS: 4, DBCPUSource: result.DBCPURemote, AppCPUs: 2})
	r.Environment.Target = "http://site:8080"
	n, ex, err := FromResult(r)
	if err != nil {
		t.Fatal(err)
	}
	last := n.Stations[len(n.Stations)-1]
	if last.Name != StationLatency || last.Kind != Delay || ex.ServerThreads != 0 || n.Admission != 0 || !near(ex.ModelX, 200, 1e-9) {
		t.Errorf("last station %+v, threads %d, admission %d, model X %v; want a fitted delay, no pool and X = 200", last, ex.ServerThreads, n.Admission, ex.ModelX)
	}
}

func TestFromResultRefuses(t *testing.T) {
	t.Parallel()
	if _, _, err := FromResult(measured(nil)); !errors.Is(err, ErrNoResources) {
		t.Errorf("a result without resources: %v, want ErrNoResources", err)
	}
	r := measured(&result.Resources{SteadyS: 20, AppCPUS: 4, DBCPUSource: result.DBCPUInProcess, AppCPUs: 2})
	r.Summary.Completed = 0
	if _, _, err := FromResult(r); err == nil || !strings.Contains(err.Error(), "no operation completed") {
		t.Errorf("a run with nothing completed: %v", err)
	}
}

func TestFromResultCPUAboveTheRun(t *testing.T) {
	t.Parallel()
	// 200 s of CPU on 2 CPUs for 4000 operations: 50 ms each, so at most
	// 2 / 0.05 = 40/s, below the 200/s measured. The model cannot be
	// fitted and says so.
	_, ex, err := FromResult(measured(&result.Resources{SteadyS: 20, AppCPUS: 200, DBCPUSource: result.DBCPUInProcess, AppCPUs: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if ex.Calibrated || ex.ModelX > 40 || !strings.Contains(strings.Join(ex.Notes, "\n"), "below the 200.0/s measured") {
		t.Errorf("calibrated %v, model X %v, notes %q", ex.Calibrated, ex.ModelX, ex.Notes)
	}
}
