package metrics

import (
	"testing"
	"time"
)

// The spectrum's points are the histogram's own percentiles, evenly
// spaced in decades of 1/(1-p) up to the last one the samples resolve,
// and end at the maximum.
func TestSpectrum(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 10_000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	pts := h.Spectrum(10)
	// 10,000 samples resolve 4 decades: 40 points, then 100%.
	if len(pts) != 41 {
		t.Fatalf("%d points, want 41", len(pts))
	}
	for i, p := range pts {
		if want := h.Quantile(p.Percentile / 100); p.Value != want {
			t.Errorf("point %d at %v%%: %v, Quantile says %v", i, p.Percentile, p.Value, want)
		}
		if i > 0 && p.Percentile <= pts[i-1].Percentile {
			t.Errorf("percentiles not increasing at %d", i)
		}
	}
	if last := pts[len(pts)-1]; last.Percentile != 100 || last.Value != h.Quantile(1) {
		t.Errorf("last point %+v, want the maximum", last)
	}
	if pts[10].Value != h.Quantile(0.9) || pts[20].Value != h.Quantile(0.99) {
		t.Errorf("90%% %v, 99%% %v", pts[10], pts[20])
	}
	if NewHistogram().Spectrum(10) != nil {
		t.Error("an empty histogram has a spectrum")
	}
}
