package result

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

// TestMixRule: the observed share of each state beside the table's
// stationary share; a run whose worst state is farther than the tolerance
// plus chance is invalid (Summary.Passed false, the verdict names the
// rule); a steady state shorter than a mean session is reported, warned
// of, not judged; images are counted apart from the operations.
func TestMixRule(t *testing.T) {
	ops := []string{"Home", "Browse", "ViewItem"}
	snapshot := func(counts ...int) metrics.Snapshot {
		rec := metrics.NewRecorder(ops, 1)
		for op, n := range counts {
			for range n {
				rec.Shard(0).Record(metrics.Sample{Op: op, Latency: time.Millisecond, Measured: true, Finished: true})
			}
		}
		return rec.Snapshot()
	}
	walk := &workload.WalkReport{Table: "t", Stationary: []float64{0.1, 0.3, 0.6}, MeanSession: 10,
		SessionThink: time.Second, TolerancePoints: 1, Causes: []string{"why"}, SorryBacks: 7, Resets: 3, NoIDBacks: 2, Retries: 1,
		Pages: 1000, Images: 4000, ImageErrors: 4, ImageBytes: 4096000, ImageTime: 2 * time.Second, ImageMax: 5 * time.Millisecond}
	// 100 browsers: a steady state of 10,000 requests is 10 sessions each.
	build := func(clients int, counts ...int) *Result {
		return Build(Inputs{Config: config.Run{MaxErrorRate: 1}, Info: workload.Info{Name: "rubis", Operations: ops, Metric: workload.Metric{Per: time.Minute}},
			Snapshot: snapshot(counts...), Window: time.Minute, Elapsed: time.Minute, Walk: walk, Groups: []workload.Group{{Clients: clients}}})
	}
	// 10,000 requests: chance at 3σ allows 0.9 points for Home (10%),
	// 1.37 for Browse, 1.47 for ViewItem, on top of the 1 point.
	tests := []struct {
		name    string
		clients int
		counts  []int
		passed  bool
		judged  bool
		worst   string
		points  float64
	}{
		{"as the table", 100, []int{1000, 3000, 6000}, true, true, "Home", 0},
		{"within tolerance and chance", 100, []int{1150, 2950, 5900}, true, true, "Home", 1.5},
		// Home 14%: 4 points over, allowed 1.9.
		{"forced to deviate", 100, []int{1400, 2800, 5800}, false, true, "Home", 4},
		// 1001 browsers: fewer requests each than a mean session.
		{"short steady state", 1001, []int{1400, 2800, 5800}, true, false, "Home", 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := build(tc.clients, tc.counts...)
			m := r.Mix
			if m == nil || r.Validity == nil || len(r.Validity.Rules) != 1 {
				t.Fatalf("mix %+v, validity %+v", m, r.Validity)
			}
			rule := r.Validity.Rules[0]
			if rule.Passed != tc.passed || r.Summary.Passed != tc.passed || r.Validity.MixPassed != tc.passed || m.Judged != tc.judged {
				t.Fatalf("rule %+v, summary passed %v, judged %v; want passed %v, judged %v", rule, r.Summary.Passed, m.Judged, tc.passed, tc.judged)
			}
			if m.Worst != tc.worst || math.Abs(m.WorstPoints-tc.points) > 1e-9 {
				t.Fatalf("worst %s %+.2f, want %s %+.2f", m.Worst, m.WorstPoints, tc.worst, tc.points)
			}
			for i, s := range m.States {
				if s.Name != ops[i] || s.Count != int64(tc.counts[i]) || s.StationaryPct != 100*walk.Stationary[i] || s.ObservedPct != float64(tc.counts[i])/100 {
					t.Fatalf("state %d: %+v", i, s)
				}
			}
			if !tc.passed && !strings.Contains(r.Verdict(), "INVALID (mix: every state within 1 point") {
				t.Fatalf("verdict %q", r.Verdict())
			}
			// The short run warns it is short; the workload's causes come
			// with a worst state off by more than the tolerance.
			warnings := 0
			if !tc.judged {
				warnings++
			}
			if math.Abs(tc.points) > 1 {
				warnings++
			}
			if short := !tc.judged; len(m.Warnings) != warnings || short != strings.HasPrefix(rule.Detail, "not judged") {
				t.Fatalf("warnings %q, rule %q", m.Warnings, rule.Detail)
			}
			if r.Summary.Operations != 10000 {
				t.Fatalf("%d operations: images must not count", r.Summary.Operations)
			}
		})
	}
	r := build(100, 1400, 2800, 5800)
	m := r.Mix
	if m.SorryBacks != 7 || m.SessionResets != 3 || m.NoIDBacks != 2 || m.PageRetries != 1 || m.MeanSessionS != 10 {
		t.Fatalf("counts %+v", m)
	}
	if im := m.Images; im == nil || *im != (Images{Requests: 4000, Failed: 4, Bytes: 4096000, PerPage: 4, MeanMs: 0.5, MaxMs: 5}) {
		t.Fatalf("images %+v", m.Images)
	}
	var out bytes.Buffer
	WriteSummary(&out, r)
	for _, want := range []string{"mix (t): worst state Home 14.00% against the table's stationary 10.00% (+4.00 points); Sorry-backs 7",
		"session resets 3", "images: 4000 fetched beside the pages (4.00 per page), 4 failed", "FAIL mix: every state within 1 point"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("summary lacks %q:\n%s", want, out.String())
		}
	}
	// The farthest state is not always the one beyond its allowance: a
	// rare state has less room for chance.
	walk.Stationary = []float64{0.01, 0.39, 0.6}
	r = build(100, 250, 3920, 5830) // Home +1.5 (allowed 1.3), ViewItem −1.7 (allowed 2.47)
	if m := r.Mix; m.Worst != "ViewItem" || r.Validity.Passed || !strings.Contains(r.Validity.Rules[0].Detail, "beyond its allowance: Home +1.50 points, allowed 1.30") {
		t.Fatalf("worst %s %+.2f, rule %+v", m.Worst, m.WorstPoints, r.Validity.Rules[0])
	}
	// A workload without a walk has no mix section.
	if r := Build(Inputs{Info: workload.Info{Operations: ops}, Snapshot: snapshot(1, 1, 1), Window: time.Minute}); r.Mix != nil || r.Validity != nil {
		t.Fatalf("mix %+v without a walk", r.Mix)
	}
}
