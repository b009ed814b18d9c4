package result

import (
	"bytes"
	"testing"
)

// An hour of Stock-Online fits in 5 MB with full histograms. The data is
// a real 60-second run (testdata: direct SQL on PostgreSQL 15, 100
// clients, about 17,000 operations/s on the 2-core development machine,
// the fastest configuration measured; recorded when histograms held
// microseconds and rewritten in nanoseconds); the file grows by one time-series
// line and one histogram line per second, so an hour is the fixed part
// plus 3,600 times the seconds' mean.
func TestHourOfStockOnlineFitsFiveMB(t *testing.T) {
	const limit = 5 << 20
	r, err := ReadFile("testdata/stockonline-postgres-60s.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.ThroughputPerS < 15_000 || r.Histograms == nil {
		t.Fatalf("the sample run does %.0f operations/s (histograms %v): not the fast run this test is about", r.Summary.ThroughputPerS, r.Histograms != nil)
	}
	b, err := r.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	var perSecond, n int
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte(`{"t_s":`)) {
			perSecond += len(l) + 1
			n++
		}
	}
	seconds := len(r.Histograms.Seconds)
	if n != seconds+len(r.Timeseries) {
		t.Fatalf("%d one-line seconds in the file, want %d histogram and %d time-series lines", n, seconds, len(r.Timeseries))
	}
	fixed := len(b) - perSecond
	hour := fixed + perSecond*3600/seconds
	t.Logf("%d s at %.0f operations/s: %d bytes (%d fixed, %d per second); an hour: %.2f MB", seconds, r.Summary.ThroughputPerS, len(b), fixed, perSecond/seconds, float64(hour)/(1<<20))
	if hour > limit {
		t.Errorf("an hour of Stock-Online would write %.2f MB, above %d MB", float64(hour)/(1<<20), limit>>20)
	}
}
