package model

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
)

// closedRun is a run of clients without think time (10 server threads,
// none waiting) on SQLite: x operations per second for 10 s, each with
// cpu seconds of CPU on 2 CPUs; by Little's law its response time is
// clients/x.
func closedRun(clients int, x, cpu float64) *result.Result {
	ops := int64(10 * x)
	return &result.Result{
		Workload:     "stockonline",
		Environment:  result.Environment{DB: "sqlite 3"},
		Config:       config.Run{Clients: clients, ServerThreads: 10},
		Summary:      result.Summary{Completed: ops, Operations: ops, ElapsedS: 10},
		Terminals:    []result.Terminals{{Group: "clients", Count: clients}},
		TotalLatency: metrics.Latency{Mean: 1000 * float64(clients) / x},
		Resources:    &result.Resources{SteadyS: 10, AppCPUS: cpu * float64(ops), DBCPUSource: result.DBCPUInProcess, AppCPUs: 2, SharedCPUs: true},
	}
}

func TestCalibrateReproducesBothRuns(t *testing.T) {
	t.Parallel()
	// 1 client: 10000/s with 0.05 ms of CPU each; 8 clients: 16000/s
	// with 0.04 ms. The laws go through both runs' demands, so the model
	// has both throughputs; between them it interpolates.
	runs := []*result.Result{closedRun(1, 10000, 0.05e-3), closedRun(8, 16000, 0.04e-3)}
	n, ex, cals, err := Calibrate([]string{"a.json", "b.json"}, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(cals) != 2 || !near(cals[0].InService, 1, 1e-9) || !near(cals[1].InService, 8, 1e-9) {
		t.Fatalf("calibrations %+v, want loads 1 and 8", cals)
	}
	for _, c := range cals {
		if !near(c.ModelX, c.MeasuredX, 1e-6) {
			t.Errorf("%s: model %v/s, measured %v/s", c.Path, c.ModelX, c.MeasuredX)
		}
	}
	cpu := n.Stations[0]
	if cpu.Name != StationCPU || cpu.Law == nil || cpu.Law.Form != Falling || !near(cpu.Law.At(1), 0.05e-3, 1e-9) || !near(cpu.Law.At(8), 0.04e-3, 1e-9) {
		t.Errorf("cpu station %+v law %+v", cpu, cpu.Law)
	}
	lat := n.Stations[1]
	if lat.Name != StationLatency || lat.Law == nil || lat.Law.Form != Rising || !strings.Contains(lat.Source, "load-dependent") {
		t.Errorf("latency station %+v", lat)
	}
	if !strings.Contains(strings.Join(ex.Notes, "\n"), "fitted between 1.00 and 8.00 operations in service") {
		t.Errorf("notes %q do not give the loads the laws were fitted over", ex.Notes)
	}
	if !near(ex.ModelX, 10000, 1e-6) {
		t.Errorf("model at the first run: %v/s, want 10000", ex.ModelX)
	}
	pts, err := Solve(n, []int{4})
	if err != nil || pts[0].X <= 10000 || pts[0].X >= 16000 {
		t.Errorf("at 4 clients: %+v %v, want between the two runs", pts, err)
	}
}

func TestCalibrateRefuses(t *testing.T) {
	t.Parallel()
	a := closedRun(1, 10000, 0.05e-3)
	other := closedRun(8, 16000, 0.04e-3)
	other.Workload = "rubis"
	pg := closedRun(8, 16000, 0.04e-3)
	pg.Environment.DB = "postgres 15"
	threads := closedRun(8, 16000, 0.04e-3)
	threads.Config.ServerThreads = 4
	cmp := closedRun(8, 16000, 0.04e-3)
	cmp.Config.CommitOption = container.OptionA
	old := closedRun(8, 16000, 0.04e-3)
	old.Resources = nil
	for _, tt := range []struct {
		name string
		runs []*result.Result
		want string
	}{
		{"one run", []*result.Result{a}, "one load only"},
		{"same load", []*result.Result{a, closedRun(1, 11000, 0.05e-3)}, "two different loads"},
		{"workload", []*result.Result{a, other}, "workloads stockonline and rubis"},
		{"database", []*result.Result{a, pg}, `databases "sqlite 3" and "postgres 15"`},
		{"threads", []*result.Result{a, threads}, "10 and 4 server threads"},
		{"commit option", []*result.Result{a, cmp}, "commit option"},
		{"no resources", []*result.Result{a, old}, "b.json: the result has no CPU time"},
	} {
		_, _, _, err := Calibrate([]string{"a.json", "b.json"}, tt.runs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want it to say %q", tt.name, err, tt.want)
		}
		if tt.name == "one run" && !errors.Is(err, ErrOneLoad) {
			t.Errorf("one run: %v, want ErrOneLoad", err)
		}
	}
}

func TestSpreadOverAppServers(t *testing.T) {
	t.Parallel()
	// The run of measured(): 4000 operations in 20 s, 5 server threads;
	// tierbench used 4 s of CPU and PostgreSQL 12 s on the same 2 CPUs
	// (4 ms per operation: 1 ms app, 3 ms database).
	r := measured(&result.Resources{SteadyS: 20, AppCPUS: 4, DBCPUS: 12, DBCPUSource: result.DBCPUProc, AppCPUs: 2, DBCPUs: 2, SharedCPUs: true})
	r.Summary.Operations = 4000
	r.Database.Commits = 6000
	n, _, err := FromResult(r)
	if err != nil {
		t.Fatal(err)
	}
	got, notes, err := Spread(n, r, Cluster{Servers: 2, InvalidationCost: 300 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	// Two app servers of 2 CPUs, each 0.5 ms per operation (every
	// operation visits one); the database 3 ms on 2 CPUs of its own; the
	// latency as fitted; 1.5 commits per operation × 0.3 ms waited.
	want := []Station{
		{Name: "app 1 cpu", Kind: Multi, Servers: 2, Demand: 0.5e-3},
		{Name: "app 2 cpu", Kind: Multi, Servers: 2, Demand: 0.5e-3},
		{Name: StationDBCPU, Kind: Multi, Servers: 2, Demand: 3e-3},
		{Name: StationLatency, Kind: Delay, Demand: n.Stations[1].Demand},
		{Name: StationInvalidation, Kind: Delay, Demand: 0.45e-3},
	}
	if len(got.Stations) != len(want) {
		t.Fatalf("stations %+v, want %d", got.Stations, len(want))
	}
	for i, w := range want {
		s := got.Stations[i]
		if s.Name != w.Name || s.Kind != w.Kind || s.Servers != w.Servers || !near(s.Demand, w.Demand, 1e-9) {
			t.Errorf("station %d: %+v, want %+v", i, s, w)
		}
	}
	if got.Admission != 10 || !strings.Contains(strings.Join(notes, "\n"), "shared 2 CPUs") {
		t.Errorf("admission %d, notes %q; want 10 threads and a note on the placement", got.Admission, notes)
	}
	// One server: no invalidation station, the same demands split in two
	// stations of their own.
	one, _, _ := Spread(n, r, Cluster{Servers: 1, InvalidationCost: time.Millisecond})
	if len(one.Stations) != 3 || one.Stations[0].Name != "app 1 cpu" || !near(one.Stations[0].Demand, 1e-3, 1e-9) {
		t.Errorf("one app server: %+v", one.Stations)
	}
	// On one host the CPU station stays the run's.
	same, _, _ := Spread(n, r, Cluster{Servers: 4, SameHost: true})
	if same.Stations[0].Name != StationCPU || !near(same.Stations[0].Demand, 4e-3, 1e-9) || same.Admission != 20 || same.Stations[2].Demand != 0 {
		t.Errorf("same host: %+v admission %d", same.Stations, same.Admission)
	}
	for _, bad := range []Cluster{{Servers: 0}, {Servers: MaxAppServers + 1}, {Servers: 2, InvalidationCost: -1}} {
		if _, _, err := Spread(n, r, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	r.Config.AppServers = 2
	if _, _, err := Spread(n, r, Cluster{Servers: 4}); err == nil || !strings.Contains(err.Error(), "the run had 2 app servers") {
		t.Errorf("a run of 2 app servers: %v", err)
	}
}

func TestSpreadKeepsTheLaws(t *testing.T) {
	t.Parallel()
	// A falling CPU law spread over 2 servers: each server's demand at a
	// load of 8 is half the run's at 4 (each sees 4 operations).
	runs := []*result.Result{closedRun(1, 10000, 0.05e-3), closedRun(8, 16000, 0.04e-3)}
	n, _, _, err := Calibrate([]string{"a", "b"}, runs)
	if err != nil {
		t.Fatal(err)
	}
	got, notes, err := Spread(n, runs[0], Cluster{Servers: 2})
	if err != nil {
		t.Fatal(err)
	}
	app := got.Stations[0]
	if app.Law == nil || !near(app.Law.At(8), n.Stations[0].Law.At(4)/2, 1e-9) || !strings.Contains(strings.Join(notes, "\n"), "SQLite runs inside each app server") {
		t.Errorf("app station %+v law %+v, notes %q", app, app.Law, notes)
	}
	if _, err := Solve(got, []int{1, 16}); err != nil {
		t.Error(err)
	}
}
