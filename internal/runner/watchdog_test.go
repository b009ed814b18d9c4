package runner

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The watchdog ends a drive whose every operation fails for the grace
// while its tier answers, naming the first failures; it leaves alone a
// drive with successes, and a tier that does not answer is the outage it
// was (not this rule).
func TestWatchdogEndsADriveWhoseEveryOperationFails(t *testing.T) {
	synctest.Test(t, testWatchdogEndsADriveWhoseEveryOperationFails)
}

func testWatchdogEndsADriveWhoseEveryOperationFails(t *testing.T) {
	const grace = 400 * time.Millisecond
	type counters struct{ ok, failed atomic.Int64 }
	start := func(c *counters, probe error, samples []string) (*watchdog, context.Context) {
		ctx, stop := context.WithCancelCause(context.Background())
		t.Cleanup(func() { stop(nil) })
		failed := c.failed.Load
		tr := tier{name: "the site at http://x", lost: failed, probe: func(context.Context) error { return probe },
			succeeded: c.ok.Load}
		if samples != nil {
			tr.samples = func() []string { return samples }
		}
		return watchTier(ctx, tr, grace, failed, stop), ctx
	}
	// Failures keep coming (in the bubble's time), with successes or
	// without.
	run := func(c *counters, succeed bool, d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			c.failed.Add(1)
			if succeed {
				c.ok.Add(1)
			}
		}
	}

	var all counters
	w, ctx := start(&all, nil, []string{"GET /PHP/PHP/index.html: HTTP 404 Not Found"})
	run(&all, false, 3*grace)
	o := w.stop()
	if o == nil || !o.answering || ctx.Err() == nil {
		t.Fatalf("every operation failed for 3× the grace: outage %+v, run stopped %v; want it ended", o, ctx.Err())
	}
	for _, want := range []string{"every operation failed for 400ms while the site at http://x answered", "none succeeded",
		"the first: GET /PHP/PHP/index.html: HTTP 404 Not Found"} {
		if !strings.Contains(o.err.Error(), want) || !strings.Contains(context.Cause(ctx).Error(), want) {
			t.Errorf("error %q does not say %q", o.err, want)
		}
	}

	var some counters
	w, ctx = start(&some, nil, nil)
	run(&some, true, 3*grace)
	if o := w.stop(); o != nil || ctx.Err() != nil {
		t.Errorf("operations succeeding beside the failures: outage %+v, want none", o)
	}

	// A restart within the grace: down for most of it, then answering
	// while the operations still fail a little longer. The operations
	// get a grace of their own from the return, not from their last
	// success.
	var restarted counters
	var down atomic.Bool
	down.Store(true)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	tr := tier{name: "the site", lost: restarted.failed.Load, succeeded: restarted.ok.Load, probe: func(context.Context) error {
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}}
	w = watchTier(ctx, tr, grace, restarted.failed.Load, stop)
	run(&restarted, false, grace*9/10)
	down.Store(false)
	run(&restarted, false, grace/2)
	run(&restarted, true, grace)
	if o := w.stop(); o != nil || ctx.Err() != nil {
		t.Errorf("a restart within the grace: outage %+v, want the run going on", o)
	}

	var gone counters
	w, _ = start(&gone, errors.New("connection refused"), nil)
	run(&gone, false, 3*grace)
	if o := w.stop(); o == nil || o.answering || !strings.Contains(o.err.Error(), "was lost at") {
		t.Errorf("a tier that does not answer: outage %+v, want the loss, not this rule", o)
	}
}
