package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Percentiles of a known distribution (1..100000 µs, each once) must match
// the exact order statistics within HDR's 3-significant-digit precision.
func TestHistogramPercentilesOfKnownDistribution(t *testing.T) {
	h := NewHistogram()
	const n = 100_000
	for i := 1; i <= n; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	if h.Count() != n {
		t.Fatalf("count = %d, want %d", h.Count(), n)
	}
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		want := q * n // the q-quantile of 1..n in µs
		got := float64(h.Quantile(q) / time.Microsecond)
		if rel := math.Abs(got-want) / want; rel > 0.001 {
			t.Errorf("p%v = %v µs, want %v µs ± 0.1%% (off by %.4f%%)", q*100, got, want, rel*100)
		}
	}
	s := h.Summary()
	if math.Abs(s.Mean-50.0005) > 0.05 {
		t.Errorf("mean = %v ms, want 50.0005 ms", s.Mean)
	}
	if math.Abs(s.Max-100) > 0.1 {
		t.Errorf("max = %v ms, want 100 ms", s.Max)
	}
}

func TestHistogramClampsOutOfRange(t *testing.T) {
	h := NewHistogram()
	h.Record(2 * time.Hour)
	h.Record(-time.Second)
	if h.Count() != 2 {
		t.Fatalf("count = %d, want 2: out-of-range samples must be counted, not dropped", h.Count())
	}
	if got := h.Quantile(1); got < 59*time.Minute {
		t.Errorf("max = %v, want clamped to about an hour", got)
	}
}

// Merging shards must give exactly the histogram of all samples.
func TestMergedHistogramsEqualHistogramOfUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	union := NewHistogram()
	parts := []*Histogram{NewHistogram(), NewHistogram(), NewHistogram()}
	for i := 0; i < 50_000; i++ {
		// Log-uniform from 1 µs to about 10 s, to fill many buckets.
		d := time.Duration(math.Exp(rng.Float64()*math.Log(1e10))) * time.Nanosecond
		union.Record(d)
		parts[rng.IntN(len(parts))].Record(d)
	}
	merged := NewHistogram()
	for _, p := range parts {
		merged.Merge(p)
	}
	if !merged.Equal(union) {
		t.Fatal("merged histogram differs from the histogram of the union")
	}
	if merged.Summary() != union.Summary() {
		t.Errorf("summaries differ: %+v vs %+v", merged.Summary(), union.Summary())
	}
}

func TestRecorderSeparatesOutcomesPhasesAndSeconds(t *testing.T) {
	r := NewRecorder([]string{"a", "b"}, 3)
	samples := []Sample{
		{Op: 0, Outcome: Success, At: 100 * time.Millisecond, Latency: time.Millisecond, Service: time.Millisecond, Measured: false},
		{Op: 0, Outcome: Success, At: 1100 * time.Millisecond, Latency: 3 * time.Millisecond, Queue: 2 * time.Millisecond, Service: time.Millisecond, Split: true, Measured: true, Finished: true},
		{Op: 0, Outcome: Business, At: 1200 * time.Millisecond, Latency: time.Millisecond, Service: time.Millisecond, Measured: true, Finished: true, Retries: 2},
		{Op: 1, Outcome: Error, At: 2500 * time.Millisecond, Latency: time.Second, Service: time.Second, Measured: true, Finished: true},
		// Meant to start in the steady state, finished after it: latency
		// counts it, throughput does not.
		{Op: 1, Outcome: Success, At: 2600 * time.Millisecond, Latency: 3 * time.Millisecond, Service: 3 * time.Millisecond, Measured: true},
	}
	for i, s := range samples {
		r.Shard(i).Record(s)
	}
	if ops, errs := r.Completed(); ops != 5 || errs != 1 {
		t.Errorf("Completed() = %d, %d; want 5, 1", ops, errs)
	}
	snap := r.Snapshot()
	a, b := snap.Ops[0], snap.Ops[1]
	if a.Successes != 1 || a.Business != 1 || a.Errors != 0 || a.Retries != 2 || a.Latency.Count() != 2 {
		t.Errorf("op a = %d successes, %d business, %d errors, %d retries, %d latencies; want 1, 1, 0, 2, 2", a.Successes, a.Business, a.Errors, a.Retries, a.Latency.Count())
	}
	if a.Completed != 2 || b.Completed != 0 {
		t.Errorf("completed in the window: a %d, b %d; want 2 and 0 (errors and late finishes excluded)", a.Completed, b.Completed)
	}
	if got := a.Queue.Quantile(1); got < 2*time.Millisecond || got > 2002*time.Microsecond {
		t.Errorf("op a max queue = %v, want 2ms (within the histogram's 0.1%%)", got)
	}
	if b.Successes != 1 || b.Errors != 1 || b.Latency.Count() != 1 || b.ErrorLatency.Count() != 1 {
		t.Errorf("op b: errors must be counted apart from latencies: %+v", b)
	}
	type point struct {
		T                       int
		Ops, Errors             int64
		PerOpOps, PerOpFailures [2]int64
	}
	wantSeries := []point{{1, 1, 0, [2]int64{1, 0}, [2]int64{}}, {2, 2, 0, [2]int64{2, 0}, [2]int64{}}, {3, 1, 1, [2]int64{0, 1}, [2]int64{0, 1}}}
	var got []point
	for _, s := range snap.Series {
		got = append(got, point{s.T, s.Ops, s.Errors, [2]int64{s.PerOp[0].Ops, s.PerOp[1].Ops}, [2]int64{s.PerOp[0].Errors, s.PerOp[1].Errors}})
	}
	if !slices.Equal(got, wantSeries) {
		t.Errorf("series = %+v, want %+v", got, wantSeries)
	}
	if p := snap.Series[2].P99; p < 2900*time.Microsecond || p > 3100*time.Microsecond {
		t.Errorf("third second p99 = %v, want about 3ms (errors excluded)", p)
	}
	if snap.Series[2].PerOp[0].Latency != "" {
		t.Errorf("third second: operation a finished nothing, yet has a latency histogram")
	}
	if h, err := DecodeHistogram(snap.Series[1].PerOp[0].Latency); err != nil || h.Count() != 2 {
		t.Errorf("second second, operation a: decoded %v, %v; want 2 samples", h, err)
	}
	if !slices.Equal(snap.Succeeded, []int64{2, 1}) {
		t.Errorf("succeeded over the whole run = %v, want [2 1] (ramp samples included)", snap.Succeeded)
	}
	total := snap.Total()
	if total.Count() != 3 || total.Errors != 1 {
		t.Errorf("total count = %d, errors = %d; want 3, 1", total.Count(), total.Errors)
	}
}

// Sub-microsecond latencies (a cache hit) are recorded as themselves, to
// within the 64 ns HdrHistogram resolves at the bottom of the range.
func TestHistogramDiscernsSubMicrosecond(t *testing.T) {
	h := NewHistogram()
	for range 100 {
		h.Record(150 * time.Nanosecond)
	}
	h.Record(900 * time.Nanosecond)
	if p50 := h.Quantile(0.5); p50 < 100*time.Nanosecond || p50 > 214*time.Nanosecond {
		t.Errorf("p50 of 150 ns samples = %v, want 150 ns ± 64 ns", p50)
	}
	if max := h.Quantile(1); max < 836*time.Nanosecond || max > 964*time.Nanosecond {
		t.Errorf("max = %v, want 900 ns ± 64 ns", max)
	}
	if s := h.Summary(); s.P50 == 0 || s.Mean == 0 {
		t.Errorf("summary %+v: sub-microsecond samples read as zero", s)
	}
}
