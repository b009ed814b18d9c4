package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tierbench/tierbench/internal/result"
)

// wantOtherClients is what a load-dependent model needs of its runs.
const wantOtherClients = "a load-dependent model needs runs of one configuration at different clients"

// ErrOneLoad: a single result gives each demand at one load only. Its
// CPU time covers the whole steady state as one figure, so the fall of
// the demand within the run cannot be read from it.
var ErrOneLoad = errors.New("a single result measures its demands at one load only (its CPU time is one figure for the whole steady state): give a second result of the same configuration at another number of clients")

// Calibration is one run a load-dependent model was fitted to, and how
// the model reproduces it.
type Calibration struct {
	Path    string
	Clients int
	// InService is the mean number of operations in the middle tier
	// during the run (Little's law: throughput × mean service time): the
	// load k the laws are written in.
	InService float64
	// Demands are the run's demands per operation, by station.
	Demands []float64
	// MeasuredX is the run's throughput; ModelX the calibrated model's at
	// the run's clients.
	MeasuredX, ModelX float64
}

// Calibrate builds the network of the base run, as FromResult does, and
// makes every station's demand load-dependent: the law D(k) = Inf +
// Span/k is fitted, station by station, to the demands the runs measured
// (the CPU times per operation, and the latency each run's own network
// needed) at the loads they ran at. The runs must be of one
// configuration at different numbers of clients; paths name them in
// messages, base first.
func Calibrate(paths []string, runs []*result.Result) (Network, Explanation, []Calibration, error) {
	if len(runs) < 2 {
		return Network{}, Explanation{}, nil, ErrOneLoad
	}
	var nets []Network
	var cals []Calibration
	var ex Explanation
	for i, r := range runs {
		n, e, err := FromResult(r)
		if err != nil {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s: %w", paths[i], err)
		}
		if i == 0 {
			ex = e
		} else if err := sameShape(runs[0], nets[0], r, n, wantOtherClients); err != nil {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s and %s: %w", paths[0], paths[i], err)
		}
		if !e.Calibrated {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s: its network could not be fitted to it (%s)", paths[i], strings.Join(e.Notes, "; "))
		}
		service := r.TotalLatency.Mean / 1000
		if r.TotalService.Mean > 0 && r.TotalQueue.Mean > 0 {
			service = r.TotalService.Mean / 1000
		}
		c := Calibration{Path: paths[i], Clients: e.Clients, InService: max(e.MeasuredX*service, 1), MeasuredX: e.MeasuredX}
		for _, s := range n.Stations {
			c.Demands = append(c.Demands, s.Demand)
		}
		nets, cals = append(nets, n), append(cals, c)
	}
	out := nets[0]
	out.Stations = slices.Clone(out.Stations)
	for j := range out.Stations {
		pts := make([]LawPoint, len(cals))
		for i, c := range cals {
			pts[i] = LawPoint{K: c.InService, D: c.Demands[j]}
		}
		form := Falling
		if out.Stations[j].Kind == Delay {
			form = Rising
		}
		law, err := FitLaw(form, pts)
		if err != nil {
			return Network{}, Explanation{}, nil, err
		}
		s := &out.Stations[j]
		s.Law = &law
		loads := make([]string, len(cals))
		for i, c := range cals {
			loads[i] = fmt.Sprintf("%s at k = %.2f", ms(c.Demands[j]), c.InService)
		}
		s.Source = fmt.Sprintf("load-dependent, D(k) = %s with k operations in the middle tier, fitted to %s; at the run modelled: %s", law, strings.Join(loads, ", "), s.Source)
	}
	for i := range cals {
		pts, err := Solve(out, []int{cals[i].Clients})
		if err != nil {
			return Network{}, Explanation{}, nil, err
		}
		cals[i].ModelX = pts[0].X
	}
	ex.ModelX = cals[0].ModelX
	if pts, err := Solve(out, []int{ex.Clients}); err == nil {
		ex.ModelR = pts[0].R
	}
	lo, hi := cals[0].InService, cals[0].InService
	for _, c := range cals {
		lo, hi = min(lo, c.InService), max(hi, c.InService)
	}
	ex.Notes = append(ex.Notes, fmt.Sprintf("the laws are fitted between %.2f and %.2f operations in service; a prediction with more in service (more clients, more threads, more app servers) extrapolates them", lo, hi))
	// Another run's time between operations matters when it is a fair
	// part of the first's whole loop (think and response).
	z, loop := nets[0].Think, nets[0].Think+ex.MeasuredR
	for i, n := range nets[1:] {
		if math.Abs(n.Think-z) > 0.1*loop {
			ex.Notes = append(ex.Notes, fmt.Sprintf("%s's clients spent %s between operations, %s's %s: the model keeps the first's", paths[i+1], ms(n.Think), paths[0], ms(z)))
		}
	}
	return out, ex, cals, nil
}

// sameShape says why two runs cannot share one model: another workload,
// database or thread pool, or other stations. want says what the model
// needs of its runs, for the message.
func sameShape(a *result.Result, na Network, b *result.Result, nb Network, want string) error {
	switch {
	case a.Workload != b.Workload:
		return fmt.Errorf("workloads %s and %s: %s", a.Workload, b.Workload, want)
	case a.Environment.DB != b.Environment.DB || a.Environment.Target != b.Environment.Target:
		return fmt.Errorf("databases %q and %q: %s", a.Environment.DB+a.Environment.Target, b.Environment.DB+b.Environment.Target, want)
	case a.Config.Persistence != b.Config.Persistence || a.Config.CommitOption != b.Config.CommitOption || a.Config.Isolation != b.Config.Isolation || a.Config.ThinkTime != b.Config.ThinkTime:
		return fmt.Errorf("persistence, commit option, isolation or think time differ (%s %s %s %v, %s %s %s %v): %s",
			a.Config.Persistence, a.Config.CommitOption, a.Config.Isolation, a.Config.ThinkTime, b.Config.Persistence, b.Config.CommitOption, b.Config.Isolation, b.Config.ThinkTime, want)
	case perServer(na.Admission, a) != perServer(nb.Admission, b):
		return fmt.Errorf("%d and %d server threads per app server: %s", perServer(na.Admission, a), perServer(nb.Admission, b), want)
	case len(na.Stations) != len(nb.Stations):
		return fmt.Errorf("their CPUs were measured differently (%d and %d stations): %s", len(na.Stations), len(nb.Stations), want)
	}
	for i := range na.Stations {
		if sa, sb := na.Stations[i], nb.Stations[i]; sa.Name != sb.Name || sa.Servers != sb.Servers {
			return fmt.Errorf("stations %s (%d servers) and %s (%d servers): %s", sa.Name, sa.Servers, sb.Name, sb.Servers, want)
		}
	}
	return nil
}

// perServer is the server threads of each app server of r, whose
// network admits admission.
func perServer(admission int, r *result.Result) int {
	return admission / max(r.Config.AppServers, 1)
}
