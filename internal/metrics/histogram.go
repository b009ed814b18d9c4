package metrics

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The range and precision every latency histogram shares, so any two merge
// exactly: nanoseconds up to an hour at 3 significant digits, discerning
// values from 100 ns (HdrHistogram resolves the bottom of the range in
// 64 ns steps), so that a cache hit of a few hundred nanoseconds is
// recorded as itself rather than as zero.
const (
	lowestNanos  = 100
	highestNanos = int64(time.Hour)
	sigFigs      = 3
)

// Histogram is a latency distribution in nanoseconds.
type Histogram struct {
	h *hdrhistogram.Histogram
}

// NewHistogram is empty, with the shared range and precision.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(lowestNanos, highestNanos, sigFigs)}
}

// NewCoarseHistogram trades precision for size, for the per-second
// series: a run keeps one per operation per second. One significant digit
// puts 16 linear buckets in each doubling, so a percentile is read within
// 6.25% of its value; an encoded second of Stock-Online's busiest
// operation is then about 130 bytes instead of 400, an hour of the whole
// workload about 4 MB, and a live one 4 KB of memory instead of 30 KB.
// The steady state's own histograms keep 3 digits.
func NewCoarseHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(lowestNanos, highestNanos, 1)}
}

// newTailHistogram is for what only needs percentiles to 1% (2 digits):
// the latency of failed operations and the pauses before retries, which
// each shard may hold for every operation; 30 KB instead of 220 KB.
func newTailHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(lowestNanos, highestNanos, 2)}
}

// Unit of the values in an encoded histogram.
const Unit = "ns"

// Encode h in HdrHistogram's standard V2 compressed encoding, base64: the
// form every HdrHistogram library and tool (HistogramLogAnalyzer,
// hdrhistogram-py, the Java original) decodes. Values are nanoseconds.
func (h *Histogram) Encode() string {
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		// Only an unknown encoding version fails, and the version is fixed.
		panic("metrics: encode histogram: " + err.Error())
	}
	return string(b)
}

// DecodeHistogram reads what Encode wrote (or any V2 compressed
// histogram of nanoseconds). It refuses one whose range cannot hold ours
// exactly, so that merges stay exact.
func DecodeHistogram(s string) (*Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	if h.LowestTrackableValue() > lowestNanos || h.HighestTrackableValue() < highestNanos {
		return nil, fmt.Errorf("histogram: range %d..%d ns, want at least %d..%d", h.LowestTrackableValue(), h.HighestTrackableValue(), lowestNanos, highestNanos)
	}
	return &Histogram{h: h}, nil
}

// Record adds one latency; values past an hour count as an hour, so a
// pathological sample is still counted rather than lost.
func (h *Histogram) Record(d time.Duration) {
	ns := int64(d)
	if ns > highestNanos {
		ns = highestNanos
	} else if ns < 0 {
		ns = 0
	}
	h.h.RecordValue(ns) // cannot fail: ns is within range
}

// recordZeros adds n samples of zero.
func (h *Histogram) recordZeros(n int64) {
	if n > 0 {
		h.h.RecordValues(0, n) // cannot fail: 0 is within range
	}
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) { h.h.Merge(o.h) }

// Count of samples.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Quantile q (0..1) as a duration.
func (h *Histogram) Quantile(q float64) time.Duration {
	return time.Duration(h.h.ValueAtQuantile(q * 100))
}

// Equal reports whether h and o hold the same distribution.
func (h *Histogram) Equal(o *Histogram) bool { return h.h.Equals(o.h) }

func (h *Histogram) reset() { h.h.Reset() }

// Latency is a histogram's summary in milliseconds, as the result file has it.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Summary of h in milliseconds; zero for an empty histogram.
func (h *Histogram) Summary() Latency {
	if h.Count() == 0 {
		return Latency{}
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return Latency{
		Mean: h.h.Mean() / 1e6,
		P50:  ms(h.h.ValueAtQuantile(50)),
		P90:  ms(h.h.ValueAtQuantile(90)),
		P95:  ms(h.h.ValueAtQuantile(95)),
		P99:  ms(h.h.ValueAtQuantile(99)),
		Max:  ms(h.h.Max()),
	}
}

// Quantiles are the percentiles a time series plots.
type Quantiles struct {
	P50, P90, P99, P999 time.Duration
}

// Quantiles of h; zero for an empty histogram.
func (h *Histogram) Quantiles() Quantiles {
	if h.Count() == 0 {
		return Quantiles{}
	}
	return Quantiles{P50: h.Quantile(0.5), P90: h.Quantile(0.9), P99: h.Quantile(0.99), P999: h.Quantile(0.999)}
}
