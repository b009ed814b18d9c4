package metrics

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// A 27-operation workload (RUBiS) on 16 cores, with and without clients
// queued for server threads, every shard having recorded every operation,
// a retry and an error: the recorder's histograms stay within 32 MB.
func TestRecorderMemoryBounded(t *testing.T) {
	const ops, cpus, limit = 27, 16, 32 << 20
	names := make([]string, ops)
	for i := range names {
		names[i] = fmt.Sprint("op", i)
	}
	for _, split := range []bool{true, false} {
		n := shardsFor(10_000, ops, split, cpus)
		r := NewRecorder(names, n)
		for sh := range n {
			for op := range ops {
				r.Shard(sh).Record(Sample{Op: op, Latency: time.Millisecond, Queue: time.Microsecond, Service: time.Millisecond, Split: split, Measured: true, Retries: 1, Backoff: time.Millisecond})
				r.Shard(sh).Record(Sample{Op: op, Outcome: Error, Latency: time.Millisecond, Measured: true})
			}
		}
		got := r.MemoryBytes()
		t.Logf("split %v: %d shards of %d operations: %.1f MB", split, n, ops, float64(got)/(1<<20))
		if got > limit {
			t.Errorf("split %v: %.1f MB, above %d MB", split, float64(got)/(1<<20), limit>>20)
		}
	}
	// Histograms exist only for what a shard saw: one completion without
	// queueing makes a latency and a current-second histogram.
	plain := NewRecorder(names, 1)
	plain.Shard(0).Record(Sample{Op: 0, Latency: time.Millisecond, Measured: true})
	if got, want := plain.MemoryBytes(), histogramBytes+NewCoarseHistogram().h.ByteSize(); got != want {
		t.Errorf("one sample, no split: %d bytes, want %d", got, want)
	}
}

func TestShardsFor(t *testing.T) {
	for _, c := range []struct {
		terminals, ops int
		split          bool
		cpus, want     int
	}{
		{4, 7, false, 16, 4},     // no more shards than terminals
		{100, 2, false, 16, 32},  // two per CPU
		{100, 7, false, 16, 12},  // 7 × (221 KB + 2 × 41 KB): 12 fit 24 MB
		{100, 7, true, 16, 4},    // 7 × (3 × 221 KB + 2 × 41 KB): 4 fit
		{10000, 27, true, 16, 1}, // RUBiS queued: one shard
		{10000, 27, false, 16, 3},
		{1, 1000, true, 2, 1}, // never none
	} {
		if got := shardsFor(c.terminals, c.ops, c.split, c.cpus); got != c.want {
			t.Errorf("shardsFor(%d terminals, %d ops, split %v, %d cpus) = %d, want %d", c.terminals, c.ops, c.split, c.cpus, got, c.want)
		}
	}
}

// Live counts the tracked terminals that are busy, and the steady state as
// the snapshot will have it.
func TestLiveInFlightAndCounts(t *testing.T) {
	r := NewRecorder([]string{"a"}, 2)
	var busy [3]atomic.Bool
	for i := range busy {
		r.Shard(i).Track(&busy[i])
	}
	busy[0].Store(true)
	busy[2].Store(true)
	r.Shard(0).Record(Sample{Op: 0, Latency: time.Millisecond, Measured: true, Finished: true})
	r.Shard(1).Record(Sample{Op: 0, Outcome: Error, Latency: time.Millisecond, Measured: true})
	r.Shard(1).Record(Sample{Op: 0, Latency: time.Millisecond}) // ramp-up: only in All
	l := r.Live()
	op := l.Ops[0]
	if l.InFlight != 2 || op.ByOutcome(Success) != 1 || op.ByOutcome(Error) != 1 || op.All[Success] != 2 || op.Latency.Count() != 1 {
		t.Errorf("live: %d in flight, %d/%d steady successes/errors, %d successes in all, %d latencies; want 2, 1/1, 2, 1",
			l.InFlight, op.ByOutcome(Success), op.ByOutcome(Error), op.All[Success], op.Latency.Count())
	}
	busy[0].Store(false)
	if n := r.Live().InFlight; n != 1 {
		t.Errorf("%d in flight after one ended, want 1", n)
	}
}
