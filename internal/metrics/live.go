package metrics

import (
	"slices"
	"time"
)

// Live is what a recorder holds mid-run, for live metrics: cheap enough to
// take every few seconds (it merges the shards' histograms, which the
// terminals pause for one shard at a time), and never disturbing the
// per-second series or the final snapshot.
type Live struct {
	Ops []LiveOp
	// InFlight is the operations under way: asked for by a client and
	// not yet finished, queued for a server thread included.
	InFlight int64
}

// LiveOp is one operation so far: its steady state as the snapshot will
// hold it (the result's population), and All, the finished operations by
// outcome (Outcome as index) in every phase.
type LiveOp struct {
	OpStats
	All [outcomes]int64
}

// Outcomes lists every outcome, in index order.
func Outcomes() []Outcome { return []Outcome{Success, Business, Error, InDoubt} }

// Live merges the shards as they are now.
func (r *Recorder) Live() Live {
	l := Live{Ops: make([]LiveOp, len(r.ops))}
	for i, name := range r.ops {
		l.Ops[i] = LiveOp{OpStats: NewOpStats(name)}
	}
	for _, sh := range r.shards {
		sh.mu.Lock()
		for _, b := range sh.busy {
			if b.Load() {
				l.InFlight++
			}
		}
		for i := range sh.ops {
			src, dst := &sh.ops[i], &l.Ops[i]
			for k := range dst.All {
				dst.All[k] += src.all[k]
			}
			src.mergeInto(&dst.OpStats)
		}
		sh.mu.Unlock()
	}
	return l
}

// CumulativeCounts are how many samples lie at or below each bound (in
// increasing order), as Prometheus histograms count: a sample counts
// toward a bound when its whole bucket (within the histogram's precision)
// does.
func (h *Histogram) CumulativeCounts(bounds []time.Duration) []uint64 {
	counts := make([]uint64, len(bounds))
	for _, bar := range h.h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		upper := time.Duration(bar.To)
		i, _ := slices.BinarySearch(bounds, upper)
		if i < len(counts) {
			counts[i] += uint64(bar.Count)
		}
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	return counts
}

// Sum of the samples, from the histogram's mean.
func (h *Histogram) Sum() time.Duration {
	return time.Duration(h.h.Mean() * float64(h.Count()))
}
