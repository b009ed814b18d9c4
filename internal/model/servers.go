package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tierbench/tierbench/internal/result"
)

// ServerRun is one run a per-server fit used, and how the fitted model
// reproduces it.
type ServerRun struct {
	Path    string
	Servers int
	Clients int
	// Demands are the run's demands per operation, by station of the
	// base network.
	Demands []float64
	// MeasuredX is the run's throughput; ModelX the fitted model's at
	// the run's servers and clients (on the run's host).
	MeasuredX, ModelX float64
}

// ServerFit is how an operation's demands grow with each app server
// beyond the first, more than splitting one server's work among them
// explains: a second process has its own runtime, pools, connections and
// hop from the driver, and on one host it takes CPU from the others.
// Slopes are by station of the base network: station j's demand on N
// servers is its demand on one plus (N − 1) × Slopes[j].
type ServerFit struct {
	Slopes []float64
	Runs   []ServerRun
}

// wantOtherServers is what a per-server fit needs of its runs.
const wantOtherServers = "a per-server fit needs runs of one configuration at the same clients on different numbers of app servers"

// ErrNoServerRun: a per-server fit needs a run on several app servers.
var ErrNoServerRun = errors.New("a per-server fit needs a run on one app server and a run of the same configuration on several (tierbench run --app-servers N)")

// FitServers builds the network of the base run (one app server), as
// FromResult does, and fits each station's demand per operation as a
// line in the number of app servers, D(N) = D(1) + (N − 1)·s, least
// squares through the base run's demand, to the other runs: the same
// configuration at the same clients on several app servers, on the
// base's host. paths name the runs in messages, base first.
func FitServers(paths []string, runs []*result.Result) (Network, Explanation, *ServerFit, error) {
	if len(runs) < 2 {
		return Network{}, Explanation{}, nil, ErrNoServerRun
	}
	if n := runs[0].Config.AppServers; n > 1 {
		return Network{}, Explanation{}, nil, fmt.Errorf("%s: the first result must be a run on one app server (it had %d): the fit starts from one server's demands", paths[0], n)
	}
	base, ex, err := FromResult(runs[0])
	if err != nil {
		return Network{}, Explanation{}, nil, fmt.Errorf("%s: %w", paths[0], err)
	}
	if !ex.Calibrated {
		return Network{}, Explanation{}, nil, fmt.Errorf("%s: its network could not be fitted to it (%s)", paths[0], strings.Join(ex.Notes, "; "))
	}
	fit := &ServerFit{Slopes: make([]float64, len(base.Stations))}
	fit.Runs = append(fit.Runs, ServerRun{Path: paths[0], Servers: 1, Clients: ex.Clients, Demands: demands(base), MeasuredX: ex.MeasuredX})
	num := make([]float64, len(base.Stations))
	den := 0.0
	for i, r := range runs[1:] {
		path := paths[i+1]
		servers := max(r.Config.AppServers, 1)
		if servers == 1 {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s: a run on one app server beside %s: a per-server fit takes one run on one server and runs on several (give runs at other clients without --app-servers runs to fit a load-dependent model)", path, paths[0])
		}
		n, e, err := FromResult(r)
		if err != nil {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s: %w", path, err)
		}
		if !e.Calibrated {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s: its network could not be fitted to it (%s)", path, strings.Join(e.Notes, "; "))
		}
		if e.Clients != ex.Clients {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s has %d clients and %s %d: a per-server fit needs runs at the same clients, so that only the app servers differ", path, e.Clients, paths[0], ex.Clients)
		}
		if err := sameShape(runs[0], base, r, n, wantOtherServers); err != nil {
			return Network{}, Explanation{}, nil, fmt.Errorf("%s and %s: %w", paths[0], path, err)
		}
		d := demands(n)
		for j := range d {
			num[j] += float64(servers-1) * (d[j] - base.Stations[j].Demand)
		}
		den += float64((servers - 1) * (servers - 1))
		fit.Runs = append(fit.Runs, ServerRun{Path: path, Servers: servers, Clients: e.Clients, Demands: d, MeasuredX: e.MeasuredX})
	}
	for j := range fit.Slopes {
		fit.Slopes[j] = num[j] / den
	}
	for i := range fit.Runs {
		run := &fit.Runs[i]
		net, _, err := Spread(base, runs[0], Cluster{Servers: run.Servers, SameHost: true, Fit: fit})
		if err != nil {
			return Network{}, Explanation{}, nil, err
		}
		pts, err := Solve(net, []int{run.Clients})
		if err != nil {
			return Network{}, Explanation{}, nil, err
		}
		run.ModelX = pts[0].X
	}
	return base, ex, fit, nil
}

func demands(n Network) []float64 {
	out := make([]float64, len(n.Stations))
	for i, s := range n.Stations {
		out[i] = s.Demand
	}
	return out
}

// grow is the one-server network n with each station's demand as the
// fit has it on servers app servers, and a note on what that assumes.
func (f *ServerFit) grow(n Network, servers int) (Network, string, error) {
	if len(f.Slopes) != len(n.Stations) {
		return Network{}, "", fmt.Errorf("a per-server fit of %d stations for a network of %d", len(f.Slopes), len(n.Stations))
	}
	if n.LoadDependent() {
		return Network{}, "", errors.New("a per-server fit and a load-dependent model cannot be combined: fit the servers at one number of clients")
	}
	out := n
	out.Stations = slices.Clone(n.Stations)
	for j := range out.Stations {
		s := &out.Stations[j]
		s.Demand = max(s.Demand+float64(servers-1)*f.Slopes[j], 0)
		if f.Slopes[j] != 0 {
			s.Source = fmt.Sprintf("%s per operation on %d app servers: %s on one %+.3f ms per server beyond the first (fitted to the runs on %s); on one: %s",
				ms(s.Demand), servers, ms(n.Stations[j].Demand), f.Slopes[j]*1000, f.serverCounts(), s.Source)
		}
	}
	lo, hi := 1, 1
	for _, r := range f.Runs {
		lo, hi = min(lo, r.Servers), max(hi, r.Servers)
	}
	note := fmt.Sprintf("every demand grows with the app servers as runs on %s servers measured it, a line per station (their CPU and hop per process, and on their host their contention); ", f.serverCounts())
	if servers > hi {
		note += fmt.Sprintf("%d servers extrapolates the line beyond the %d measured", servers, hi)
	} else {
		note += fmt.Sprintf("%d servers lies within the %d to %d measured", servers, lo, hi)
	}
	return out, note, nil
}

// serverCounts lists the fit's runs' app servers: "1, 2 and 4".
func (f *ServerFit) serverCounts() string {
	var parts []string
	for _, r := range f.Runs {
		parts = append(parts, fmt.Sprint(r.Servers))
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
