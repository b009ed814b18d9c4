package agent

import (
	"slices"
	"testing"
	"time"
)

// A report keeps the agent's last counts and its peak rate per operation
// between two reports (from the start for the first, successes and commits
// in doubt together); an interval shorter than half a report's counts as
// half, so that the last report, sent just after another, magnifies
// nothing.
func TestReportTracksPeakRates(t *testing.T) {
	start := time.Unix(100, 0).UnixNano()
	at := func(d time.Duration) int64 { return start + int64(d) }
	var r Report
	for _, p := range []Progress{
		{At: 0}, // before the driver started: no counts
		{At: at(time.Second), Succeeded: []int64{10, 1}, InDoubt: []int64{0, 0}},
		{At: at(2 * time.Second), Succeeded: []int64{38, 1}, InDoubt: []int64{2, 0}},
		{At: at(2200 * time.Millisecond), Succeeded: []int64{50, 2}, InDoubt: []int64{2, 0}},
	} {
		r.track(p, start)
	}
	if want := []float64{30, 2}; !slices.Equal(r.Peak, want) {
		t.Errorf("peak rates %v, want %v", r.Peak, want)
	}
	if r.Last == nil || r.Last.Succeeded[0] != 50 || r.LastAt(time.Unix(0, start)) != time.Unix(0, at(2200*time.Millisecond)) {
		t.Errorf("last report %+v, want the counts at 2.2 s", r.Last)
	}
}
