package result

import (
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

func TestValidityRules(t *testing.T) {
	// counts[op] samples of latency lat[op] each.
	snapshot := func(counts []int, lat []time.Duration) metrics.Snapshot {
		rec := metrics.NewRecorder([]string{"A", "B"}, 1)
		for op, n := range counts {
			for i := 0; i < n; i++ {
				rec.Shard(0).Record(metrics.Sample{Op: op, Latency: lat[op], Measured: true})
			}
		}
		return rec.Snapshot()
	}
	rules := &workload.Validity{
		ResponseTimes: []workload.ResponseTime{{Ops: []string{"A", "B"}, Quantile: 0.9, Max: 2 * time.Second}},
		Mix:           []workload.Share{{Ops: []string{"A"}, Percent: 50}, {Ops: []string{"B"}, Percent: 50}},
		MixTolerance:  0.05,
	}
	tests := []struct {
		name   string
		counts []int
		lat    []time.Duration
		passed []bool // A p90, B p90, A share, B share
	}{
		{"all hold", []int{500, 500}, []time.Duration{time.Second, time.Second}, []bool{true, true, true, true}},
		{"slow B", []int{500, 500}, []time.Duration{time.Second, 3 * time.Second}, []bool{true, false, true, true}},
		// 51.2% and 48.8%: 2.4% off 50%, inside 5% relative.
		{"mix just inside", []int{512, 488}, []time.Duration{time.Second, time.Second}, []bool{true, true, true, true}},
		// 53% and 47%: 6% off, outside.
		{"mix outside", []int{530, 470}, []time.Duration{time.Second, time.Second}, []bool{true, true, false, false}},
		{"none of B", []int{10, 0}, []time.Duration{time.Second, time.Second}, []bool{true, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(rules, snapshot(tt.counts, tt.lat))
			if len(v.Rules) != len(tt.passed) {
				t.Fatalf("%d rules, want %d", len(v.Rules), len(tt.passed))
			}
			all := true
			for i, want := range tt.passed {
				if v.Rules[i].Passed != want {
					t.Errorf("rule %q passed=%v, want %v (%s)", v.Rules[i].Name, v.Rules[i].Passed, want, v.Rules[i].Detail)
				}
				all = all && want
			}
			if v.Passed != all {
				t.Errorf("verdict %v, want %v", v.Passed, all)
			}
			rt, mix := tt.passed[0] && tt.passed[1], tt.passed[2] && tt.passed[3]
			if v.ResponseTimesPassed != rt || v.MixPassed != mix {
				t.Errorf("response times passed=%v, mix passed=%v; want %v, %v", v.ResponseTimesPassed, v.MixPassed, rt, mix)
			}
		})
	}
}

// A mix rule's tolerance is relative, and its name says so with the range
// it allows: ECperf's 21.28% OrderStatus failed a rule shown as
// "20% ± 5%", which reads as 15..25%.
func TestMixRuleNamesTheRangeItApplies(t *testing.T) {
	rec := metrics.NewRecorder([]string{"NewOrder", "OrderStatus"}, 1)
	for op, n := range []int{7872, 2128} {
		for range n {
			rec.Shard(0).Record(metrics.Sample{Op: op, Latency: time.Millisecond, Measured: true})
		}
	}
	v := judge(&workload.Validity{
		Mix:          []workload.Share{{Ops: []string{"NewOrder"}, Percent: 80}, {Ops: []string{"OrderStatus"}, Percent: 20}},
		MixTolerance: 0.05,
	}, rec.Snapshot())
	got := v.Rules[1]
	if got.Name != "mix OrderStatus 20% ± 5% relative (19–21%)" || got.Passed || !strings.HasPrefix(got.Detail, "21.28% of 10000") {
		t.Errorf("rule %q passed=%v (%s); want mix OrderStatus 20%% ± 5%% relative (19–21%%), failed at 21.28%%", got.Name, got.Passed, got.Detail)
	}
}

// The README's 20-second ECperf run has 343 order-entry transactions:
// chance alone spreads a 20% share by ±10.8% at 1σ, so its 21.28% cannot
// tell a wrong mix from luck and is not judged; a share chance cannot
// explain still fails.
func TestMixRuleIsNotJudgedOnTooFewOperations(t *testing.T) {
	judgeMix := func(counts ...int) *Validity {
		rec := metrics.NewRecorder([]string{"NewOrder", "OrderStatus"}, 1)
		for op, n := range counts {
			for range n {
				rec.Shard(0).Record(metrics.Sample{Op: op, Latency: time.Millisecond, Measured: true})
			}
		}
		return judge(&workload.Validity{
			Mix:          []workload.Share{{Ops: []string{"NewOrder"}, Percent: 80}, {Ops: []string{"OrderStatus"}, Percent: 20}},
			MixTolerance: 0.05,
		}, rec.Snapshot())
	}
	short := judgeMix(270, 73) // 21.28% of 343
	if r := short.Rules[1]; !r.Passed || !short.Passed || r.Detail != "not judged: 21.28% of 343 (+6.4% relative), but chance alone spreads ±10.8% at 1σ, more than the tolerance; judging it needs 1600 operations" {
		t.Errorf("short run: %q passed=%v (%s), run passed %v", r.Name, r.Passed, r.Detail, short.Passed)
	}
	// 30% of 343: +50%, beyond 3σ (32%).
	if off := judgeMix(240, 103); off.Rules[1].Passed || off.Passed {
		t.Errorf("a share chance cannot explain: %s passed", off.Rules[1].Detail)
	}
}

func TestVerdictNamesWhatFailed(t *testing.T) {
	ok := workload.Check{Name: "rows-match", Passed: true}
	bad := workload.Check{Name: "no-negatives"}
	tests := []struct {
		name        string
		checks      []workload.Check
		validity    *Validity
		interrupted bool
		want        string
	}{
		{"all held", []workload.Check{ok}, &Validity{Passed: true, Rules: []workload.Check{ok}}, false, "passed"},
		{"no rules", []workload.Check{ok}, nil, false, "passed"},
		{"a check", []workload.Check{ok, bad}, nil, false, "CHECKS FAILED (no-negatives)"},
		{"a rule", []workload.Check{ok}, &Validity{Rules: []workload.Check{{Name: "A p90 ≤ 2s"}, {Name: "mix A 50% ± 5%", Passed: true}}}, false, "INVALID (A p90 ≤ 2s)"},
		{"everything", []workload.Check{bad}, &Validity{Rules: []workload.Check{{Name: "mix A 50% ± 5%"}}}, true,
			"CHECKS FAILED (no-negatives); INVALID (mix A 50% ± 5%); INTERRUPTED"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Checks: tc.checks, Validity: tc.validity}
			r.Summary.Interrupted = tc.interrupted
			if got := r.Verdict(); got != tc.want {
				t.Errorf("Verdict() = %q, want %q", got, tc.want)
			}
		})
	}
}
