package coherence

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tierbench/tierbench/internal/container"
)

// latencyOf is one type's invalidation latency: a synchronous
// publication's round trip to every member (on the publisher), an
// asynchronous one's delivery (on the receiver, from the sender's
// clock). Guarded by the bus's mutex.
type latencyOf struct {
	h      *hdrhistogram.Histogram
	fenced int64
}

// Latencies from 1µs to 1 minute, 3 significant digits.
const (
	minLatency = int64(time.Microsecond)
	maxLatency = int64(time.Minute)
)

func (l *latencyOf) record(d time.Duration) {
	_ = l.h.RecordValue(min(max(int64(d), minLatency), maxLatency))
}

// latencyOf is type typ's histogram, made on first use. Called with
// b.mu held.
func (b *Bus) latencyOf(typ string) *latencyOf {
	l := b.latency[typ]
	if l == nil {
		l = &latencyOf{h: hdrhistogram.New(minLatency, maxLatency, 3)}
		b.latency[typ] = l
	}
	return l
}

// record a synchronous publication's round trip for its types.
func (b *Bus) record(w *container.Writes, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range w.Items {
		b.latencyOf(it.Type).record(d)
	}
}

// Latency of typ's invalidations (container.Peers).
func (b *Bus) Latency(typ string) container.Latency {
	l := b.latencyNow(typ)
	l.Unclaimed = b.unclaimedOf(typ)
	return l
}

func (b *Bus) latencyNow(typ string) container.Latency {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.latency[typ]
	if l == nil || l.h.TotalCount() == 0 {
		if l != nil {
			return container.Latency{PeersFenced: l.fenced}
		}
		return container.Latency{}
	}
	return container.Latency{P50: time.Duration(l.h.ValueAtQuantile(50)), P99: time.Duration(l.h.ValueAtQuantile(99)),
		Max: time.Duration(l.h.Max()), PeersFenced: l.fenced}
}

// ResetLatency forgets the latencies recorded so far (after a warm-up).
func (b *Bus) ResetLatency() {
	b.mu.Lock()
	clear(b.latency)
	b.mu.Unlock()
	b.cmu.Lock()
	clear(b.unclaimed)
	b.cmu.Unlock()
}
