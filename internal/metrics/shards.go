package metrics

import "runtime"

// recorderBudget bounds the memory of a recorder's steady-state
// histograms (issue 11: 32 MB for a 27-operation workload on 16 cores,
// with room left for the per-second histograms).
const recorderBudget = 24 << 20

// histogramBytes is what one steady-state histogram takes, tailBytes one
// of the failures' or the retries' pauses.
var (
	histogramBytes = NewHistogram().h.ByteSize()
	tailBytes      = newTailHistogram().h.ByteSize()
)

// Shards is how many recorder shards suit terminals recording ops
// operations: two per CPU the Go runtime runs on (fewer, and terminals on
// different CPUs contend for a shard's lock: with one per CPU the no-op
// driver path took 50% longer), no more than there are terminals, and no more
// than the memory budget holds, each shard having for each operation it
// records a latency histogram, queue and service histograms when split
// (clients wait for server threads), and, should it fail or retry, the
// failures' and the pauses' histograms.
func Shards(terminals, ops int, split bool) int {
	return shardsFor(terminals, ops, split, runtime.GOMAXPROCS(0))
}

func shardsFor(terminals, ops int, split bool, cpus int) int {
	perOp := histogramBytes + 2*tailBytes
	if split {
		perOp += 2 * histogramBytes
	}
	perShard := ops * perOp
	return max(1, min(terminals, 2*cpus, recorderBudget/max(perShard, 1)))
}

// MemoryBytes is what the recorder's histograms take now: the shards'
// steady-state and current-second ones.
func (r *Recorder) MemoryBytes() int {
	n := 0
	size := func(h *Histogram) {
		if h != nil {
			n += h.h.ByteSize()
		}
	}
	for _, sh := range r.shards {
		sh.mu.Lock()
		for i := range sh.ops {
			o := &sh.ops[i]
			for _, h := range []*Histogram{o.latency, o.queue, o.service, o.backoff, o.errorLatency, sh.secHist[i]} {
				size(h)
			}
		}
		sh.mu.Unlock()
	}
	return n
}
