package ecperf

import (
	"context"
	"fmt"
	"slices"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// checker holds the statements of the consistency checks and the
// baseline taken at the start of the run.
type checker struct {
	db                                                               *store.DB
	unsent, openPOStmt, poStatus, maxPO, orders, completed, badLines *store.Stmt
	inventoryOff, orphanLarge                                        *store.Stmt
	largeOff, largeMissing, largeDone, balances, lastOrder           *store.Stmt

	// The baseline: the POs sent before the run (not this run's to
	// check). POs left unsent by a run killed before sending them are
	// this run's to send.
	sentBefore    map[int64]bool
	ordersAtStart int64
	doneAtStart   int64
	// lastOrderAtStart: orders above it are this run's, whose large lines
	// must each have a large order or a work order.
	lastOrderAtStart int64
	largeDoneAtStart int64
	// owedApart is each customer's balance less its orders' totals at the
	// start: NewOrder, ChangeOrder and CancelOrder move both alike, so it
	// must not change (a new customer's is 0).
	owedApart map[int64]int64
}

func newChecker(ctx context.Context, db *store.DB) (*checker, error) {
	c := &checker{db: db}
	for _, s := range []struct {
		stmt **store.Stmt
		sql  string
	}{
		{&c.unsent, "SELECT po_number FROM s_purchase_order WHERE po_status = ? ORDER BY po_number"},
		{&c.openPOStmt, "SELECT po_status, COUNT(*) FROM s_purchase_order WHERE po_status < 2 GROUP BY po_status"},
		{&c.poStatus, "SELECT po_number, po_status FROM s_purchase_order"},
		{&c.orders, "SELECT COUNT(*) FROM o_orders"},
		{&c.completed, "SELECT COUNT(*) FROM m_workorder WHERE wo_status = 4"},
		{&c.badLines, "SELECT COUNT(*) FROM o_orders o WHERE o_ol_cnt <> (SELECT COUNT(*) FROM o_orderline l WHERE l.ol_o_id = o.o_id)"},
		{&c.orphanLarge, "SELECT COUNT(*) FROM m_largeorder lo WHERE NOT EXISTS (SELECT 1 FROM o_orderline l WHERE l.ol_o_id = lo.lo_o_id AND l.ol_id = lo.lo_ol_id)"},
		{&c.largeOff, fmt.Sprintf("SELECT COUNT(*) FROM m_largeorder lo JOIN o_orderline l ON l.ol_o_id = lo.lo_o_id AND l.ol_id = lo.lo_ol_id WHERE l.ol_qty <= %d OR l.ol_qty <> lo.lo_qty", largeOrderQty)},
		{&c.largeMissing, fmt.Sprintf("SELECT COUNT(*) FROM o_orderline l WHERE l.ol_o_id > ? AND l.ol_qty > %d"+
			" AND NOT EXISTS (SELECT 1 FROM m_largeorder lo WHERE lo.lo_o_id = l.ol_o_id AND lo.lo_ol_id = l.ol_id)"+
			" AND NOT EXISTS (SELECT 1 FROM m_workorder w WHERE w.wo_o_id = l.ol_o_id AND w.wo_ol_id = l.ol_id)", largeOrderQty)},
		{&c.largeDone, fmt.Sprintf("SELECT COUNT(*) FROM m_workorder WHERE wo_status = %d AND wo_o_id > 0", woCompleted)},
		{&c.lastOrder, "SELECT COALESCE(MAX(o_id), 0) FROM o_orders"},
		{&c.balances, "SELECT c_id, c_balance - COALESCE((SELECT SUM(o_total) FROM o_orders o WHERE o.o_c_id = c.c_id), 0) FROM c_customer c"},
		{&c.inventoryOff, "SELECT COUNT(*) FROM m_inventory i WHERE in_ordered <> (SELECT COALESCE(SUM(pol_balance), 0) FROM s_purchase_orderline l WHERE l.pol_p_id = i.in_p_id)"},
	} {
		var err error
		if *s.stmt, err = db.Prepare(ctx, store.Statement{Name: "ecperf-check", SQL: s.sql}); err != nil {
			return nil, err
		}
	}
	pos, err := c.poStatuses(ctx)
	if err != nil {
		return nil, err
	}
	c.sentBefore = make(map[int64]bool)
	for n, s := range pos {
		if s != poUnsent {
			c.sentBefore[n] = true
		}
	}
	if err := db.QueryRow(ctx, c.orders).Scan(&c.ordersAtStart); err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, c.completed).Scan(&c.doneAtStart); err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, c.largeDone).Scan(&c.largeDoneAtStart); err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, c.lastOrder).Scan(&c.lastOrderAtStart); err != nil {
		return nil, err
	}
	if c.owedApart, err = c.owed(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// owed is each customer's balance less its orders' totals.
func (c *checker) owed(ctx context.Context) (map[int64]int64, error) {
	return c.pairs(ctx, c.balances)
}

// balancesOff counts the customers whose balance moved apart from their
// orders' totals since the start, and names the first few.
func (c *checker) balancesOff(ctx context.Context) (int, []int64, error) {
	now, err := c.owed(ctx)
	if err != nil {
		return 0, nil, err
	}
	var off []int64
	for id, apart := range now {
		if apart != c.owedApart[id] {
			off = append(off, id)
		}
	}
	return len(off), head(off), nil
}

// poStatuses is every PO's status by number.
func (c *checker) poStatuses(ctx context.Context) (map[int64]int64, error) {
	return c.pairs(ctx, c.poStatus)
}

// pairs are the rows of s, two integers each, as a map of the first to
// the second.
func (c *checker) pairs(ctx context.Context, s *store.Stmt) (map[int64]int64, error) {
	rows, err := c.db.Query(ctx, s)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]int64)
	for rows.Next() {
		var n, s int64
		if err := rows.Scan(&n, &s); err != nil {
			return nil, err
		}
		out[n] = s
	}
	return out, rows.Err()
}

// openPOs counts the POs not yet sent and those sent but not delivered.
func (c *checker) openPOs(ctx context.Context) (unsent, sent int64, err error) {
	rows, err := c.db.Query(ctx, c.openPOStmt)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var status, n int64
		if err := rows.Scan(&status, &n); err != nil {
			return 0, 0, err
		}
		if status == poUnsent {
			unsent = n
		} else {
			sent = n
		}
	}
	return unsent, sent, rows.Err()
}

func (c *checker) count(ctx context.Context, s *store.Stmt) (int64, error) {
	var n int64
	err := c.db.QueryRow(ctx, s).Scan(&n)
	return n, err
}

// Check proves, after the drain: every PO this run committed reached the
// emulator exactly once and no PO the database lacks did (the send of an
// aborted transaction); every delivery was applied once; orders and work
// orders match what the terminals completed.
func (a *app) Check(ctx context.Context, outcomes workload.Outcomes) ([]workload.Check, error) {
	completed := outcomes.Succeeded
	c := a.checker
	var checks []workload.Check

	po, err := a.poCheck(ctx)
	if err != nil {
		return nil, err
	}
	checks = append(checks, po)

	unsent, sent, err := c.openPOs(ctx)
	if err != nil {
		return nil, err
	}
	off, err := c.count(ctx, c.inventoryOff)
	if err != nil {
		return nil, err
	}
	d := a.dispatch
	detail := fmt.Sprintf("%d deliveries applied (%d more of POs already received, ignored); %d POs unsent and %d awaiting delivery after a drain of %v; %d parts whose quantity on order differs from their open PO lines; %s",
		d.deliveries.Load(), d.deliveriesAgain.Load(), unsent, sent, a.drain.tookTime(), off, d.resendSummary())
	if unsent > 0 || sent > 0 {
		switch a.drain.end.Load() {
		case drainInterrupted:
			detail += fmt.Sprintf(" (the drain was interrupted after %v, so these %d unsent and %d awaiting delivery were never waited for; the next run on this database sends them)", a.drain.tookTime(), unsent, sent)
		case drainOutOfBudget:
			detail += fmt.Sprintf(" (the drain gave up after %v)", drainTimeout)
		}
		if why := d.failures(); why != "" {
			detail += "; " + why
		}
	}
	checks = append(checks, workload.Check{
		Name:   "deliveries-applied-once",
		Passed: unsent == 0 && sent == 0 && off == 0,
		Detail: detail,
	})

	orders, err := c.count(ctx, c.orders)
	if err != nil {
		return nil, err
	}
	bad, err := c.count(ctx, c.badLines)
	if err != nil {
		return nil, err
	}
	orphans, err := c.count(ctx, c.orphanLarge)
	if err != nil {
		return nil, err
	}
	// A NewOrder in doubt may have added an order, a CancelOrder in doubt
	// removed one: the count may lie anywhere between.
	inDoubt := outcomes.InDoubtOrZero()
	want := c.ordersAtStart + completed[NewOrder] - completed[CancelOrder]
	lo, hi := want-inDoubt[CancelOrder], want+inDoubt[NewOrder]
	note := ""
	if lo != hi {
		note = fmt.Sprintf(" (%d NewOrder and %d CancelOrder in doubt: %d to %d accepted)", inDoubt[NewOrder], inDoubt[CancelOrder], lo, hi)
	}
	checks = append(checks, workload.Check{
		Name:   "orders-match-terminals",
		Passed: orders >= lo && orders <= hi && bad == 0 && orphans == 0,
		Detail: fmt.Sprintf("%d orders = %d loaded + %d NewOrder - %d CancelOrder (want %d%s); %d orders whose line count differs from their lines; %d large orders of cancelled orders", orders, c.ordersAtStart, completed[NewOrder], completed[CancelOrder], want, note, bad, orphans),
	})

	large, err := a.largeCheck(ctx)
	if err != nil {
		return nil, err
	}
	checks = append(checks, large)

	done, err := c.count(ctx, c.completed)
	if err != nil {
		return nil, err
	}
	largeDone, err := c.count(ctx, c.largeDone)
	if err != nil {
		return nil, err
	}
	largeDone -= c.largeDoneAtStart
	ok, note := workload.Reconcile(done-c.doneAtStart-completed[CompleteWorkOrder], inDoubt[CompleteWorkOrder])
	// The large-order lines' completions are counted apart: each of their
	// work orders went through the stations.
	largeOK, largeNote := workload.Reconcile(largeDone-a.largeCompleted.Load(), inDoubt[CompleteWorkOrder])
	checks = append(checks, workload.Check{
		Name:   "work-orders-completed",
		Passed: ok && largeOK,
		Detail: fmt.Sprintf("%d work orders completed in the run, %d CompleteWorkOrder by the lines%s; %d of them for large orders, %d completed by the large-order lines%s, which scheduled %d",
			done-c.doneAtStart, completed[CompleteWorkOrder], note, largeDone, a.largeCompleted.Load(), largeNote, a.largeScheduled.Load()),
	})

	owedOff, offIDs, err := c.balancesOff(ctx)
	if err != nil {
		return nil, err
	}
	checks = append(checks, workload.Check{
		Name:   "balances-match-orders",
		Passed: owedOff == 0,
		Detail: fmt.Sprintf("%d customers whose balance moved apart from their orders' totals %v (NewOrder adds an order's total to what its customer owes, ChangeOrder the change, CancelOrder takes it off)", owedOff, offIDs),
	})
	return checks, nil
}

// largeCheck: every waiting large order follows its line (the line
// exists, is over largeOrderQty, and has its quantity), and every line of
// this run's orders over largeOrderQty has a large order waiting or a
// work order scheduled for it.
func (a *app) largeCheck(ctx context.Context) (workload.Check, error) {
	c := a.checker
	var off, missing int64
	var err error
	if off, err = c.count(ctx, c.largeOff); err != nil {
		return workload.Check{}, err
	}
	if err = c.db.QueryRow(ctx, c.largeMissing, c.lastOrderAtStart).Scan(&missing); err != nil {
		return workload.Check{}, err
	}
	return workload.Check{
		Name:   "large-orders-follow-lines",
		Passed: off == 0 && missing == 0,
		Detail: fmt.Sprintf("%d waiting large orders whose line is at most %d units or of another quantity; %d lines over %d units of this run's orders with neither a large order nor a work order",
			off, largeOrderQty, missing, largeOrderQty),
	}, nil
}

// poCheck compares the database's POs of this run with the emulator's
// record. The database is the authority on what was sent: a PO is marked
// sent only after the emulator acknowledged it (under sync, the commit
// happens only if the send succeeded) and received when its delivery was
// applied. So a PO is "never sent" only when the database has it unsent
// and the emulator has no record of it. A PO the database has sent or
// received that the emulator does not list was sent all the same: the
// emulator restarted and lost its record (and, if the delivery was lost
// too, it was sent again; the deliveries check says whether it arrived).
// Counting those as never sent, as this check once did, listed hundreds of
// delivered POs as missing after an emulator restart. A PO at the emulator
// that the database lacks is the sync dispatch's flaw when one of its
// transactions sent it and then aborted (the application recorded it),
// and an error otherwise.
func (a *app) poCheck(ctx context.Context) (workload.Check, error) {
	c := a.checker
	committed, err := c.poStatuses(ctx)
	if err != nil {
		return workload.Check{}, err
	}
	for n := range c.sentBefore {
		delete(committed, n)
	}
	var neverSent, forgotten []int64
	if a.listErr != nil {
		for n, status := range committed {
			if status == poUnsent {
				neverSent = append(neverSent, n)
			}
		}
		return workload.Check{
			Name: "po-sent-exactly-once",
			Detail: fmt.Sprintf("%d POs committed, %d of them unsent by the database's account %v; the emulator's record could not be read, so nothing proves the others reached it once: %v",
				len(committed), len(neverSent), head(neverSent), a.listErr),
		}, nil
	}
	listed := a.listed
	atEmulator := make(map[int64]bool, len(listed))
	var orphans, aborted, duplicates []int64
	for _, p := range listed {
		atEmulator[p.PONumber] = true
		if _, ok := committed[p.PONumber]; !ok {
			if a.dispatch.sentByAborted(p.PONumber) {
				aborted = append(aborted, p.PONumber)
			} else {
				orphans = append(orphans, p.PONumber)
			}
		}
		if p.Received > 1 {
			duplicates = append(duplicates, p.PONumber)
		}
	}
	for n, status := range committed {
		switch {
		case atEmulator[n]:
		case status == poUnsent:
			neverSent = append(neverSent, n)
		default:
			forgotten = append(forgotten, n)
		}
	}
	detail := fmt.Sprintf("%d POs committed, %d at the emulator; %d committed but never sent %v; %d at the emulator that the database lacks and no aborted transaction sent %v; %d resent and answered duplicate (idempotent receiver)",
		len(committed), len(listed), len(neverSent), head(neverSent), len(orphans), head(orphans), len(duplicates))
	if len(aborted) > 0 {
		detail += fmt.Sprintf("; %d sent by sync transactions that then aborted %v (the reference's flaw: a send inside the transaction cannot be undone; --po-dispatch queue or poller sends after commit)", len(aborted), head(aborted))
	}
	if len(forgotten) > 0 {
		detail += fmt.Sprintf("; %d sent but unknown to the emulator %v (it lost its record: restarted)", len(forgotten), head(forgotten))
	}
	if o := a.dispatch.outbox; o != nil {
		detail += "; the PO relay: " + o.Stats().String()
	}
	if len(neverSent) > 0 && a.drain.end.Load() == drainInterrupted {
		detail += fmt.Sprintf(" (the drain was interrupted after %v, before the unsent ones went out)", a.drain.tookTime())
	}
	return workload.Check{
		Name:   "po-sent-exactly-once",
		Passed: len(neverSent) == 0 && len(orphans) == 0,
		Detail: detail,
	}, nil
}

// headLen is how many PO numbers a detail line names.
const headLen = 5

// head is the lowest few of ids, sorted, for a detail line; ids is left
// as it was.
func head(ids []int64) []int64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids[:min(len(ids), headLen)]
}
