package ecperf

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// drainTimeout bounds the wait for POs to be sent and delivered after the
// terminals stop: the longest lead time is 10 units (50 s in the kit), plus
// the emulator's retries and, for a PO whose emulator lost it, one
// delivery deadline more (resend.go).
const drainTimeout = 3 * time.Minute

// After the drain, Stop lists the emulator's record of the run and stops
// the agents. Those two steps are bounded by stopGrace each after a drain
// that ended by itself (completed or out of budget); after an interrupted
// one (the caller's context ended: SIGINT, SIGTERM) by
// stopGraceInterrupted, so that Stop returns within about a second of the
// interrupt.
const (
	stopGrace            = 30 * time.Second
	stopGraceInterrupted = 500 * time.Millisecond
)

// emulatorCallTimeout bounds one call to the emulator beyond its caller's
// context: a partner that accepts the connection and never answers must not
// hold a sender forever. It is long because --emulator-delay makes answers
// slow on purpose.
const emulatorCallTimeout = 30 * time.Second

// How a drain ended.
const (
	drainRunning     int32 = iota // not over (or not begun)
	drainComplete                 // every PO sent and delivered
	drainOutOfBudget              // gave up after drainTimeout
	drainInterrupted              // the caller's context ended first
)

// drainState is what the drain saw, read by the progress line while it
// runs and by the checks after.
type drainState struct {
	// unsent and awaiting are the POs unsent and awaiting delivery at the
	// drain's last look.
	unsent, awaiting atomic.Int64
	end              atomic.Int32 // drainRunning, drainComplete, …
	took             atomic.Int64 // nanoseconds the drain waited
}

func (s *drainState) tookTime() time.Duration {
	return time.Duration(s.took.Load()).Round(100 * time.Millisecond)
}

// Stop drains the dispatch — every committed PO sent, every sent PO
// delivered, overdue ones sent again — then stops the agents, the receiver
// and the emulator. The emulator's record of the run is taken between the
// two, for the checks. A drain that does not finish within drainTimeout,
// or that ctx cuts short, is not an error: the checks say which POs did
// not arrive and why. When ctx ends, Stop returns within about a second
// (stopGraceInterrupted for each of the listing and the shutdown).
func (a *app) Stop(ctx context.Context) error {
	a.stopOnce.Do(func() { a.stopErr = a.stop(ctx) })
	return a.stopErr
}

func (a *app) stop(ctx context.Context) error {
	began := time.Now()
	drainCtx, cancel := context.WithTimeout(ctx, drainTimeout)
	end, drainErr := a.waitDrained(drainCtx)
	cancel()
	if end != drainComplete && ctx.Err() != nil {
		end = drainInterrupted
	}
	a.drain.took.Store(int64(time.Since(began)))
	a.drain.end.Store(end)

	grace := stopGrace
	if end == drainInterrupted {
		grace = stopGraceInterrupted
	}
	// The caller's context may be over: these steps have their own bound.
	if end != drainComplete {
		// One more look, so that the status names what was left even when
		// ctx ended before the drain's first look.
		lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		if unsent, awaiting, err := a.checker.openPOs(lookCtx); err == nil {
			a.drain.unsent.Store(unsent)
			a.drain.awaiting.Store(awaiting)
		}
		cancel()
	}
	listCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	a.listed, a.listErr = a.dispatch.emu.RunPurchaseOrders(listCtx, a.dispatch.run)
	cancel()
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	return errors.Join(drainErr, a.dispatch.close(closeCtx))
}

// StopStatus says what the drain waits for, or, once it is over, what it
// left.
func (a *app) StopStatus() string {
	d := &a.drain
	open := fmt.Sprintf("%d POs unsent, %d awaiting delivery from the supplier emulator", d.unsent.Load(), d.awaiting.Load())
	if n := a.dispatch.resends.Load(); n > 0 {
		open += fmt.Sprintf(", %d re-sent after their delivery deadline", n)
	}
	switch d.end.Load() {
	case drainInterrupted:
		return fmt.Sprintf("drain interrupted after %v: %s", d.tookTime(), open)
	case drainOutOfBudget:
		return fmt.Sprintf("drain gave up after %v: %s", drainTimeout, open)
	}
	return open
}

// DrainIncomplete is "" when the drain saw every PO sent and delivered;
// otherwise one line saying how it ended and what it left open. The runner
// may show it beside an interrupted run's result.
func (a *app) DrainIncomplete() string {
	switch a.drain.end.Load() {
	case drainComplete:
		return ""
	case drainRunning:
		return "the drain has not ended"
	}
	return a.StopStatus()
}

// waitDrained waits until no PO is unsent and none awaits its delivery, or
// ctx ends (then the checks say which are missing). Only a database that
// cannot be read fails it; a failed relay pass is retried as the relay's
// own loop does. Every wait in it ends with ctx.
func (a *app) waitDrained(ctx context.Context) (int32, error) {
	d := a.dispatch
	wait := 10 * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		if d.mode == dispatchQueue {
			d.outbox.RelayOnce(ctx) // a failed pass is retried on the next turn; the outbox counts it for the checks
		}
		unsent, awaiting, err := a.checker.openPOs(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return drainOutOfBudget, nil // Stop tells an interrupt from the budget
			}
			return drainOutOfBudget, err
		}
		a.drain.unsent.Store(unsent)
		a.drain.awaiting.Store(awaiting)
		if unsent == 0 && awaiting == 0 {
			return drainComplete, nil
		}
		if d.mode == dispatchPoller && unsent > 0 {
			d.committed()
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return drainOutOfBudget, nil
		case <-timer.C:
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}
