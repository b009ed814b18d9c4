package result

import (
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
