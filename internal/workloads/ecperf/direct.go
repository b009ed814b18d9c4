package ecperf

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// domains are the four domains' transactions as the terminals and the
// agents call them, on one server thread: the entity container's session
// beans (bean), or hand-written SQL (direct, --persistence direct).
type domains interface {
	newOrder(ctx context.Context, customer int64, isNew bool, lines []orderLine) (int64, error)
	changeOrder(ctx context.Context, id int64, order []int64, delta int64) error
	cancelOrder(ctx context.Context, id int64, order []int64) error
	orderStatus(ctx context.Context, id int64) error
	customerStatus(ctx context.Context, customer int64) error
	scheduleWorkOrder(ctx context.Context, w workOrder) (int64, error)
	updateWorkOrder(ctx context.Context, number int64) error
	completeWorkOrder(ctx context.Context, number int64) error
	largeOrders(ctx context.Context, buf []workOrder) ([]workOrder, error)
	sendUnsent(ctx context.Context, number int64) error
	receive(ctx context.Context, d emulator.Delivery) (applied bool, err error)
}

var (
	_ domains = (*bean)(nil)
	_ domains = (*direct)(nil)
)

// locking is sql as a locking read where the database has them (SQLite
// runs one writer at a time and has none): the hand-written counterpart
// of the container's database concurrency.
func locking(name, sql string) store.Statement {
	return store.Statement{Name: name, SQL: sql, Dialects: map[store.Dialect]string{
		store.Postgres: sql + " FOR UPDATE", store.MySQL: sql + " FOR UPDATE"}}
}

// The hand-written SQL of each transaction: the statements the container
// issues for the same work, less what the application knows it need not
// do. Rows read to be changed are read with locks (as the container's
// database concurrency does); writes whose results the transaction does
// not need are queued to go with the COMMIT; rows are touched in the same
// order as the beans touch them, so the same deadlocks arise (or not).
var directSQL = struct {
	customer, newCustomer, newOrderCustomer, item, reprice, owe, insertOrder, newLine, newLarge,
	order, line, setLineQty, waitingLarge, setLargeQty, dropLarge, setOrderTotal,
	dropLine, dropLargeOfOrder, dropOrder, orderRow, orderLines, customerOrders,
	takeLarge, newWorkOrder, bom, bomByLine, stock, setStock, supplierOf, newPO, newPOLine, newOutbox,
	advance, toComplete, complete, addStock, pendingLarge,
	po, poLines, markSent, poForUpdate, poLine, settleLine, deliver, markReceived store.Statement
}{
	customer: locking("d-customer", "SELECT c_since, c_balance, c_credit, c_credit_limit, c_ytd_payment FROM c_customer WHERE c_id = ?"),
	newCustomer: store.InsertReturning("d-new-customer", "INSERT INTO c_customer (c_first, c_last, c_street1, c_street2, c_city, c_state, c_country, c_zip, c_phone, c_contact, c_since, c_balance, c_credit, c_credit_limit, c_ytd_payment) "+
		"VALUES ('New', 'Customer', '1 Main Street', '', 'Springfield', 'CA', 'USA', '940000000', '5550100', 'Purchasing', ?, 0, ?, ?, 0)", "c_id"),
	newOrderCustomer: store.Statement{Name: "d-new-o-customer", SQL: "INSERT INTO o_customer (c_id, c_first, c_last, c_street1, c_street2, c_city, c_state, c_country, c_zip, c_phone, c_contact, c_since) " +
		"VALUES (?, 'New', 'Customer', '1 Main Street', '', 'Springfield', 'CA', 'USA', '940000000', '5550100', 'Purchasing', ?)"},
	item:             store.Statement{Name: "d-item", SQL: "SELECT i_price, i_discount FROM o_item WHERE i_id = ?"},
	reprice:          store.Statement{Name: "d-reprice", SQL: "UPDATE o_item SET i_price = i_price + 1 - 2 * (i_price % 2) WHERE i_id = ?"},
	owe:              store.Statement{Name: "d-owe", SQL: "UPDATE c_customer SET c_balance = c_balance + ? WHERE c_id = ?"},
	insertOrder:      store.InsertReturning("d-new-order", "INSERT INTO o_orders (o_c_id, o_ol_cnt, o_discount, o_total, o_status, o_entry_date, o_ship_date) VALUES (?, ?, ?, ?, ?, ?, ?)", "o_id"),
	newLine:          store.Statement{Name: "d-new-line", SQL: "INSERT INTO o_orderline (ol_o_id, ol_id, ol_i_id, ol_qty, ol_status, ol_ship_date) VALUES (?, ?, ?, ?, ?, ?)"},
	newLarge:         store.Statement{Name: "d-new-large", SQL: "INSERT INTO m_largeorder (lo_o_id, lo_ol_id, lo_assembly_id, lo_qty, lo_due_date) VALUES (?, ?, ?, ?, ?)"},
	order:            locking("d-order", "SELECT o_c_id, o_ol_cnt, o_discount, o_total, o_status FROM o_orders WHERE o_id = ?"),
	line:             locking("d-line", "SELECT ol_i_id, ol_qty FROM o_orderline WHERE ol_o_id = ? AND ol_id = ?"),
	setLineQty:       store.Statement{Name: "d-set-line-qty", SQL: "UPDATE o_orderline SET ol_qty = ? WHERE ol_o_id = ? AND ol_id = ?"},
	waitingLarge:     locking("d-waiting-large", "SELECT lo_id FROM m_largeorder WHERE lo_o_id = ? AND lo_ol_id = ?"),
	setLargeQty:      store.Statement{Name: "d-set-large-qty", SQL: "UPDATE m_largeorder SET lo_qty = ? WHERE lo_id = ?"},
	dropLarge:        store.Statement{Name: "d-drop-large", SQL: "DELETE FROM m_largeorder WHERE lo_id = ?"},
	setOrderTotal:    store.Statement{Name: "d-set-order-total", SQL: "UPDATE o_orders SET o_total = ? WHERE o_id = ?"},
	dropLine:         store.Statement{Name: "d-drop-line", SQL: "DELETE FROM o_orderline WHERE ol_o_id = ? AND ol_id = ?"},
	dropLargeOfOrder: store.Statement{Name: "d-drop-large-of-order", SQL: "DELETE FROM m_largeorder WHERE lo_o_id = ?"},
	dropOrder:        store.Statement{Name: "d-drop-order", SQL: "DELETE FROM o_orders WHERE o_id = ?"},
	// JDBC for reading: the rows a listing shows, in one statement each.
	orderRow:       store.Statement{Name: "d-order-row", SQL: "SELECT o_c_id, o_ol_cnt, o_discount, o_total, o_status, o_entry_date, o_ship_date FROM o_orders WHERE o_id = ?"},
	orderLines:     store.Statement{Name: "d-order-lines", SQL: "SELECT ol_id, ol_i_id, ol_qty, ol_status, ol_ship_date FROM o_orderline WHERE ol_o_id = ? ORDER BY ol_id"},
	customerOrders: store.Statement{Name: "d-customer-orders", SQL: fmt.Sprintf("SELECT o_id, o_ol_cnt, o_discount, o_total, o_status, o_entry_date, o_ship_date FROM o_orders WHERE o_c_id = ? ORDER BY o_id DESC LIMIT %d", customerStatusOrders)},
	takeLarge:      locking("d-take-large", "SELECT lo_qty FROM m_largeorder WHERE lo_id = ?"),
	newWorkOrder:   store.InsertReturning("d-new-work-order", "INSERT INTO m_workorder (wo_o_id, wo_ol_id, wo_status, wo_assembly_id, wo_orig_qty, wo_comp_qty, wo_due_date, wo_start_date) VALUES (?, ?, ?, ?, ?, 0, ?, ?)", "wo_number"),
	bom:            store.Statement{Name: "d-bom", SQL: "SELECT b_comp_id, b_qty FROM m_bom WHERE b_assembly_id = ? ORDER BY b_comp_id"},
	bomByLine:      store.Statement{Name: "d-bom-by-line", SQL: "SELECT b_comp_id, b_qty FROM m_bom WHERE b_assembly_id = ? ORDER BY b_line_no"},
	// A part's stock and its marks in one round trip; only the inventory
	// row is locked (no transaction changes m_parts).
	stock: store.Statement{Name: "d-stock", SQL: "SELECT i.in_qty, i.in_ordered, p.p_lomark, p.p_himark FROM m_inventory i JOIN m_parts p ON p.p_id = i.in_p_id WHERE i.in_p_id = ?",
		Dialects: map[store.Dialect]string{
			store.Postgres: "SELECT i.in_qty, i.in_ordered, p.p_lomark, p.p_himark FROM m_inventory i JOIN m_parts p ON p.p_id = i.in_p_id WHERE i.in_p_id = ? FOR UPDATE OF i",
			store.MySQL:    "SELECT i.in_qty, i.in_ordered, p.p_lomark, p.p_himark FROM m_inventory i JOIN m_parts p ON p.p_id = i.in_p_id WHERE i.in_p_id = ? FOR UPDATE"}},
	setStock:     store.Statement{Name: "d-set-stock", SQL: "UPDATE m_inventory SET in_qty = ?, in_ordered = ?, in_act_date = ? WHERE in_p_id = ?"},
	supplierOf:   store.Statement{Name: "d-supplier-of", SQL: "SELECT sc_supp_id, sc_del_date FROM s_supp_component WHERE sc_p_id = ? ORDER BY sc_price, sc_del_date, sc_supp_id LIMIT 1"},
	newPO:        store.InsertReturning("d-new-po", "INSERT INTO s_purchase_order (po_supp_id, po_site_id, po_status, po_created) VALUES (?, ?, ?, ?)", "po_number"),
	newPOLine:    store.Statement{Name: "d-new-po-line", SQL: "INSERT INTO s_purchase_orderline (pol_po_id, pol_number, pol_p_id, pol_qty, pol_balance, pol_deldate, pol_message) VALUES (?, ?, ?, ?, ?, ?, '')"},
	newOutbox:    store.Statement{Name: "d-new-outbox", SQL: "INSERT INTO s_outbox (ob_po_number, ob_created) VALUES (?, ?)"},
	advance:      store.Statement{Name: "d-advance", SQL: fmt.Sprintf("UPDATE m_workorder SET wo_status = wo_status + 1 WHERE wo_number = ? AND wo_status < %d", woCompleted-1)},
	toComplete:   locking("d-to-complete", fmt.Sprintf("SELECT wo_assembly_id, wo_orig_qty FROM m_workorder WHERE wo_number = ? AND wo_status < %d", woCompleted)),
	complete:     store.Statement{Name: "d-complete", SQL: fmt.Sprintf("UPDATE m_workorder SET wo_status = %d, wo_comp_qty = wo_orig_qty WHERE wo_number = ?", woCompleted)},
	addStock:     store.Statement{Name: "d-add-stock", SQL: "UPDATE m_inventory SET in_qty = in_qty + ?, in_act_date = ? WHERE in_p_id = ?"},
	pendingLarge: store.Statement{Name: "d-pending-large", SQL: fmt.Sprintf("SELECT lo_id, lo_o_id, lo_ol_id, lo_assembly_id, lo_qty FROM m_largeorder ORDER BY lo_id LIMIT %d", largeOrdersPerPoll)},
	po:           store.Statement{Name: "d-po", SQL: "SELECT po_supp_id, po_site_id, po_status, po_created FROM s_purchase_order WHERE po_number = ?"},
	poLines:      store.Statement{Name: "d-po-lines", SQL: "SELECT pol_number, pol_p_id, pol_qty, pol_deldate FROM s_purchase_orderline WHERE pol_po_id = ? ORDER BY pol_number"},
	markSent:     store.Statement{Name: "d-mark-sent", SQL: fmt.Sprintf("UPDATE s_purchase_order SET po_status = %d WHERE po_number = ? AND po_status = %d", poSent, poUnsent)},
	poForUpdate:  locking("d-po-for-update", "SELECT po_status FROM s_purchase_order WHERE po_number = ?"),
	poLine:       locking("d-po-line", "SELECT pol_p_id, pol_balance FROM s_purchase_orderline WHERE pol_po_id = ? AND pol_number = ?"),
	settleLine:   store.Statement{Name: "d-settle-line", SQL: "UPDATE s_purchase_orderline SET pol_balance = 0, pol_deldate = ? WHERE pol_po_id = ? AND pol_number = ?"},
	deliver:      store.Statement{Name: "d-deliver", SQL: "UPDATE m_inventory SET in_qty = in_qty + ?, in_ordered = in_ordered - ?, in_act_date = ? WHERE in_p_id = ?"},
	markReceived: store.Statement{Name: "d-mark-received", SQL: fmt.Sprintf("UPDATE s_purchase_order SET po_status = %d WHERE po_number = ?", poReceived)},
}

// directStmts are directSQL prepared, shared by the threads.
type directStmts struct {
	customer, newCustomer, newOrderCustomer, item, reprice, owe, insertOrder, newLine, newLarge,
	order, line, setLineQty, waitingLarge, setLargeQty, dropLarge, setOrderTotal,
	dropLine, dropLargeOfOrder, dropOrder, orderRow, orderLines, customerOrders,
	takeLarge, newWorkOrder, bom, bomByLine, stock, setStock, supplierOf, newPO, newPOLine, newOutbox,
	advance, toComplete, complete, addStock, pendingLarge,
	po, poLines, markSent, poForUpdate, poLine, settleLine, deliver, markReceived *store.Stmt
}

func prepareDirect(ctx context.Context, db *store.DB) (*directStmts, error) {
	q, s := &directSQL, &directStmts{}
	for _, p := range []struct {
		dst **store.Stmt
		st  store.Statement
	}{
		{&s.customer, q.customer}, {&s.newCustomer, q.newCustomer}, {&s.newOrderCustomer, q.newOrderCustomer},
		{&s.item, q.item}, {&s.reprice, q.reprice}, {&s.owe, q.owe}, {&s.insertOrder, q.insertOrder}, {&s.newLine, q.newLine}, {&s.newLarge, q.newLarge},
		{&s.order, q.order}, {&s.line, q.line}, {&s.setLineQty, q.setLineQty}, {&s.waitingLarge, q.waitingLarge},
		{&s.setLargeQty, q.setLargeQty}, {&s.dropLarge, q.dropLarge}, {&s.setOrderTotal, q.setOrderTotal},
		{&s.dropLine, q.dropLine}, {&s.dropLargeOfOrder, q.dropLargeOfOrder}, {&s.dropOrder, q.dropOrder},
		{&s.orderRow, q.orderRow}, {&s.orderLines, q.orderLines}, {&s.customerOrders, q.customerOrders},
		{&s.takeLarge, q.takeLarge}, {&s.newWorkOrder, q.newWorkOrder}, {&s.bom, q.bom}, {&s.bomByLine, q.bomByLine},
		{&s.stock, q.stock}, {&s.setStock, q.setStock}, {&s.supplierOf, q.supplierOf}, {&s.newPO, q.newPO},
		{&s.newPOLine, q.newPOLine}, {&s.newOutbox, q.newOutbox}, {&s.advance, q.advance}, {&s.toComplete, q.toComplete},
		{&s.complete, q.complete}, {&s.addStock, q.addStock}, {&s.pendingLarge, q.pendingLarge},
		{&s.po, q.po}, {&s.poLines, q.poLines}, {&s.markSent, q.markSent}, {&s.poForUpdate, q.poForUpdate},
		{&s.poLine, q.poLine}, {&s.settleLine, q.settleLine}, {&s.deliver, q.deliver}, {&s.markReceived, q.markReceived},
	} {
		var err error
		if *p.dst, err = db.Prepare(ctx, p.st); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// direct is one server thread's hand-written SQL of the four domains, on
// the thread's database session.
type direct struct {
	*directStmts
	app *app
	db  *store.Session
	// sentInTx: as bean's.
	sentInTx []int64
	comps    []component
}

// component is a BOM line: a part and how many of it one assembly takes.
type component struct{ part, qty int64 }

// directFail rolls tx back and returns err, "no such row" as notFound.
func directFail(ctx context.Context, tx *store.Tx, err, notFound error) error {
	tx.Rollback(ctx)
	if errors.Is(err, store.ErrNotFound) && notFound != nil {
		return notFound
	}
	return err
}

func (d *direct) newOrder(ctx context.Context, customer int64, isNew bool, lines []orderLine) (int64, error) {
	a := d.app
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	now := time.Now().UTC()
	var since time.Time
	var balance, limit, ytd int64
	credit := goodCredit
	if isNew {
		since, limit = now, newCustomerCredit
		if customer, err = store.InsertID(ctx, tx, d.newCustomer, now, goodCredit, int64(newCustomerCredit)); err != nil {
			return 0, directFail(ctx, tx, err, nil)
		}
		if _, err = tx.Exec(ctx, d.newOrderCustomer, customer, now); err != nil {
			return 0, directFail(ctx, tx, err, nil)
		}
	} else if err = tx.QueryRow(ctx, d.customer, customer).Scan(&since, &balance, &credit, &limit, &ytd); err != nil {
		return 0, directFail(ctx, tx, err, nil)
	}
	var total int64
	for _, l := range lines {
		var price, discount int64
		if err := tx.QueryRow(ctx, d.item, l.item).Scan(&price, &discount); err != nil {
			return 0, directFail(ctx, tx, err, nil)
		}
		total += price * l.qty * (100 - discount) / 100
	}
	discount := a.discountOf(ytd, since, isNew, now)
	total = total * (100 - discount) / 100
	if !goodFor(credit, balance, limit, ytd, total) {
		tx.Rollback(ctx)
		return 0, ErrBadCredit
	}
	id, err := store.InsertID(ctx, tx, d.insertOrder, customer, int64(len(lines)), discount, total, int64(orderOpen), now, now.Add(shipAfter))
	if err != nil {
		return 0, directFail(ctx, tx, err, nil)
	}
	for _, l := range lines {
		if l.reprice { // repriced, as the beans do
			tx.Queue(d.reprice, l.item)
		}
	}
	tx.Queue(d.owe, total, customer)
	for n, l := range lines {
		tx.Queue(d.newLine, id, int64(n+1), l.item, l.qty, int64(orderOpen), now.Add(shipAfter))
		if l.qty > largeOrderQty {
			tx.Queue(d.newLarge, id, int64(n+1), l.item, l.qty, now.Add(shipAfter))
		}
	}
	return id, tx.Commit(ctx)
}

// openOrder begins a transaction and reads order id, locked, which must
// be open; on error the transaction is over.
func (d *direct) openOrder(ctx context.Context, id int64) (tx *store.Tx, customer, lines, discount, total int64, err error) {
	if tx, err = d.db.Begin(ctx); err != nil {
		return nil, 0, 0, 0, 0, err
	}
	var status int64
	if err = tx.QueryRow(ctx, d.order, id).Scan(&customer, &lines, &discount, &total, &status); err != nil {
		return nil, 0, 0, 0, 0, directFail(ctx, tx, err, ErrUnknownOrder)
	}
	if status != orderOpen {
		tx.Rollback(ctx)
		return nil, 0, 0, 0, 0, ErrOrderShipped
	}
	return tx, customer, lines, discount, total, nil
}

func (d *direct) changeOrder(ctx context.Context, id int64, order []int64, delta int64) error {
	tx, customer, count, discount, was, err := d.openOrder(ctx, id)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	var total int64
	for _, n := range order {
		if n > count {
			continue
		}
		var item, old int64
		if err := tx.QueryRow(ctx, d.line, id, n).Scan(&item, &old); err != nil {
			return directFail(ctx, tx, err, ErrUnknownOrder)
		}
		qty := max(1, old+delta)
		tx.Queue(d.setLineQty, qty, id, n)
		if old > largeOrderQty || qty > largeOrderQty {
			if err := d.followLine(ctx, tx, id, n, item, old, qty, now); err != nil {
				return directFail(ctx, tx, err, nil)
			}
		}
		var price, off int64
		if err := tx.QueryRow(ctx, d.item, item).Scan(&price, &off); err != nil {
			return directFail(ctx, tx, err, nil)
		}
		total += price * qty * (100 - off) / 100
	}
	total = total * (100 - discount) / 100
	if total != was {
		tx.Queue(d.owe, total-was, customer)
	}
	tx.Queue(d.setOrderTotal, total, id)
	return tx.Commit(ctx)
}

// followLine: as bean.followLine.
func (d *direct) followLine(ctx context.Context, tx *store.Tx, id, n, item, was, qty int64, now time.Time) error {
	if was <= largeOrderQty {
		tx.Queue(d.newLarge, id, n, item, qty, now.Add(shipAfter))
		return nil
	}
	var lo int64
	err := tx.QueryRow(ctx, d.waitingLarge, id, n).Scan(&lo)
	switch {
	case errors.Is(err, store.ErrNotFound): // scheduled already: its work order stands
		return nil
	case err != nil:
		return err
	case qty <= largeOrderQty:
		tx.Queue(d.dropLarge, lo)
	default:
		tx.Queue(d.setLargeQty, qty, lo)
	}
	return nil
}

func (d *direct) cancelOrder(ctx context.Context, id int64, order []int64) error {
	tx, customer, count, _, total, err := d.openOrder(ctx, id)
	if err != nil {
		return err
	}
	for _, n := range order {
		if n > count {
			continue
		}
		if _, err := tx.Exec(ctx, d.dropLine, id, n); err != nil {
			return directFail(ctx, tx, err, nil)
		}
	}
	tx.Queue(d.dropLargeOfOrder, id)
	if total != 0 {
		tx.Queue(d.owe, -total, customer)
	}
	tx.Queue(d.dropOrder, id)
	return tx.Commit(ctx)
}

// orderStatus reads an order and its lines, without a transaction: JDBC
// for reading.
func (d *direct) orderStatus(ctx context.Context, id int64) error {
	var customer, lines, discount, total, status int64
	var entry, ship time.Time
	err := d.db.QueryRow(ctx, d.orderRow, id).Scan(&customer, &lines, &discount, &total, &status, &entry, &ship)
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownOrder
	} else if err != nil {
		return err
	}
	rows, err := d.db.Query(ctx, d.orderLines, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n, item, qty, st int64
		if err := rows.Scan(&n, &item, &qty, &st, &ship); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (d *direct) customerStatus(ctx context.Context, customer int64) error {
	rows, err := d.db.Query(ctx, d.customerOrders, customer)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, lines, discount, total, status int64
		var entry, ship time.Time
		if err := rows.Scan(&id, &lines, &discount, &total, &status, &entry, &ship); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (d *direct) scheduleWorkOrder(ctx context.Context, w workOrder) (int64, error) {
	a := d.app
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	d.sentInTx = d.sentInTx[:0]
	now := time.Now().UTC()
	if w.largeOrder != 0 {
		if err := tx.QueryRow(ctx, d.takeLarge, w.largeOrder).Scan(&w.qty); err != nil {
			return 0, directFail(ctx, tx, err, errLargeOrderCancelled)
		}
		tx.Queue(d.dropLarge, w.largeOrder)
	}
	number, err := store.InsertID(ctx, tx, d.newWorkOrder, w.order, w.line, int64(woOpen), w.assembly, w.qty, now.Add(shipAfter), now)
	if err != nil {
		return 0, directFail(ctx, tx, err, nil)
	}
	bom := d.bom
	if a.unsorted {
		bom = d.bomByLine
	}
	if d.comps, err = d.components(ctx, tx, bom, w.assembly); err != nil {
		return 0, directFail(ctx, tx, err, nil)
	}
	var reorders []reorder
	for _, c := range d.comps {
		var qty, ordered, lo, hi int64
		if err := tx.QueryRow(ctx, d.stock, c.part).Scan(&qty, &ordered, &lo, &hi); err != nil {
			return 0, directFail(ctx, tx, err, nil)
		}
		qty -= c.qty * w.qty
		if available := qty + ordered; available <= lo {
			reorders = append(reorders, reorder{part: c.part, qty: hi - available})
			ordered += hi - available
		}
		tx.Queue(d.setStock, qty, ordered, now, c.part)
	}
	if len(reorders) > 0 {
		if err := d.purchase(ctx, tx, reorders, now); err != nil {
			a.dispatch.abortedAfterSending(d.sentInTx)
			return 0, directFail(ctx, tx, err, nil)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		a.dispatch.abortedAfterSending(d.sentInTx)
		return 0, err
	}
	if len(reorders) > 0 {
		a.dispatch.committed()
	}
	return number, nil
}

func (d *direct) components(ctx context.Context, tx *store.Tx, s *store.Stmt, assembly int64) ([]component, error) {
	rows, err := tx.Query(ctx, s, assembly)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := d.comps[:0]
	for rows.Next() {
		var c component
		if err := rows.Scan(&c.part, &c.qty); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// purchase: as bean.purchase.
func (d *direct) purchase(ctx context.Context, tx *store.Tx, reorders []reorder, now time.Time) error {
	a := d.app
	choices := make([]choice, 0, len(reorders))
	for _, r := range reorders {
		c := choice{reorder: r}
		err := tx.QueryRow(ctx, d.supplierOf, r.part).Scan(&c.supplier, &c.lead)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("ecperf: no supplier sells part %d", r.part)
		} else if err != nil {
			return err
		}
		choices = append(choices, c)
	}
	status := a.dispatch.newPOStatus()
	for _, po := range byPO(choices) {
		number, err := store.InsertID(ctx, tx, d.newPO, po[0].supplier, int64(siteID), status, now)
		if err != nil {
			return err
		}
		for n, c := range po {
			tx.Queue(d.newPOLine, number, int64(n+1), c.part, c.qty, c.qty, now.Add(time.Duration(c.lead)*a.dispatch.unit))
		}
		err = a.dispatch.created(ctx, number, po, &d.sentInTx, func() error {
			tx.Queue(d.newOutbox, number, now)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// updateWorkOrder is one statement, in autocommit.
func (d *direct) updateWorkOrder(ctx context.Context, number int64) error {
	r, err := d.db.Exec(ctx, d.advance, number)
	if err != nil {
		return err
	}
	if r.RowsAffected == 0 {
		return ErrNoWorkOrder
	}
	return nil
}

func (d *direct) completeWorkOrder(ctx context.Context, number int64) error {
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return err
	}
	var assembly, qty int64
	if err := tx.QueryRow(ctx, d.toComplete, number).Scan(&assembly, &qty); err != nil {
		return directFail(ctx, tx, err, ErrNoWorkOrder)
	}
	tx.Queue(d.complete, number)
	tx.Queue(d.addStock, qty, time.Now().UTC(), assembly)
	return tx.Commit(ctx)
}

func (d *direct) largeOrders(ctx context.Context, buf []workOrder) ([]workOrder, error) {
	rows, err := d.db.Query(ctx, d.pendingLarge)
	if err != nil {
		return buf, err
	}
	defer rows.Close()
	for rows.Next() {
		var w workOrder
		if err := rows.Scan(&w.largeOrder, &w.order, &w.line, &w.assembly, &w.qty); err != nil {
			return buf, err
		}
		buf = append(buf, w)
	}
	return buf, rows.Err()
}

// sendUnsent: as bean.sendUnsent, its reads without a transaction.
func (d *direct) sendUnsent(ctx context.Context, number int64) error {
	a := d.app
	var status int64
	var created time.Time
	doc := emulator.PO{PONumber: number}
	if err := d.db.QueryRow(ctx, d.po, number).Scan(&doc.SupplierID, &doc.SiteID, &status, &created); err != nil {
		return err
	}
	if status != poUnsent {
		return nil
	}
	rows, err := d.db.Query(ctx, d.poLines, number)
	if err != nil {
		return err
	}
	unit := a.dispatch.unit
	for rows.Next() {
		var n, part, qty int64
		var due time.Time
		if err := rows.Scan(&n, &part, &qty, &due); err != nil {
			rows.Close()
			return err
		}
		lead := int(due.Sub(created).Round(unit) / unit)
		doc.Lines = append(doc.Lines, emulator.POLine{Line: int(n), PartID: strconv.FormatInt(part, 10), Qty: int(qty), LeadTime: lead})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := a.dispatch.send(ctx, doc); err != nil {
		return err
	}
	_, err = d.db.Exec(ctx, d.markSent, number)
	return err
}

func (d *direct) receive(ctx context.Context, del emulator.Delivery) (bool, error) {
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return false, err
	}
	var status int64
	if err := tx.QueryRow(ctx, d.poForUpdate, del.PONumber).Scan(&status); err != nil {
		return false, directFail(ctx, tx, err, nil)
	}
	if status == poReceived {
		tx.Rollback(ctx)
		return false, nil
	}
	lines := slices.Clone(del.Lines)
	if !d.app.unsorted {
		slices.SortFunc(lines, func(x, y emulator.DeliveryLine) int { return cmp.Compare(partID(x.PartID), partID(y.PartID)) })
	}
	now := time.Now().UTC()
	for _, l := range lines {
		var part, balance int64
		if err := tx.QueryRow(ctx, d.poLine, del.PONumber, int64(l.Line)).Scan(&part, &balance); err != nil {
			return false, directFail(ctx, tx, err, nil)
		}
		tx.Queue(d.settleLine, now, del.PONumber, int64(l.Line))
		// In the delivery's order, as the beans: a queued write runs at the
		// commit, after every lock this loop takes, so the inventory rows
		// are written now.
		if _, err := tx.Exec(ctx, d.deliver, balance, balance, now, part); err != nil {
			return false, directFail(ctx, tx, err, nil)
		}
	}
	tx.Queue(d.markReceived, del.PONumber)
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return true, nil
}
