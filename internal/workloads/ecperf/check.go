package ecperf

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// checker holds the statements of the consistency checks and the
// baseline taken at the start of the run.
type checker struct {
	db                                                               *store.DB
	unsent, openPOStmt, poStatus, maxPO, orders, completed, badLines *store.Stmt
	inventoryOff, orphanLarge                                        *store.Stmt

	// The baseline: the POs sent before the run (not this run's to
	// check). POs left unsent by a run killed before sending them are
	// this run's to send.
	sentBefore    map[int64]bool
	ordersAtStart int64
	doneAtStart   int64
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
		{&c.orphanLarge, "SELECT COUNT(*) FROM m_largeorder lo WHERE NOT EXISTS (SELECT 1 FROM o_orders o WHERE o.o_id = lo.lo_o_id)"},
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
	return c, nil
}

// poStatuses is every PO's status by number.
func (c *checker) poStatuses(ctx context.Context) (map[int64]int64, error) {
	rows, err := c.db.Query(ctx, c.poStatus)
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
func (a *app) Check(ctx context.Context, completed []int64) ([]workload.Check, error) {
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
	detail := fmt.Sprintf("%d deliveries received; %d POs unsent and %d awaiting delivery after a drain of %v; %d parts whose quantity on order differs from their open PO lines",
		a.dispatch.deliveries.Load(), unsent, sent, a.drainTook.Round(100*time.Millisecond), off)
	if unsent > 0 || sent > 0 {
		if a.drainTimedOut.Load() {
			detail += fmt.Sprintf(" (the drain gave up after %v)", drainTimeout)
		}
		if why := a.dispatch.failures(); why != "" {
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
	want := c.ordersAtStart + completed[NewOrder] - completed[CancelOrder]
	checks = append(checks, workload.Check{
		Name:   "orders-match-terminals",
		Passed: orders == want && bad == 0 && orphans == 0,
		Detail: fmt.Sprintf("%d orders = %d loaded + %d NewOrder - %d CancelOrder (want %d); %d orders whose line count differs from their lines; %d large orders of cancelled orders", orders, c.ordersAtStart, completed[NewOrder], completed[CancelOrder], want, bad, orphans),
	})

	done, err := c.count(ctx, c.completed)
	if err != nil {
		return nil, err
	}
	checks = append(checks, workload.Check{
		Name:   "work-orders-completed",
		Passed: done-c.doneAtStart == completed[CompleteWorkOrder],
		Detail: fmt.Sprintf("%d work orders completed in the run, %d CompleteWorkOrder by the lines; %d scheduled by the large-order line", done-c.doneAtStart, completed[CompleteWorkOrder], a.largeScheduled.Load()),
	})
	return checks, nil
}

// poCheck compares the database's POs of this run with the emulator's.
func (a *app) poCheck(ctx context.Context) (workload.Check, error) {
	c := a.checker
	committed, err := c.poStatuses(ctx)
	if err != nil {
		return workload.Check{}, err
	}
	for n := range c.sentBefore {
		delete(committed, n)
	}
	listed := a.listed
	atEmulator := make(map[int64]bool, len(listed))
	var orphans, duplicates []int64
	for _, p := range listed {
		atEmulator[p.PONumber] = true
		if _, ok := committed[p.PONumber]; !ok {
			orphans = append(orphans, p.PONumber)
		}
		if p.Received > 1 {
			duplicates = append(duplicates, p.PONumber)
		}
	}
	var missing []int64
	for n := range committed {
		if !atEmulator[n] {
			missing = append(missing, n)
		}
	}
	detail := fmt.Sprintf("%d POs committed, %d at the emulator; %d committed but never sent %v; %d sent by transactions that then aborted %v; %d resent and answered duplicate (idempotent receiver)",
		len(committed), len(listed), len(missing), head(missing), len(orphans), head(orphans), len(duplicates))
	return workload.Check{
		Name:   "po-sent-exactly-once",
		Passed: len(missing) == 0 && len(orphans) == 0,
		Detail: detail,
	}, nil
}

// head is the first few of ids, for a detail line.
func head(ids []int64) []int64 {
	slices.Sort(ids)
	return ids[:min(len(ids), 5)]
}
