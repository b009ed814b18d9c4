package metrics

import (
	"math"
	"time"
)

// SpectrumPoint is one point of a latency percentile spectrum: Percentile
// (0..100) of the samples took Value or less.
type SpectrumPoint struct {
	Percentile float64
	Value      time.Duration
}

// Spectrum is h's percentile spectrum as HdrHistogram's plots draw it,
// with perDecade points in each decade of 1/(1-p) (0%, 90%, 99%, 99.9%, …)
// so that the points are evenly spaced on the plot's log axis. It stops
// where a percentile would resolve less than one sample and ends with
// 100%, the maximum. Each value is exactly h.Quantile(Percentile/100).
// Empty for an empty histogram.
func (h *Histogram) Spectrum(perDecade int) []SpectrumPoint {
	n := h.Count()
	if n == 0 || perDecade < 1 {
		return nil
	}
	var percentiles []float64
	// Beyond 1/(1-p) = n the tail holds under one sample: only the
	// maximum remains, which the final 100% gives.
	decades := math.Log10(float64(n))
	for k := 0; float64(k)/float64(perDecade) < decades; k++ {
		p := 100 * (1 - math.Pow(10, -float64(k)/float64(perDecade)))
		// Rounded, so that 99% reads 99 and not 99.00000000000001.
		percentiles = append(percentiles, math.Round(p*1e9)/1e9)
	}
	percentiles = append(percentiles, 100)
	// One pass over the counts for all of them.
	values := h.h.ValueAtPercentilesSlice(percentiles)
	out := make([]SpectrumPoint, len(percentiles))
	for i, p := range percentiles {
		out[i] = SpectrumPoint{Percentile: p, Value: time.Duration(values[i])}
	}
	return out
}
