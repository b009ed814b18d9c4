package tpcapp

import (
	"context"
	"fmt"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp/partner"
)

// The consistency checks after a run and its drain: what the database
// holds against what the emulated businesses saw committed, and the
// invariants the background processes keep.
var checkStatements = struct {
	stockBalance, totals, unshipped, shipmentsWithoutOrder, shipmentLines, pendingFlags, outboxed, unreceived, received, negative,
	linesWithoutOrder, orderLineCounts, shipments, unnoticed, noticed store.Statement
}{
	// An item's stock plus what shipped of it, less what was received for
	// it, never changes: the shipping agent moves quantity from the stock
	// to a shipped line, a receipt adds a reorder's.
	stockBalance: store.Statement{Name: "tpcapp-check-stock-balance", SQL: `SELECT s.s_i_id, s.s_qty + COALESCE(sh.q, 0) - COALESCE(r.q, 0) FROM stock s
		LEFT JOIN (SELECT ol_i_id, SUM(ol_qty) AS q FROM order_line WHERE ol_status = 'SHIPPED' GROUP BY ol_i_id) sh ON sh.ol_i_id = s.s_i_id
		LEFT JOIN (SELECT r_i_id, SUM(r_qty) AS q FROM reorder WHERE r_status = 'RECEIVED' GROUP BY r_i_id) r ON r.r_i_id = s.s_i_id`},
	totals: store.Statement{Name: "tpcapp-check-totals", SQL: `SELECT o.o_id, o.o_ship_type, o.o_sub_total, o.o_discount, o.o_tax, o.o_ship_cost, o.o_total,
		COALESCE(c.c_discount, -1), COALESCE(co.co_zone, -1), COALESCE(l.sub, -1), COALESCE(l.vol, 0)
		FROM orders o
		LEFT JOIN customer c ON c.c_id = o.o_c_id
		LEFT JOIN address ad ON ad.addr_id = o.o_ship_addr_id
		LEFT JOIN country co ON co.co_id = ad.addr_co_id
		LEFT JOIN (SELECT ol.ol_o_id, SUM(ol.ol_qty * ol.ol_price) AS sub, SUM(ol.ol_qty * i.i_volume) AS vol
			FROM order_line ol JOIN item i ON i.i_id = ol.ol_i_id GROUP BY ol.ol_o_id) l ON l.ol_o_id = o.o_id`},
	unshipped: store.Statement{Name: "tpcapp-check-unshipped", SQL: `SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM shipment s WHERE s.sh_o_id = o.o_id)
		OR o.o_status NOT IN ('SHIPPED', 'PARTIAL')`},
	shipmentsWithoutOrder: store.Statement{Name: "tpcapp-check-shipments-without-order", SQL: `SELECT COUNT(*) FROM shipment s WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.o_id = s.sh_o_id)`},
	// A shipment's line count is its order's shipped lines, and an order
	// is PARTIAL exactly when some line did not ship. The lines are
	// counted in one pass, grouped: a subquery per shipment would scan
	// order_line once per order where --indexes spec has no index on it.
	shipmentLines: store.Statement{Name: "tpcapp-check-shipment-lines", SQL: `SELECT COUNT(*) FROM shipment s JOIN orders o ON o.o_id = s.sh_o_id
		LEFT JOIN (SELECT ol_o_id, COUNT(*) AS n, SUM(CASE WHEN ol_status = 'SHIPPED' THEN 1 ELSE 0 END) AS shipped
			FROM order_line GROUP BY ol_o_id) l ON l.ol_o_id = s.sh_o_id
		WHERE s.sh_lines <> COALESCE(l.shipped, 0) OR (o.o_status = 'SHIPPED') <> (s.sh_lines = COALESCE(l.n, 0))`},
	// An item's stock is marked pending exactly while a reorder of it is.
	pendingFlags: store.Statement{Name: "tpcapp-check-pending", SQL: `SELECT COUNT(*) FROM stock s
		WHERE (s.s_pending = 1) <> EXISTS (SELECT 1 FROM reorder r WHERE r.r_i_id = s.s_i_id AND r.r_status = 'PENDING')
		OR (SELECT COUNT(*) FROM reorder r WHERE r.r_i_id = s.s_i_id AND r.r_status = 'PENDING') > 1`},
	outboxed:   store.Statement{Name: "tpcapp-check-outboxed", SQL: "SELECT (SELECT COUNT(*) FROM ship_outbox) + (SELECT COUNT(*) FROM reorder_outbox)"},
	unreceived: store.Statement{Name: "tpcapp-check-unreceived", SQL: "SELECT COUNT(*) FROM reorder WHERE r_status <> 'RECEIVED'"},
	received:   store.Statement{Name: "tpcapp-check-received", SQL: "SELECT COUNT(*) FROM reorder WHERE r_status = 'RECEIVED'"},
	negative:   store.Statement{Name: "tpcapp-check-negative", SQL: "SELECT COUNT(*) FROM stock WHERE s_qty < 0"},
	// Read from outside the sites (several app servers), the lines of the
	// orders committed are not counted by a service: every line belongs
	// to an order, and every order has 1..maxLines lines (CreateOrder
	// refuses others), grouped in one pass as shipmentLines is.
	linesWithoutOrder: store.Statement{Name: "tpcapp-check-lines-without-order", SQL: `SELECT COUNT(*) FROM order_line ol LEFT JOIN orders o ON o.o_id = ol.ol_o_id WHERE o.o_id IS NULL`},
	orderLineCounts: store.Statement{Name: "tpcapp-check-order-line-counts", SQL: fmt.Sprintf(`SELECT COUNT(*) FROM orders o
		LEFT JOIN (SELECT ol_o_id, COUNT(*) AS n FROM order_line GROUP BY ol_o_id) l ON l.ol_o_id = o.o_id
		WHERE COALESCE(l.n, 0) < 1 OR l.n > %d`, maxLines)},
	shipments: store.Statement{Name: "tpcapp-check-shipments", SQL: "SELECT COUNT(*) FROM shipment"},
	unnoticed: store.Statement{Name: "tpcapp-check-unnoticed", SQL: "SELECT COUNT(*) FROM shipment WHERE sh_noticed = 0"},
	noticed:   store.Statement{Name: "tpcapp-check-noticed", SQL: "SELECT COUNT(*) FROM shipment WHERE sh_noticed = 1"},
}

// checker holds the baseline a run's checks compare with.
type checker struct {
	db    *store.DB
	st    map[string]*store.Stmt
	count map[string]*store.Stmt
	// before are the tables' row counts at the start; balance the items'
	// stock balances.
	before  map[string]int64
	balance map[int64]int64
	// receivedBefore are the reorders received before the run,
	// shipmentsBefore the shipments, noticedBefore the shipments whose
	// notice SNE had acknowledged.
	receivedBefore, shipmentsBefore, noticedBefore int64
}

var countedTables = []string{"customer", "orders", "order_line"}

func newChecker(ctx context.Context, db *store.DB) (*checker, error) {
	c := &checker{db: db, st: make(map[string]*store.Stmt), count: make(map[string]*store.Stmt), before: make(map[string]int64)}
	q := &checkStatements
	for _, s := range []store.Statement{q.stockBalance, q.totals, q.unshipped, q.shipmentsWithoutOrder, q.shipmentLines, q.pendingFlags,
		q.outboxed, q.unreceived, q.received, q.negative, q.linesWithoutOrder, q.orderLineCounts, q.shipments, q.unnoticed, q.noticed} {
		p, err := db.Prepare(ctx, s)
		if err != nil {
			return nil, err
		}
		c.st[s.Name] = p
	}
	for _, t := range countedTables {
		p, err := db.Prepare(ctx, store.Statement{Name: "tpcapp-count-" + t, SQL: "SELECT COUNT(*) FROM " + t})
		if err != nil {
			return nil, err
		}
		c.count[t] = p
		var n int64
		if err := c.db.QueryRow(ctx, p).Scan(&n); err != nil {
			return nil, err
		}
		c.before[t] = n
	}
	var err error
	if c.balance, err = c.balances(ctx); err != nil {
		return nil, err
	}
	if err := c.scalar(ctx, q.shipments, &c.shipmentsBefore); err != nil {
		return nil, err
	}
	if err := c.scalar(ctx, q.noticed, &c.noticedBefore); err != nil {
		return nil, err
	}
	return c, c.scalar(ctx, q.received, &c.receivedBefore)
}

func (c *checker) scalar(ctx context.Context, s store.Statement, dst *int64) error {
	return c.db.QueryRow(ctx, c.st[s.Name]).Scan(dst)
}

func (c *checker) balances(ctx context.Context) (map[int64]int64, error) {
	rows, err := c.db.Query(ctx, c.st[checkStatements.stockBalance.Name])
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]int64)
	for rows.Next() {
		var id, b int64
		if err := rows.Scan(&id, &b); err != nil {
			return nil, err
		}
		out[id] = b
	}
	return out, rows.Err()
}

// backlog counts what the background processes have left.
func (c *checker) backlog(ctx context.Context) (backlog, error) {
	var b backlog
	q := &checkStatements
	for _, x := range []struct {
		s   store.Statement
		dst *int64
	}{{q.outboxed, &b.outboxed}, {q.unshipped, &b.unshipped}, {q.unreceived, &b.unreceived}, {q.unnoticed, &b.unnoticed}} {
		if err := c.scalar(ctx, x.s, x.dst); err != nil {
			return b, err
		}
	}
	return b, nil
}

// runFacts are what the run itself counted that the checks compare the
// database with.
type runFacts struct {
	// lines are the order lines of the successful CreateOrders; outside
	// is true when no site counted them (and the rest of the facts): the
	// checks read from outside the sites, over several app servers.
	lines                   int64
	outside                 bool
	shipped, shipDuplicates int64
	// relays says what the outboxes' relays did (in-doubt publishes).
	relays string
	// iceAccepted is the in-process ICE's count of first-time reorders;
	// iceKnown is false when ICE runs elsewhere and serves other runs too.
	iceAccepted, iceResent int64
	iceKnown               bool
	// noticed are the notices the shipping agents had acknowledged,
	// sneFailures their calls to SNE that failed (whose notice SNE may
	// have received all the same).
	noticed, sneFailures int64
	// sneAccepted, sneResent: the in-process SNE's count of orders
	// noticed the first time and of notices received again; sneOrders,
	// the orders it received notices of, each with how many; sneKnown is
	// false when SNE runs elsewhere.
	sneAccepted, sneResent int64
	sneOrders              map[int64]int
	sneKnown               bool
}

// Check verifies the database against what the businesses saw (done)
// and what the site committed and shipped.
func (s *site) Check(ctx context.Context, done workload.Outcomes) ([]workload.Check, error) {
	f := runFacts{lines: s.linesCommitted.Load(), shipped: s.ship.shipped.Load(), shipDuplicates: s.ship.shipDuplicates.Load(),
		relays: "the shipping relay: " + s.ship.shipOut.Stats().String() + "; the reorder relay: " + s.ship.reorderOut.Stats().String()}
	if ice := s.inProc[partner.ICE]; ice != nil {
		st := ice.Stats()
		f.iceAccepted, f.iceResent, f.iceKnown = st.Approved, st.Duplicates, true
	}
	f.noticed, f.sneFailures = s.ship.noticed.Load(), s.ship.sneFailures.Load()
	if sne := s.inProc[partner.SNE]; sne != nil {
		st := sne.Stats()
		f.sneAccepted, f.sneResent, f.sneOrders, f.sneKnown = st.Approved, st.Duplicates, sne.Notices(s.ship.runName), true
	}
	return s.checker.check(ctx, done, f)
}

func (c *checker) check(ctx context.Context, done workload.Outcomes, f runFacts) ([]workload.Check, error) {
	succeeded, inDoubt := done.Succeeded, done.InDoubtOrZero()
	var checks []workload.Check
	add := func(name string, passed bool, format string, args ...any) {
		checks = append(checks, workload.Check{Name: name, Passed: passed, Detail: fmt.Sprintf(format, args...)})
	}
	q := &checkStatements

	now := make(map[string]int64)
	for _, t := range countedTables {
		var n int64
		if err := c.db.QueryRow(ctx, c.count[t]).Scan(&n); err != nil {
			return nil, err
		}
		now[t] = n
	}
	for _, x := range []struct {
		name, table string
		op          int
	}{{"customers-match-NewCustomer", "customer", NewCustomer}, {"orders-match-CreateOrder", "orders", CreateOrder}} {
		ok, note := workload.Reconcile(now[x.table]-c.before[x.table]-succeeded[x.op], inDoubt[x.op])
		add(x.name, ok, "%d %s rows = %d before + %d successful %s (want %d)%s", now[x.table], x.table, c.before[x.table],
			succeeded[x.op], opNames[x.op], c.before[x.table]+succeeded[x.op], note)
	}
	var ok bool
	if f.outside {
		var orphans, miscounted int64
		if err := c.scalar(ctx, q.linesWithoutOrder, &orphans); err != nil {
			return nil, err
		}
		if err := c.scalar(ctx, q.orderLineCounts, &miscounted); err != nil {
			return nil, err
		}
		add("lines-belong-to-orders", orphans == 0 && miscounted == 0,
			"%d order lines of no order, %d orders without 1..%d lines (want 0, 0); %d order_line rows, %d before",
			orphans, miscounted, maxLines, now["order_line"], c.before["order_line"])
		var shipments int64
		if err := c.scalar(ctx, q.shipments, &shipments); err != nil {
			return nil, err
		}
		f.shipped = shipments - c.shipmentsBefore
	} else {
		lines := f.lines
		extra := now["order_line"] - c.before["order_line"] - lines
		ok = extra == 0 || (extra > 0 && extra <= inDoubt[CreateOrder]*maxLines)
		add("lines-match-CreateOrder", ok, "%d order_line rows = %d before + %d lines of the CreateOrders committed (want %d)",
			now["order_line"], c.before["order_line"], lines, c.before["order_line"]+lines)
	}

	var unshipped, orphans, badLines, badPending, outboxed, unreceived, received, negative, unnoticed, noticed int64
	for _, x := range []struct {
		s   store.Statement
		dst *int64
	}{{q.unshipped, &unshipped}, {q.shipmentsWithoutOrder, &orphans}, {q.shipmentLines, &badLines}, {q.pendingFlags, &badPending},
		{q.outboxed, &outboxed}, {q.unreceived, &unreceived}, {q.received, &received}, {q.negative, &negative},
		{q.unnoticed, &unnoticed}, {q.noticed, &noticed}} {
		if err := c.scalar(ctx, x.s, x.dst); err != nil {
			return nil, err
		}
	}
	relays := ""
	if f.relays != "" {
		relays = "; " + f.relays
	}
	shippedNote := fmt.Sprintf("%d shipped this run, %d redelivered and found shipped%s", f.shipped, f.shipDuplicates, relays)
	if f.outside {
		shippedNote = fmt.Sprintf("%d shipped this run, by the app servers' agents", f.shipped)
	}
	add("orders-shipped-once", unshipped == 0 && orphans == 0 && outboxed == 0,
		"%d orders without their one shipment, %d shipments of no order, %d outbox rows not relayed (want 0, 0, 0); %s",
		unshipped, orphans, outboxed, shippedNote)
	checks = append(checks, noticeCheck(unnoticed, noticed-c.noticedBefore, f))
	add("shipments-match-lines", badLines == 0, "%d shipments whose line count or order status disagree with the order's shipped lines (want 0)", badLines)
	add("no-negative-stock", negative == 0, "%d items with negative stock (want 0)", negative)

	balance, err := c.balances(ctx)
	if err != nil {
		return nil, err
	}
	var moved int64
	for id, b := range balance {
		if before, ok := c.balance[id]; !ok || before != b {
			moved++
		}
	}
	moved += int64(max(0, len(c.balance)-len(balance)))
	add("stock-balances", moved == 0, "%d items whose stock + shipped − received changed (want 0)", moved)

	receivedNow := received - c.receivedBefore
	detail := fmt.Sprintf("%d reorders not received, %d items whose pending mark disagrees with their reorders (want 0, 0); %d received this run",
		unreceived, badPending, receivedNow)
	ok = unreceived == 0 && badPending == 0
	if f.iceKnown {
		// The in-process ICE saw this run's reorders only: each accepted
		// once, and received once.
		ok = ok && f.iceAccepted == receivedNow
		detail += fmt.Sprintf("; ICE accepted %d reorders (want %d), %d sent again", f.iceAccepted, receivedNow, f.iceResent)
	}
	add("reorders-received-once", ok, "%s", detail)

	var wrong int64
	rows, err := c.db.Query(ctx, c.st[q.totals.Name])
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, sub, disc, tax, ship, total, discountBP, zone, lineSub, volume int64
		var shipType string
		if err := rows.Scan(&id, &shipType, &sub, &disc, &tax, &ship, &total, &discountBP, &zone, &lineSub, &volume); err != nil {
			return nil, err
		}
		wantShip := shipCost(shipType, zone, volume)
		wantSub, wantDisc, wantTax, wantTotal := totals([]Line{{Qty: 1, Price: lineSub}}, discountBP, wantShip)
		if discountBP < 0 || zone < 0 || lineSub < 0 || sub != wantSub || disc != wantDisc || tax != wantTax || ship != wantShip || total != wantTotal {
			wrong++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	add("totals-recompute", wrong == 0, "%d orders whose sub-total, discount, tax, shipping or total differ from their lines, customer and address (want 0)", wrong)
	return checks, nil
}

// noticeCheck: every shipment's notice acknowledged by SNE, and, with the
// in-process SNE, every order the run noticed received by SNE exactly
// once. A notice SNE received twice is allowed only where a call to SNE
// failed (SNE may have received the notice before the failure, and the
// agent, not knowing, sent it again); the run's notices this run are the
// shipments the database says were noticed since the start.
func noticeCheck(unnoticed, noticedNow int64, f runFacts) workload.Check {
	if f.outside {
		// Several app servers: their agents' counts and their SNEs stay
		// in their processes; the database still says what is unnoticed.
		return workload.Check{Name: "orders-noticed-once", Passed: unnoticed == 0,
			Detail: fmt.Sprintf("%d shipments whose notice SNE did not acknowledge (want 0); %d noticed this run, by the app servers' agents", unnoticed, noticedNow)}
	}
	ok := unnoticed == 0 && f.noticed == noticedNow
	detail := fmt.Sprintf("%d shipments whose notice SNE did not acknowledge (want 0); %d noticed this run, %d acknowledged to the shipping agents (want equal), %d calls to SNE failed and were retried",
		unnoticed, noticedNow, f.noticed, f.sneFailures)
	if f.sneKnown {
		var once, more int64
		for _, n := range f.sneOrders {
			if n == 1 {
				once++
			} else {
				more++
			}
		}
		ok = ok && f.sneAccepted == noticedNow && int64(len(f.sneOrders)) == noticedNow && f.sneResent <= f.sneFailures
		detail += fmt.Sprintf("; SNE received notices of %d orders (want %d): %d once, %d more than once (%d notices again, want at most the %d failed calls)",
			len(f.sneOrders), noticedNow, once, more, f.sneResent, f.sneFailures)
	}
	return workload.Check{Name: "orders-noticed-once", Passed: ok, Detail: detail}
}
