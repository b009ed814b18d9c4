package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/result"
)

func TestFitServersReproducesEachRun(t *testing.T) {
	t.Parallel()
	// 16 clients on one server: 3000/s at 0.1 ms of CPU each; on two
	// (same host): 2400/s at 0.25 ms, each added process costing
	// 0.15 ms per operation. The line goes through both, so the model
	// on one host has both throughputs, and four servers extrapolate it.
	one := closedRun(16, 3000, 0.1e-3)
	two := closedRun(16, 2400, 0.25e-3)
	two.Config.AppServers = 2
	base, ex, fit, err := FitServers([]string{"one.json", "two.json"}, []*result.Result{one, two})
	if err != nil {
		t.Fatal(err)
	}
	if !near(ex.MeasuredX, 3000, 1e-9) || len(fit.Runs) != 2 || fit.Runs[1].Servers != 2 {
		t.Fatalf("explanation %+v, runs %+v", ex, fit.Runs)
	}
	if cpu := base.Stations[0]; cpu.Name != StationCPU || !near(fit.Slopes[0], 0.15e-3, 1e-9) {
		t.Errorf("cpu slope %v, want 0.15 ms (0.25 − 0.1)", fit.Slopes[0])
	}
	for _, r := range fit.Runs {
		if !near(r.ModelX, r.MeasuredX, 1e-6) {
			t.Errorf("%s (%d servers): model %v/s, measured %v/s", r.Path, r.Servers, r.ModelX, r.MeasuredX)
		}
	}
	four, notes, err := Spread(base, one, Cluster{Servers: 4, SameHost: true, Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	if got := four.Stations[0].Demand; !near(got, 0.1e-3+3*0.15e-3, 1e-9) {
		t.Errorf("cpu on 4 servers %v, want 0.55 ms (0.1 + 3 × 0.15)", got)
	}
	if four.Admission != 40 {
		t.Errorf("admission on 4 servers %d, want 4 × 10", four.Admission)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "4 servers extrapolates the line beyond the 2 measured") {
		t.Errorf("notes %q do not say 4 servers is an extrapolation", notes)
	}
	pts, err := Solve(four, []int{16})
	if err != nil || pts[0].X >= 2400 {
		t.Errorf("4 servers at 16 clients: %+v %v, want below 2 servers' 2400/s (each server costs more CPU than it adds)", pts, err)
	}
	// Apart (each server its own CPUs), the app servers' demand is split.
	apart, _, err := Spread(base, one, Cluster{Servers: 2, Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range apart.Stations {
		if strings.HasPrefix(s.Name, "app ") && !near(s.Demand, 0.25e-3/2, 1e-9) {
			t.Errorf("%s: %v, want half of 0.25 ms", s.Name, s.Demand)
		}
	}
}

func TestFitServersRefuses(t *testing.T) {
	t.Parallel()
	one := closedRun(16, 3000, 0.1e-3)
	two := func() *result.Result {
		r := closedRun(16, 2400, 0.25e-3)
		r.Config.AppServers = 2
		return r
	}
	otherClients := two()
	otherClients.Config.Clients, otherClients.Terminals[0].Count = 8, 8
	otherThreads := two()
	otherThreads.Config.ServerThreads = 4
	otherWorkload := two()
	otherWorkload.Workload = "rubis"
	for _, c := range []struct {
		name string
		runs []*result.Result
		want string
	}{
		{"one run", []*result.Result{one}, ErrNoServerRun.Error()},
		{"first on several", []*result.Result{two(), one}, "the first result must be a run on one app server"},
		{"two on one", []*result.Result{one, closedRun(16, 3000, 0.1e-3), two()}, "a run on one app server beside"},
		{"other clients", []*result.Result{one, otherClients}, "a per-server fit needs runs at the same clients"},
		{"other threads", []*result.Result{one, otherThreads}, "10 and 4 server threads per app server"},
		{"other workload", []*result.Result{one, otherWorkload}, "workloads stockonline and rubis"},
	} {
		paths := []string{"a.json", "b.json", "c.json"}[:len(c.runs)]
		_, _, _, err := FitServers(paths, c.runs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A load-dependent network cannot grow by a per-server fit.
	_, _, fit, err := FitServers([]string{"a", "b"}, []*result.Result{one, two()})
	if err != nil {
		t.Fatal(err)
	}
	ld, _, _, err := Calibrate([]string{"x", "y"}, []*result.Result{closedRun(1, 10000, 0.05e-3), closedRun(8, 16000, 0.04e-3)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Spread(ld, one, Cluster{Servers: 2, Fit: fit}); err == nil || errors.Is(err, ErrNoServerRun) || !strings.Contains(err.Error(), "cannot be combined") {
		t.Errorf("a fit over a load-dependent network: %v", err)
	}
}
