package ecperf

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/tierbench/tierbench/internal/workload"
)

// The terminal groups, in the order of app.Groups.
const (
	orderEntryGroup = iota
	plannedLineGroup
	largeOrderGroup
)

// maxOrderLines is the most lines a NewOrder has (the kit: 1 to 5).
const maxOrderLines = 5

// allLines are the line numbers an order can have.
var allLines = [maxOrderLines]int64{1, 2, 3, 4, 5}

// ownOrders is how many of its recent orders an order-entry terminal
// remembers for ChangeOrder, CancelOrder and OrderStatus.
const ownOrders = 16

// client is one terminal: an order-entry user, a planned line or the
// large-order line.
type client struct {
	app   *app
	group int
	rng   *rand.Rand
	// orders are the order-entry terminal's recent orders.
	orders []int64
	// workOrder is the planned line's work order at its stations (0:
	// none, its scheduling failed).
	workOrder int64
	large     []workOrder
	// line is a large-order line's number among them.
	line      int
	lineOrder []int64
}

func newClient(a *app, group, n int, rng *rand.Rand) *client {
	return &client{app: a, group: group, line: n, rng: rng}
}

// nuRand is TPC's non-uniform random NURand(A, x, y).
func nuRand(rng *rand.Rand, a, x, y int64) int64 {
	return ((rng.Int64N(a+1) | (x + rng.Int64N(y-x+1))) % (y - x + 1)) + x
}

// customer draws a customer id: NURand(255, 1, 100·C); ids above 75·C
// stand for new customers (the kit's rule).
func (c *client) customer() (id int64, isNew bool) {
	id = nuRand(c.rng, 255, 1, 100*c.app.pop.C)
	return id, id > c.app.pop.Customers
}

// lines draws a NewOrder's lines: 1 to 5; 90% of orders total 10..20
// units, 10% total 100..200 (their lines become large orders).
func (c *client) lines() []orderLine {
	n := 1 + c.rng.Int64N(maxOrderLines)
	total := 10 + c.rng.Int64N(11)
	if c.rng.IntN(10) == 0 {
		total = 100 + c.rng.Int64N(101)
	}
	out := make([]orderLine, n)
	left := total
	for i := range out {
		qty := left / (n - int64(i))
		left -= qty
		out[i] = orderLine{item: 1 + c.rng.Int64N(c.app.pop.Items), qty: max(qty, 1)}
	}
	if every := c.app.priceEvery; every > 0 && c.rng.IntN(every) == 0 {
		out[0].reprice = true
	}
	return out
}

// anOrder is one of the terminal's own orders, else any loaded one.
func (c *client) anOrder() int64 {
	if len(c.orders) > 0 {
		return c.orders[c.rng.IntN(len(c.orders))]
	}
	return 1 + c.rng.Int64N(c.app.pop.Orders)
}

// touchOrder is the order a ChangeOrder or CancelOrder touches an order's
// lines in: key order, or under --unsorted-access the kit's (as the
// client happens to list them), which deadlocks against key order.
func (c *client) touchOrder() []int64 {
	c.lineOrder = append(c.lineOrder[:0], allLines[:]...)
	if c.app.unsorted {
		c.rng.Shuffle(len(c.lineOrder), func(i, j int) { c.lineOrder[i], c.lineOrder[j] = c.lineOrder[j], c.lineOrder[i] })
	}
	return c.lineOrder
}

func (c *client) remember(order int64) {
	if len(c.orders) == ownOrders {
		copy(c.orders, c.orders[1:])
		c.orders = c.orders[:ownOrders-1]
	}
	c.orders = append(c.orders, order)
}

func (c *client) forget(order int64) {
	for i, o := range c.orders {
		if o == order {
			c.orders = append(c.orders[:i], c.orders[i+1:]...)
			return
		}
	}
}

// takeLargeOrder is a large-order line's poll: it schedules a work order
// for the first waiting large order no other line took first (each line
// starts at its own place in the list, so they seldom collide), which
// its stations then move on. None waiting is ErrNoLargeOrder, which ends
// the line's round: its stations have nothing to act on.
func (c *client) takeLargeOrder(ctx context.Context, b domains) error {
	c.workOrder = 0
	var err error
	if c.large, err = b.largeOrders(ctx, c.large[:0]); err != nil {
		return err
	}
	for i := range c.large {
		w := c.large[(c.line+i)%len(c.large)]
		n, err := b.scheduleWorkOrder(ctx, w)
		if errors.Is(err, errLargeOrderCancelled) {
			continue // cancelled, or taken by another line
		} else if err != nil {
			return err
		}
		c.workOrder = n
		c.app.largeScheduled.Add(1)
		return nil
	}
	return ErrNoLargeOrder
}

// Do runs one step as one transaction (the large-order line: one per
// large order found).
func (c *client) Do(ctx context.Context, step workload.Step) error {
	b := c.app.beans[step.Thread]
	switch step.Op {
	case NewOrder:
		customer, isNew := c.customer()
		id, err := b.newOrder(ctx, customer, isNew, c.lines())
		if err == nil {
			c.remember(id)
		}
		return err
	case ChangeOrder:
		delta := 1 + c.rng.Int64N(3)
		if c.rng.IntN(2) == 0 {
			delta = -delta
		}
		order := c.anOrder()
		return b.changeOrder(ctx, order, c.touchOrder(), delta)
	case CancelOrder:
		order := c.anOrder()
		err := b.cancelOrder(ctx, order, c.touchOrder())
		if err == nil || err == ErrUnknownOrder || err == ErrOrderShipped {
			c.forget(order)
		}
		return err
	case OrderStatus:
		return b.orderStatus(ctx, c.anOrder())
	case CustomerStatus:
		id := nuRand(c.rng, 255, 1, c.app.pop.Customers)
		return b.customerStatus(ctx, id)
	case ScheduleWorkOrder:
		qty := int64(11)
		if c.rng.IntN(4) == 0 {
			qty = 12
		}
		c.workOrder = 0
		n, err := b.scheduleWorkOrder(ctx, workOrder{assembly: 1 + c.rng.Int64N(c.app.pop.Assemblies), qty: qty})
		if err == nil {
			c.workOrder = n
		}
		return err
	case UpdateWorkOrder:
		if c.workOrder == 0 {
			return ErrNoWorkOrder
		}
		return b.updateWorkOrder(ctx, c.workOrder)
	case CompleteWorkOrder:
		if c.workOrder == 0 {
			return ErrNoWorkOrder
		}
		err := b.completeWorkOrder(ctx, c.workOrder)
		c.workOrder = 0
		if err == nil && c.group == largeOrderGroup {
			c.app.largeCompleted.Add(1)
		}
		return err
	case LargeOrderLine:
		return c.takeLargeOrder(ctx, b)
	}
	return fmt.Errorf("ecperf: no operation %d", step.Op)
}
