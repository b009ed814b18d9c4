package report

import (
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/result"
)

// A run over several app servers has a section with a row per server:
// its share, its own counters summed over its types, its death; one
// server has none.
func TestServersSection(t *testing.T) {
	r := &result.Result{Servers: []result.Server{
		{Name: "app server 1", URL: "http://a", PID: 11, Served: 300, Counted: "operations", Share: 0.75,
			Container: map[string]result.EntityStats{"Item": {Stats: container.Stats{Finds: 7, CacheHits: 2}}, "Bid": {Stats: container.Stats{Finds: 3}}}},
		{Name: "app server 2", URL: "http://b", PID: 12, Served: 100, Counted: "operations", Share: 0.25, Died: "the business tier (pid 12) died"},
	}, Balancer: &result.Balancer{Kind: "haproxy", PID: 9, URL: "http://lb", Probe: result.BalancerProbe{Requests: 200, CostP50Us: 90}}}
	sec, ok := serversSection(r)
	if !ok || len(sec.Tables) != 1 || len(sec.Tables[0].Rows) != 2 {
		t.Fatalf("section %+v, %v; want one table of two rows", sec, ok)
	}
	if got, want := strings.Join(sec.Tables[0].Rows[0], "|"), "app server 1|http://a|11|300 operations|75.0%|10|2|0|0|"; got != want {
		t.Errorf("row %q, want %q", got, want)
	}
	if died := sec.Tables[0].Rows[1][9]; !strings.Contains(died, "pid 12") {
		t.Errorf("the dead server's row says %q", died)
	}
	if !strings.Contains(strings.Join(sec.Notes, " "), "cost 90 µs more") {
		t.Errorf("notes %q do not give the balancer's cost", sec.Notes)
	}
	if _, ok := serversSection(&result.Result{Servers: r.Servers[:1]}); ok {
		t.Error("one server has a section")
	}
}
