package ecperf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// A PO the emulator acknowledged is normally delivered after its lead
// time. An emulator that dies (killed, restarted) loses the deliveries it
// had pending, and nobody would ever send those POs again: the drain would
// wait out its whole budget and the checks report them missing. So every
// acknowledged PO is watched, and one not delivered by its deadline is
// sent again. The emulator is an idempotent receiver keyed by run and PO
// number, so the re-send is safe: an emulator that still has the PO answers
// "duplicate" and delivers nothing more; one that restarted has forgotten
// it, accepts it and delivers it once. The receiver applies a delivery
// once whatever happens (a PO already received is left alone), so even an
// old emulator that comes back and delivers too doubles nothing.
// (docs/decisions/0006-ecperf-po-delivery.md, "A lost delivery is sent
// again".)

// resendMargin is what a PO's delivery deadline allows beyond its lead
// time: the emulator's first redelivery attempts (50, 100, 200, 400 ms
// apart when the receiver is briefly unable to take it), the receiver's own
// transaction and its retries, and deliveries queued before it at the
// receiver. A re-send that comes too early costs one HTTP call answered
// "duplicate"; one that comes too late costs drain time, so the margin is
// short.
const resendMargin = 2 * time.Second

// resendTick is how often the watcher looks for overdue POs.
const resendTick = 250 * time.Millisecond

// resendWorkers bounds the re-sends in flight at once, so that an emulator
// which lost hundreds of POs gets them back quickly without being flooded.
const resendWorkers = 8

// deliveryDeadline is how long after its send PO doc may stay undelivered
// before it is sent again: its lead time (the lines' longest, in units of
// the run's lead time unit, as the emulator reckons it) plus resendMargin.
func (d *dispatch) deliveryDeadline(doc emulator.PO) time.Duration {
	lead := 0
	for _, l := range doc.Lines {
		lead = max(lead, l.LeadTime)
	}
	return time.Duration(lead)*d.unit + resendMargin
}

// watched is a PO acknowledged by the emulator and not yet delivered.
type watched struct {
	doc emulator.PO
	due time.Time // when to send it again if it is still undelivered
}

// watch records that the emulator acknowledged doc at sent. A PO sent
// again (an agent's resend after a failed mark) moves its deadline.
func (d *dispatch) watch(doc emulator.PO, sent time.Time) {
	d.watchMu.Lock()
	d.watched[doc.PONumber] = &watched{doc: doc, due: sent.Add(d.deliveryDeadline(doc))}
	d.watchMu.Unlock()
}

// unwatch forgets PO number: its delivery was applied.
func (d *dispatch) unwatch(number int64) {
	d.watchMu.Lock()
	delete(d.watched, number)
	d.watchMu.Unlock()
}

// watching is how many POs are watched (tests).
func (d *dispatch) watching() int {
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	return len(d.watched)
}

// overdue takes the POs past their deadline at now and moves each one's
// deadline on by another full deadline, so the next look does not take
// them again while their re-send is under way.
func (d *dispatch) overdue(now time.Time) []emulator.PO {
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	var out []emulator.PO
	for _, w := range d.watched {
		if now.Before(w.due) {
			continue
		}
		out = append(out, w.doc)
		w.due = now.Add(d.deliveryDeadline(w.doc))
	}
	return out
}

// resendLoop is the watcher agent: every resendTick it sends the overdue
// POs again, until ctx ends. It runs during the terminals and the drain.
func (d *dispatch) resendLoop(ctx context.Context) {
	defer d.agents.Done()
	t := time.NewTicker(resendTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.resendOverdue(ctx, now)
		}
	}
}

// resendOverdue sends every overdue PO again, resendWorkers at a time.
func (d *dispatch) resendOverdue(ctx context.Context, now time.Time) {
	due := d.overdue(now)
	if len(due) == 0 {
		return
	}
	work := make(chan emulator.PO)
	var wg sync.WaitGroup
	for range min(len(due), resendWorkers) {
		wg.Go(func() {
			for doc := range work {
				d.resend(ctx, doc)
			}
		})
	}
feed:
	for _, doc := range due {
		select {
		case work <- doc:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
}

// resend sends doc again if the database still has it sent and not
// received: a delivery applied meanwhile, or a sync send whose transaction
// then aborted (no row), needs nothing more.
func (d *dispatch) resend(ctx context.Context, doc emulator.PO) {
	var status int64
	if err := d.db.QueryRow(ctx, d.poStatusOf, doc.PONumber).Scan(&status); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			d.unwatch(doc.PONumber)
		}
		return // the database is busy or ctx ended: the next deadline tries again
	}
	if status != poSent {
		if status == poReceived {
			d.unwatch(doc.PONumber)
		}
		// Unsent (the agent's mark did not land): the agent sends it again.
		return
	}
	answer, err := d.emu.Send(ctx, doc)
	if err != nil {
		if ctx.Err() == nil {
			d.sendFailures.Add(1)
			err = fmt.Errorf("resend PO %d to the supplier emulator: %w", doc.PONumber, err)
			d.lastSendErr.Store(&err)
		}
		return
	}
	d.resends.Add(1)
	if answer == emulator.StatusAccepted {
		d.resentAccepted.Add(1)
	}
}

// resendSummary is the re-sends so far, for the drain's status and the
// checks: how many, and how many the emulator accepted anew (it had lost
// them) rather than answered "duplicate" (still pending there).
func (d *dispatch) resendSummary() string {
	n, accepted := d.resends.Load(), d.resentAccepted.Load()
	if n == 0 {
		return "no PO re-sent"
	}
	return fmt.Sprintf("%d POs re-sent after their delivery deadline (%d accepted anew by an emulator that had lost them, %d answered duplicate)", n, accepted, n-accepted)
}
