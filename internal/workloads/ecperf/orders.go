package ecperf

import (
	"context"
	"errors"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/workload"
)

// Business exceptions: outcomes the kit's rules expect, handled and
// counted, not failures.
var (
	ErrBadCredit    = workload.Business("credit check failed")
	ErrUnknownOrder = workload.Business("no such order (cancelled)")
	ErrOrderShipped = workload.Business("order already shipped")
	// ErrNoLargeOrder: a large-order line's poll found no large order
	// waiting, which ends its round (the driver skips the stations).
	ErrNoLargeOrder = workload.Business("no large order waiting")
)

// ErrNoWorkOrder: a station found no work order to act on. The driver
// skips a line's stations when scheduling failed, so this is a fault, and
// an error rather than a business outcome: it must not count as a
// completed work order in BBops/min.
var ErrNoWorkOrder = errors.New("the line has no work order at this station")

// errLargeOrderCancelled: the large order the line found was cancelled
// with its order before the line scheduled it; the line moves on.
var errLargeOrderCancelled = errors.New("large order cancelled before it was scheduled")

// bean is one server thread's session facades of the four domains, as
// container-managed transactions.
type bean struct {
	app    *app
	thread int
	lines  []*container.Instance
	bom    []*container.Instance
	found  []*container.Instance
	// pending is ChangeOrder's: the order's waiting large orders.
	pending []*container.Instance
	// sentInTx are the POs the current transaction sent (sync dispatch):
	// if it then aborts, they are at the emulator and not in the database.
	sentInTx []int64
}

func (b *bean) begin(ctx context.Context) (*container.Tx, error) {
	return b.app.ctr.Begin(ctx, b.thread)
}

// fail rolls tx back and returns err, "no such entity" as notFound.
func fail(tx *container.Tx, err, notFound error) error {
	tx.Rollback()
	if errors.Is(err, container.ErrNotFound) && notFound != nil {
		return notFound
	}
	return err
}

// orderLine is a line a client asks for. reprice: the corporate domain
// changes the line's item's price in the same transaction, after the
// order has read it (--price-change-every).
type orderLine struct {
	item    int64
	qty     int64
	reprice bool
}

// repriced is an item's price after a price change: its last unit
// toggled, so that every change changes it and prices stay where the
// population put them, within one.
func repriced(price int64) int64 { return price ^ 1 }

// newOrder is the customer domain's NewOrder: a new customer is created
// first (corporate domain); the corporate domain checks credit and gives
// the discount; each line over largeOrderQty becomes a large order for
// manufacturing.
func (b *bean) newOrder(ctx context.Context, customer int64, isNew bool, lines []orderLine) (int64, error) {
	a := b.app
	tx, err := b.begin(ctx)
	if err != nil {
		return 0, err
	}
	now := time.Now().UTC()
	var c *container.Instance
	if isNew {
		if c, err = b.createCustomer(tx, now); err != nil {
			return 0, fail(tx, err, nil)
		}
	} else if c, err = tx.Find(a.customer, container.Key{A: customer}); err != nil {
		return 0, fail(tx, err, nil)
	}
	var total int64
	for _, l := range lines {
		item, err := tx.Find(a.item, container.Key{A: l.item})
		if err != nil {
			return 0, fail(tx, err, nil)
		}
		total += item.Int(iPrice) * l.qty * (100 - item.Int(iDiscount)) / 100
	}
	for _, l := range lines {
		if !l.reprice {
			continue
		}
		// Written through the read-write bean: Item is the read-only one.
		rw, err := tx.Find(a.itemRW, container.Key{A: l.item})
		if err != nil {
			return 0, fail(tx, err, nil)
		}
		rw.SetInt(iPrice, repriced(rw.Int(iPrice)))
	}
	discount := a.discountOf(c.Int(cYTDPayment), c.Time(cSince), isNew, now)
	total = total * (100 - discount) / 100
	if !goodFor(c.String(cCredit), c.Int(cBalance), c.Int(cCreditLimit), c.Int(cYTDPayment), total) {
		tx.Rollback()
		return 0, ErrBadCredit
	}
	// The corporate domain keeps what the customer owes: the order is on
	// its account until paid (no transaction of the kit pays).
	c.SetInt(cBalance, c.Int(cBalance)+total)
	o, err := tx.Create(a.order, container.Key{})
	if err != nil {
		return 0, fail(tx, err, nil)
	}
	id := o.Key().A
	o.SetInt(oCustomer, c.Key().A)
	o.SetInt(oLineCount, int64(len(lines)))
	o.SetInt(oDiscount, discount)
	o.SetInt(oTotal, total)
	o.SetInt(oStatus, orderOpen)
	o.SetTime(oEntryDate, now)
	o.SetTime(oShipDate, now.Add(shipAfter))
	for n, l := range lines {
		ol, err := tx.Create(a.orderLine, container.Key{A: id, B: int64(n + 1)})
		if err != nil {
			return 0, fail(tx, err, nil)
		}
		ol.SetInt(olItem, l.item)
		ol.SetInt(olQty, l.qty)
		ol.SetInt(olStatus, orderOpen)
		ol.SetTime(olShipDate, now.Add(shipAfter))
		if l.qty > largeOrderQty {
			if err := b.createLargeOrder(tx, id, int64(n+1), l, now); err != nil {
				return 0, fail(tx, err, nil)
			}
		}
	}
	return id, tx.Commit()
}

// createLargeOrder is manufacturing's CreateLargeOrder for line n of
// order id: a line over largeOrderQty is built by a large-order line.
func (b *bean) createLargeOrder(tx *container.Tx, id, n int64, l orderLine, now time.Time) error {
	lo, err := tx.Create(b.app.largeOrder, container.Key{})
	if err != nil {
		return err
	}
	lo.SetInt(loOrder, id)
	lo.SetInt(loOrderLine, n)
	lo.SetInt(loAssembly, l.item) // items are the assemblies
	lo.SetInt(loQty, l.qty)
	lo.SetTime(loDueDate, now.Add(shipAfter))
	return nil
}

// goodFor is the corporate domain's credit check of an order of total for
// a customer, which reads its payment history: bad credit is refused;
// otherwise what it owes (balance) with this order must be within its
// credit limit, or covered by what it has paid this year (a customer
// paying that much is good for it). Our reading of the kit's rule, which
// the digest gives only as the flag and the limit.
func goodFor(credit string, balance, limit, ytd, total int64) bool {
	if credit == badCredit {
		return false
	}
	owed := balance + total
	return owed <= limit || owed <= ytd
}

// rebalance moves order o's customer's balance by delta (a change or a
// cancel of the order), in tx.
func (b *bean) rebalance(tx *container.Tx, o *container.Instance, delta int64) error {
	if delta == 0 {
		return nil
	}
	c, err := tx.Find(b.app.customer, container.Key{A: o.Int(oCustomer)})
	if err != nil {
		return err
	}
	c.SetInt(cBalance, c.Int(cBalance)+delta)
	return nil
}

// createCustomer is the corporate domain's new customer, in both the
// corporate and the order-entry table.
func (b *bean) createCustomer(tx *container.Tx, now time.Time) (*container.Instance, error) {
	a := b.app
	c, err := tx.Create(a.customer, container.Key{})
	if err != nil {
		return nil, err
	}
	oc, err := tx.Create(a.orderCustomer, container.Key{A: c.Key().A})
	if err != nil {
		return nil, err
	}
	for f, v := range []string{"New", "Customer", "1 Main Street", "", "Springfield", "CA", "USA", "940000000", "5550100", "Purchasing"} {
		c.SetString(f, v)
		oc.SetString(f, v)
	}
	c.SetTime(cSince, now)
	oc.SetTime(cSince, now)
	c.SetInt(cBalance, 0)
	c.SetString(cCredit, goodCredit)
	c.SetInt(cCreditLimit, newCustomerCredit)
	c.SetInt(cYTDPayment, 0)
	return c, nil
}

// discountOf is the corporate domain's discount rules, best first.
func (a *app) discountOf(ytd int64, since time.Time, isNew bool, now time.Time) int64 {
	switch {
	case ytd > 300_000_00:
		return a.discounts["platinum"]
	case ytd > 200_000_00:
		return a.discounts["gold"]
	case ytd > 100_000_00:
		return a.discounts["silver"]
	case isNew:
		return a.discounts["firsttime"]
	case now.Sub(since) > 5*365*24*time.Hour:
		return a.discounts["longtime"]
	}
	return a.discounts["none"]
}

// openOrder begins a transaction and finds order id, which must be open;
// on error the transaction is over.
func (b *bean) openOrder(ctx context.Context, id int64) (*container.Tx, *container.Instance, error) {
	tx, err := b.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	o, err := tx.Find(b.app.order, container.Key{A: id})
	if err != nil {
		return nil, nil, fail(tx, err, ErrUnknownOrder)
	}
	if o.Int(oStatus) != orderOpen {
		tx.Rollback()
		return nil, nil, ErrOrderShipped
	}
	return tx, o, nil
}

// changeOrder changes the quantities of an open order's lines (each by
// the client's delta, at least 1 left), its total and the customer's
// balance. order is the order to touch the line numbers in (those past the
// order's last are skipped). A line that crosses largeOrderQty upwards
// becomes a large order; one that falls back to it or under loses the
// large order manufacturing has not yet scheduled, and a large order
// still waiting follows its line's new quantity. A large order already
// scheduled stands: its work order is under way.
func (b *bean) changeOrder(ctx context.Context, id int64, order []int64, delta int64) error {
	a := b.app
	tx, o, err := b.openOrder(ctx, id)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	var total int64
	pending := false // b.pending holds the order's waiting large orders
	for _, n := range order {
		if n > o.Int(oLineCount) {
			continue
		}
		ol, err := tx.Find(a.orderLine, container.Key{A: id, B: n})
		if err != nil {
			return fail(tx, err, ErrUnknownOrder)
		}
		was := ol.Int(olQty)
		qty := max(1, was+delta)
		ol.SetInt(olQty, qty)
		if was > largeOrderQty || qty > largeOrderQty {
			if !pending {
				if b.pending, err = tx.FindMany(a.largeOrder, "byOrder", b.pending[:0], id); err != nil {
					return fail(tx, err, nil)
				}
				pending = true
			}
			if err := b.followLine(tx, id, n, ol.Int(olItem), was, qty, now); err != nil {
				return fail(tx, err, nil)
			}
		}
		item, err := tx.Find(a.item, container.Key{A: ol.Int(olItem)})
		if err != nil {
			return fail(tx, err, nil)
		}
		total += item.Int(iPrice) * qty * (100 - item.Int(iDiscount)) / 100
	}
	total = total * (100 - o.Int(oDiscount)) / 100
	if err := b.rebalance(tx, o, total-o.Int(oTotal)); err != nil {
		return fail(tx, err, nil)
	}
	o.SetInt(oTotal, total)
	return tx.Commit()
}

// followLine makes line n of order id's large orders follow its quantity,
// changed from was to qty; b.pending are the order's waiting large orders.
func (b *bean) followLine(tx *container.Tx, id, n, item, was, qty int64, now time.Time) error {
	var waiting *container.Instance
	for _, lo := range b.pending {
		if lo.Int(loOrderLine) == n {
			waiting = lo
		}
	}
	switch {
	case was <= largeOrderQty: // crossed upwards
		return b.createLargeOrder(tx, id, n, orderLine{item: item, qty: qty}, now)
	case waiting == nil: // scheduled already: its work order stands
	case qty <= largeOrderQty:
		tx.Remove(waiting)
	default:
		waiting.SetInt(loQty, qty)
	}
	return nil
}

// cancelOrder removes an open order, its lines, touched in order, and the
// large orders manufacturing has not yet scheduled for it.
func (b *bean) cancelOrder(ctx context.Context, id int64, order []int64) error {
	a := b.app
	tx, o, err := b.openOrder(ctx, id)
	if err != nil {
		return err
	}
	for _, n := range order {
		if n > o.Int(oLineCount) {
			continue
		}
		ol, err := tx.Find(a.orderLine, container.Key{A: id, B: n})
		if err != nil {
			return fail(tx, err, ErrUnknownOrder)
		}
		tx.Remove(ol)
	}
	if b.found, err = tx.FindMany(a.largeOrder, "byOrder", b.found[:0], id); err != nil {
		return fail(tx, err, nil)
	}
	for _, lo := range b.found {
		tx.Remove(lo)
	}
	if err := b.rebalance(tx, o, -o.Int(oTotal)); err != nil {
		return fail(tx, err, nil)
	}
	tx.Remove(o)
	return tx.Commit()
}

// orderStatus reads an order and its lines.
func (b *bean) orderStatus(ctx context.Context, id int64) error {
	a := b.app
	tx, err := a.ctr.BeginReadOnly(ctx, b.thread)
	if err != nil {
		return err
	}
	if _, err := tx.Find(a.order, container.Key{A: id}); err != nil {
		return fail(tx, err, ErrUnknownOrder)
	}
	if b.lines, err = tx.FindMany(a.orderLine, "byOrder", b.lines[:0], id); err != nil {
		return fail(tx, err, nil)
	}
	return tx.Commit()
}

// customerStatus lists a customer's latest orders.
func (b *bean) customerStatus(ctx context.Context, customer int64) error {
	a := b.app
	tx, err := a.ctr.BeginReadOnly(ctx, b.thread)
	if err != nil {
		return err
	}
	if b.found, err = tx.FindMany(a.order, "byCustomer", b.found[:0], customer); err != nil {
		return fail(tx, err, nil)
	}
	return tx.Commit()
}
