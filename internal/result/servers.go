package result

import (
	"fmt"
	"io"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Server is one app server of a run over several (--app-servers N, or a
// drive of several --target URLs): what it served and its own container
// counters, which the result's container section sums.
type Server struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// PID is the process holding its container (absent for a drive's
	// target, started elsewhere).
	PID int `json:"pid,omitempty"`
	// Served is what it answered: the operations its terminals completed
	// (successes and business exceptions) when the driver spread them,
	// or the requests haproxy sent it (Counted says which).
	Served  int64  `json:"served"`
	Counted string `json:"counted"`
	// Share is Served over every server's.
	Share float64 `json:"share"`
	// Died: how it died under the run, and its last output; the run went
	// on with the others and its counters after its start are lost.
	Died      string                 `json:"died,omitempty"`
	Container map[string]EntityStats `json:"container,omitempty"`
	// CountersPartial: it gave no counters at the end (it died), so
	// Container is from its last reading, read every second while the
	// run went on: partial, and in the result's container sum as such.
	CountersPartial bool `json:"counters_partial,omitempty"`
	// Replicas are its read replicas' counters (--replica): the reads it
	// routed to each, the violations and causal waits of its calls, which
	// the result's database.replicas sums; the lag is the run's, there.
	Replicas *store.ReplicaSummary `json:"replicas,omitempty"`
}

// Balancer is the load balancer in front of the app servers.
type Balancer struct {
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid"`
	URL     string `json:"url"`
	// Probe is what it costs a request, measured before the run.
	Probe BalancerProbe `json:"probe"`
}

// BalancerProbe is the balancer's cost per request: the same empty
// request (a site's health check, a business tier's Ping) sent Requests
// times direct to the first server and as many through the balancer,
// alternately, before the run; CostP50Us is the difference of the
// medians, in microseconds.
type BalancerProbe struct {
	Requests     int     `json:"requests"`
	DirectP50Us  float64 `json:"direct_p50_us"`
	ThroughP50Us float64 `json:"through_p50_us"`
	CostP50Us    float64 `json:"cost_p50_us"`
}

// ServerInputs are what a run knows of one app server, for Build.
type ServerInputs struct {
	Name, URL string
	PID       int
	Served    int64
	Counted   string
	Died      string
	Entities  []workload.EntityStats
	// Partial: Entities are from its last reading before it died.
	Partial bool
	// Replicas: its read replicas' counters over the same readings.
	Replicas *store.ReplicaSummary
}

// buildServers is each server apart, with its share.
func buildServers(in []ServerInputs) []Server {
	var total int64
	for _, s := range in {
		total += s.Served
	}
	var out []Server
	for _, s := range in {
		sv := Server{Name: s.Name, URL: s.URL, PID: s.PID, Served: s.Served, Counted: s.Counted, Died: s.Died, CountersPartial: s.Partial, Replicas: s.Replicas}
		if total > 0 {
			sv.Share = round(float64(s.Served)/float64(total), 4)
		}
		if len(s.Entities) > 0 {
			sv.Container, _ = containerOf(s.Entities)
		}
		out = append(out, sv)
	}
	return out
}

// writeServers prints a line per app server of a run over several, and
// the balancer in front of them.
func writeServers(w io.Writer, r *Result) {
	if len(r.Servers) < 2 {
		return
	}
	if b := r.Balancer; b != nil {
		fmt.Fprintf(w, "balancer: %s (pid %d) at %s, least connections; a request through it cost %.0f µs more at the median than direct (%.0f against %.0f µs, %d probes each way before the run)\n",
			b.Kind, b.PID, b.URL, b.Probe.CostP50Us, b.Probe.ThroughP50Us, b.Probe.DirectP50Us, b.Probe.Requests)
	}
	sum := ""
	if len(r.Container) > 0 {
		sum = ", the container counters above their sum"
	}
	fmt.Fprintf(w, "app servers: %d%s\n", len(r.Servers), sum)
	for _, s := range r.Servers {
		var finds, hits int64
		for _, e := range s.Container {
			finds, hits = finds+e.Finds, hits+e.CacheHits
		}
		pid := "-" // a drive's target: not its process
		if s.PID != 0 {
			pid = fmt.Sprint(s.PID)
		}
		fmt.Fprintf(w, "  %-13s %-28s pid %-7s %9d %s (%5.1f%%)", s.Name, s.URL, pid, s.Served, s.Counted, 100*s.Share)
		if s.Container != nil {
			fmt.Fprintf(w, ", %d finds, %d cache hits", finds, hits)
			if s.CountersPartial {
				fmt.Fprint(w, " (partial: to its last reading before it died)")
			}
		}
		if rs := s.Replicas; rs != nil {
			t := rs.Total()
			fmt.Fprintf(w, ", %d reads on replicas, %d on the primary, %d read-your-writes violations", t.Reads, rs.PrimaryReads, t.ReadYourWritesViolations)
		}
		if s.Died != "" {
			fmt.Fprintf(w, "; DIED: %s", s.Died)
		}
		fmt.Fprintln(w)
	}
}
