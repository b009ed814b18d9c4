package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func logUniform(rng *rand.Rand) time.Duration {
	return time.Duration(math.Exp(rng.Float64()*math.Log(1e10))) * time.Nanosecond
}

// A histogram written in the standard encoding decodes, with the library's
// own decoder as any other tool would use it, to the same counts.
func TestHistogramEncodingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := NewHistogram()
	for range 20_000 {
		h.Record(logUniform(rng))
	}
	enc := h.Encode()
	back, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(h) || back.Count() != 20_000 {
		t.Fatalf("decoded histogram differs: %d samples, summary %+v, want %+v", back.Count(), back.Summary(), h.Summary())
	}
	raw, err := hdrhistogram.Decode([]byte(enc))
	if err != nil {
		t.Fatalf("the library's decoder refuses our encoding: %v", err)
	}
	if raw.TotalCount() != 20_000 || raw.SignificantFigures() != sigFigs || raw.ValueAtQuantile(99) != h.h.ValueAtQuantile(99) {
		t.Errorf("library decode: %d samples, %d digits, p99 %d; want 20000, %d, %d", raw.TotalCount(), raw.SignificantFigures(), raw.ValueAtQuantile(99), sigFigs, h.h.ValueAtQuantile(99))
	}
	if _, err := DecodeHistogram("not a histogram"); err == nil {
		t.Error("garbage decoded without error")
	}
	narrow, _ := hdrhistogram.New(1, 1000, 3).Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if _, err := DecodeHistogram(string(narrow)); err == nil {
		t.Error("a histogram of range 1..1000 µs decoded: merging it would clamp values")
	}
}

// Snapshots of several recorders (agents) merged equal the snapshot of one
// recorder that saw every sample: counts, whole-run histograms, and every
// second's per-operation histograms.
func TestSnapshotMergeEqualsAllSamples(t *testing.T) {
	ops := []string{"a", "b", "c"}
	all := NewRecorder(ops, 2)
	parts := []*Recorder{NewRecorder(ops, 1), NewRecorder(ops, 3), NewRecorder(ops, 2)}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 30_000 {
		// Terminals record in time order, give or take a shard's lag.
		s := Sample{Op: rng.IntN(len(ops)), At: time.Duration(i)*20*time.Second/30_000 + time.Duration(rng.IntN(50))*time.Millisecond,
			Latency: logUniform(rng), Measured: rng.IntN(10) > 0, Finished: true}
		switch rng.IntN(20) {
		case 0:
			s.Outcome = Error
		case 1:
			s.Outcome = Business
		case 2:
			s.Retries, s.Backoff = 1, time.Millisecond
		}
		s.Queue, s.Service, s.Split = s.Latency/3, s.Latency-s.Latency/3, true
		all.Shard(i).Record(s)
		parts[rng.IntN(len(parts))].Shard(i).Record(s)
	}
	want := all.Snapshot()
	got := parts[0].Snapshot()
	for _, p := range parts[1:] {
		if err := got.Merge(p.Snapshot()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range want.Ops {
		w, g := want.Ops[i], got.Ops[i]
		if w.Successes != g.Successes || w.Business != g.Business || w.Errors != g.Errors || w.Retries != g.Retries || w.Completed != g.Completed {
			t.Errorf("%s: merged counts %+v, want %+v", w.Name, g, w)
		}
		for _, h := range []struct {
			kind string
			w, g *Histogram
		}{{"latency", w.Latency, g.Latency}, {"queue", w.Queue, g.Queue}, {"service", w.Service, g.Service}, {"backoff", w.Backoff, g.Backoff}, {"errors", w.ErrorLatency, g.ErrorLatency}} {
			if !h.g.Equal(h.w) {
				t.Errorf("%s %s: merged histogram differs from the histogram of all samples", w.Name, h.kind)
			}
		}
	}
	if len(got.Series) != len(want.Series) {
		t.Fatalf("merged series has %d seconds, want %d", len(got.Series), len(want.Series))
	}
	for i, w := range want.Series {
		g := got.Series[i]
		if g.T != w.T || g.Ops != w.Ops || g.Errors != w.Errors || g.Quantiles != w.Quantiles {
			t.Errorf("second %d: merged %d ops, %d errors, %+v; want %d, %d, %+v", w.T, g.Ops, g.Errors, g.Quantiles, w.Ops, w.Errors, w.Quantiles)
		}
		for j := range w.PerOp {
			wh, _ := DecodeHistogram(w.PerOp[j].Latency)
			gh, _ := DecodeHistogram(g.PerOp[j].Latency)
			if (wh == nil) != (gh == nil) || wh != nil && !wh.Equal(gh) || w.PerOp[j].Ops != g.PerOp[j].Ops {
				t.Errorf("second %d, %s: merged per-second histogram differs", w.T, ops[j])
			}
		}
	}
	bad := NewRecorder([]string{"a", "x", "c"}, 1).Snapshot()
	if err := got.Merge(bad); err == nil {
		t.Error("merging a snapshot of other operations succeeded")
	}
}

// A shard whose terminals sat idle flushes a second long after the series
// sealed (encoded) it: the late samples must still count, exactly.
func TestLateFlushIntoSealedSecond(t *testing.T) {
	r := NewRecorder([]string{"a"}, 2)
	idle, busy := r.Shard(0), r.Shard(1)
	idle.Record(Sample{Op: 0, At: 500 * time.Millisecond, Latency: 7 * time.Millisecond, Measured: true, Finished: true})
	busy.Record(Sample{Op: 0, At: 600 * time.Millisecond, Latency: 2 * time.Millisecond, Measured: true, Finished: true})
	for sec := 1; sec <= 10; sec++ {
		busy.Record(Sample{Op: 0, At: time.Duration(sec) * time.Second, Latency: time.Millisecond, Measured: true, Finished: true})
	}
	if r.series.sealed < 1 {
		t.Fatalf("sealed %d seconds after 10 s of samples, want the first sealed", r.series.sealed)
	}
	idle.Record(Sample{Op: 0, At: 11 * time.Second, Latency: time.Millisecond, Measured: true, Finished: true}) // flushes second 0
	snap := r.Snapshot()
	first := snap.Series[0]
	h, err := DecodeHistogram(first.PerOp[0].Latency)
	if err != nil {
		t.Fatal(err)
	}
	if first.Ops != 2 || h.Count() != 2 || first.P99 < 6900*time.Microsecond {
		t.Errorf("first second: %d ops, %d in its histogram, p99 %v; want 2, 2, about 7ms", first.Ops, h.Count(), first.P99)
	}
}
