package model

import (
	"fmt"
	"time"

	"github.com/tierbench/tierbench/internal/result"
)

// MaxAppServers bounds a cluster's app servers: as many as a run may
// start (config.MaxAppServers), where the exact solver has long given way
// to the approximate one.
const MaxAppServers = 32

// Cluster says how to spread a one-server network over several app
// servers.
type Cluster struct {
	// Servers is the app servers, 1 to MaxAppServers.
	Servers int
	// SameHost keeps every app server and the database on the run's CPUs
	// (one machine, as run --app-servers N on one host); otherwise each
	// app server has CPUs of its own, as many as the run's tierbench had,
	// and the database its own, as many as the run's server had.
	SameHost bool
	// InvalidationCost is the time a commit waits for its peers to drop
	// what it wrote (--coherence invalidate), with more than one server.
	InvalidationCost time.Duration
	// Fit, when set, grows every station's demand per operation with the
	// servers as runs on several measured it (FitServers), before the
	// app servers' CPU demand is split among them.
	Fit *ServerFit
}

// Names of the stations Spread builds.
const (
	StationInvalidation = "invalidation"
)

// AppStation names app server i's CPUs (from 1).
func AppStation(i int) string { return fmt.Sprintf("app %d cpu", i) }

// Spread is the network of c.Servers app servers in front of the
// database of the run r whose network is n (FromResult's or
// Calibrate's): the clients spread evenly (round-robin), so each
// operation visits one app server, whose CPU demand is the run's
// tierbench CPU over the servers; the database's CPU is one station
// shared by all; the latency stays a delay; each server has the run's
// server threads; and each commit waits InvalidationCost for its peers,
// a delay. It returns notes on what the spread assumes.
func Spread(n Network, r *result.Result, c Cluster) (Network, []string, error) {
	if c.Servers < 1 || c.Servers > MaxAppServers {
		return Network{}, nil, fmt.Errorf("--app-servers %d: allowed: 1 to %d", c.Servers, MaxAppServers)
	}
	if c.InvalidationCost < 0 {
		return Network{}, nil, fmt.Errorf("--invalidation-cost %v: must be 0 or more", c.InvalidationCost)
	}
	res := r.Resources
	if res == nil {
		return Network{}, nil, ErrNoResources
	}
	if r.Config.AppServers > 1 {
		return Network{}, nil, fmt.Errorf("the run had %d app servers: --app-servers predicts from a run of one (its CPU demand is one server's)", r.Config.AppServers)
	}
	var notes []string
	if c.Fit != nil {
		grown, note, err := c.Fit.grow(n, c.Servers)
		if err != nil {
			return Network{}, nil, err
		}
		n, notes = grown, append(notes, note)
	}
	out := n
	out.Stations = nil
	out.Admission = n.Admission * c.Servers
	if n.Admission > 0 {
		out.AdmissionSource = fmt.Sprintf("--server-threads %d on each of %d app servers, as one pool of %d (the clients spread evenly)", n.Admission, c.Servers, out.Admission)
	}
	perServer := 1 / float64(c.Servers)
	for _, s := range n.Stations {
		switch {
		case s.Name == StationLatency:
			out.Stations = append(out.Stations, s)
		case c.SameHost && (s.Name == StationCPU || s.Name == StationAppCPU || s.Name == StationDBCPU):
			// One machine: the app servers' CPU is the run's, spread
			// over more processes that share the same cores.
			out.Stations = append(out.Stations, s)
		case s.Name == StationDBCPU:
			out.Stations = append(out.Stations, s)
		case s.Name == StationAppCPU || (s.Name == StationCPU && res.DBCPUSource != result.DBCPUProc):
			out.Stations = append(out.Stations, appStations(s, 1, perServer, c.Servers, max(res.AppCPUs, 1))...)
		case s.Name == StationCPU:
			// tierbench and the database shared the run's CPUs: split
			// the demand by their measured CPU times.
			total := res.AppCPUS + res.DBCPUS
			if total <= 0 {
				return Network{}, nil, fmt.Errorf("the run measured no CPU time to split between the app server and the database")
			}
			app := res.AppCPUS / total
			out.Stations = append(out.Stations, appStations(s, app, perServer, c.Servers, max(res.AppCPUs, 1))...)
			db := s
			db.Name, db.Servers, db.Demand = StationDBCPU, max(res.DBCPUs, 1), s.Demand*(1-app)
			if s.Law != nil {
				l := s.Law.Scale(1 - app)
				db.Law = &l
			}
			db.Source = fmt.Sprintf("the database server's share of the run's CPU time (%.0f%%), on %s of its own", 100*(1-app), cpus(db.Servers))
			out.Stations = append(out.Stations, db)
			notes = append(notes, fmt.Sprintf("the run's tierbench and database shared %s; with --app-servers each app server has %s of its own and the database %s of its own (--same-host keeps them all on the run's)", cpus(res.AppCPUs), cpus(max(res.AppCPUs, 1)), cpus(max(res.DBCPUs, 1))))
		default:
			out.Stations = append(out.Stations, s)
		}
	}
	if res.DBCPUSource == result.DBCPUInProcess && c.Servers > 1 {
		notes = append(notes, "SQLite runs inside each app server: its work is spread with them; its file lock (one writer at a time across all of them) is not modelled")
	}
	if c.Servers > 1 {
		commits := 1.0
		source := "one commit per operation (the run counted none)"
		if ops := r.Summary.Operations; ops > 0 && r.Database.Commits > 0 {
			commits = float64(r.Database.Commits) / float64(ops)
			source = fmt.Sprintf("%.2f commits per operation (the run's %d / %d)", commits, r.Database.Commits, ops)
		}
		inv := Station{Name: StationInvalidation, Kind: Delay, Demand: commits * c.InvalidationCost.Seconds(),
			Source: fmt.Sprintf("each commit waits --invalidation-cost %v for its peers' acknowledgements; %s", c.InvalidationCost, source)}
		switch {
		case c.InvalidationCost == 0 && c.Fit != nil:
			inv.Source = "--invalidation-cost 0 (the default): the waits for peers the runs on several servers had are in their fitted demands"
		case c.InvalidationCost == 0:
			inv.Source = "--invalidation-cost 0 (the default): commits wait for no peer, as under --coherence none or shared, or an invalidation free of cost"
		case c.Fit != nil:
			inv.Source += ", on top of the waits the runs on several servers had (in their fitted demands)"
		}
		out.Stations = append(out.Stations, inv)
	}
	return out, notes, nil
}

// appStations are the app servers' CPU stations: each gets share of s's
// demand divided among the servers, on cpus CPUs of its own.
func appStations(s Station, share, perServer float64, servers, cpus int) []Station {
	out := make([]Station, servers)
	for i := range out {
		a := s
		a.Name, a.Kind, a.Servers = AppStation(i+1), Multi, cpus
		a.Demand = s.Demand * share * perServer
		if s.Law != nil {
			l := s.Law.Scale(share * perServer)
			l.Spread = servers
			a.Law = &l
		}
		a.Source = fmt.Sprintf("1/%d of the app servers' CPU demand (%s per operation)", servers, ms(s.Demand*share))
		out[i] = a
	}
	return out
}
