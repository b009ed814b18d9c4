package ecperf

import (
	"slices"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// A PO's delivery deadline is its longest line's lead time in units plus
// resendMargin; an overdue PO is taken once, and again only a full
// deadline later; a delivered one never.
func TestDeliveryDeadlineAndOverdue(t *testing.T) {
	t.Parallel()
	d := &dispatch{unit: 5 * time.Second, watched: map[int64]*watched{}}
	po := func(n int64, leads ...int) emulator.PO {
		doc := emulator.PO{PONumber: n}
		for i, l := range leads {
			doc.Lines = append(doc.Lines, emulator.POLine{Line: i + 1, LeadTime: l})
		}
		return doc
	}
	if got, want := d.deliveryDeadline(po(1, 2, 10, 4)), 50*time.Second+resendMargin; got != want {
		t.Errorf("deadline of lead times 2, 10, 4 units of 5 s: %v, want %v", got, want)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.watch(po(1, 2), t0)  // due at 10 s + margin
	d.watch(po(2, 10), t0) // due at 50 s + margin
	d.watch(po(3, 2), t0)
	d.unwatch(3) // delivered
	numbers := func(docs []emulator.PO) (out []int64) {
		for _, doc := range docs {
			out = append(out, doc.PONumber)
		}
		return out
	}
	for _, step := range []struct {
		at   time.Duration
		want []int64
	}{
		{10*time.Second + resendMargin - time.Nanosecond, nil},
		{10*time.Second + resendMargin, []int64{1}},
		{20*time.Second + resendMargin, nil}, // PO 1 is due again a full deadline after its re-send
		{20*time.Second + 2*resendMargin, []int64{1}},
		{50*time.Second + resendMargin, []int64{1, 2}},
	} {
		if got := numbers(d.overdue(t0.Add(step.at))); !slices.Equal(slices.Sorted(slices.Values(got)), step.want) {
			t.Errorf("overdue at %v: %v, want %v", step.at, got, step.want)
		}
	}
	if n := d.watching(); n != 2 {
		t.Errorf("%d POs watched, want 2", n)
	}
}
