package report

import (
	"fmt"

	"github.com/tierbench/tierbench/internal/result"
)

// serversSection is each app server of a run over several, and the
// balancer in front of them; false for one server.
func serversSection(r *result.Result) (section, bool) {
	if len(r.Servers) < 2 {
		return section{}, false
	}
	tab := table{Class: "servers", Header: []string{"server", "url", "pid", "served", "share", "finds", "cache hits", "loads", "stores", "died"}}
	for _, s := range r.Servers {
		var finds, hits, loads, stores int64
		for _, e := range s.Container {
			finds, hits, loads, stores = finds+e.Finds, hits+e.CacheHits, loads+e.Loads, stores+e.Stores
		}
		pid := ""
		if s.PID != 0 {
			pid = fmt.Sprint(s.PID)
		}
		tab.Rows = append(tab.Rows, []string{s.Name, s.URL, pid, grouped(s.Served) + " " + s.Counted, share(s.Share),
			grouped(finds), grouped(hits), grouped(loads), grouped(stores), s.Died})
	}
	sec := section{ID: "servers", Title: "App servers", Tables: []table{tab},
		Notes: []string{fmt.Sprintf("%d app servers over one database; the container and database counters above are their sum.", len(r.Servers))}}
	if b := r.Balancer; b != nil {
		sec.Notes = append(sec.Notes, fmt.Sprintf("Balancer: %s (pid %d) at %s, least connections: a request through it cost %.0f µs more at the median than direct (%.0f against %.0f µs, %d probes each way before the run).",
			b.Kind, b.PID, b.URL, b.Probe.CostP50Us, b.Probe.ThroughP50Us, b.Probe.DirectP50Us, b.Probe.Requests))
	}
	return sec, true
}
