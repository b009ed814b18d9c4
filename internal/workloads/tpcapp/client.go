package tpcapp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/tierbench/tierbench/internal/workload"
)

// eb is an emulated business: it runs business sessions back to back,
// each of a length drawn from --session-length and each for a customer
// drawn anew, so that the requests spread over the whole database (the
// seed's DBT4 ran fixed-length sessions). No think time: TPC-App has none.
type eb struct {
	*ebs
	id  int
	rng *rand.Rand
	// left is the current session's remaining requests.
	left     int
	customer int64
	// made counts this EB's requests, for unique names and references.
	made int64
}

var _ workload.Client = (*eb)(nil)

func (c *eb) Do(ctx context.Context, step workload.Step) error {
	if c.left == 0 {
		c.left = c.sessions.Draw(c.rng)
		c.customer = 1 + c.rng.Int64N(c.pop.Customers)
	}
	c.left--
	c.made++
	s, t := c.methods, step.Thread
	var err error
	switch step.Op {
	case NewCustomer:
		_, err = s.NewCustomer(ctx, t, c.newCustomer())
	case ChangePaymentMethod:
		_, err = s.ChangePaymentMethod(ctx, t, ChangePaymentMethodRequest{CustomerID: c.customer, Payment: c.payment()})
	case CreateOrder:
		_, err = s.CreateOrder(ctx, t, c.order())
	case OrderStatus:
		_, err = s.OrderStatus(ctx, t, OrderStatusRequest{CustomerID: c.customer, Passwd: Passwd(Uname(c.customer)), Count: 1 + c.rng.IntN(5)})
	case NewProducts:
		_, err = s.NewProducts(ctx, t, NewProductsRequest{Subject: Subjects[c.rng.IntN(len(Subjects))], CutoffMinutes: 1 + c.rng.IntN(10), Limit: 50})
	case ProductDetail:
		_, err = s.ProductDetail(ctx, t, ProductDetailRequest{ItemIDs: c.items()})
	case ChangeItem:
		_, err = s.ChangeItem(ctx, t, ChangeItemRequest{ItemIDs: c.items()})
	default:
		err = fmt.Errorf("tpcapp: no operation %d", step.Op)
	}
	return err
}

// tag names this EB's n-th request uniquely within the run.
func (c *eb) tag() string {
	return c.runTag + "-" + strconv.Itoa(c.id) + "-" + strconv.FormatInt(c.made, 10)
}

func (c *eb) payment() Payment {
	if c.rng.IntN(10) < 7 {
		return Payment{Method: CreditCard, CardNumber: fmt.Sprintf("5%015d", c.rng.Int64N(1e15)), CardName: "Buyer " + c.tag(), CardExpiry: "06/30"}
	}
	return Payment{Method: PurchaseOrder, POID: "PO-" + c.tag()}
}

func (c *eb) newCustomer() NewCustomerRequest {
	tag := c.tag()
	// Half of the new customers are at an address the database has.
	addr := c.gen.addressOf(1 + c.rng.Int64N(c.pop.Addresses))
	if c.rng.IntN(2) == 0 {
		addr.Street1 = tag + " New Street"
	}
	return NewCustomerRequest{Uname: "N" + tag, Passwd: Passwd("N" + tag), BusinessName: "Business " + tag,
		BusinessInfo: "A new business", FirstName: "First", LastName: "Last", Phone: "555-0100", Email: tag + "@business.example",
		Address: addr, Payment: c.payment(), Discount: c.rng.Int64N(5001)}
}

// order is 1..5 lines of distinct items, 1..10 of each, shipped mostly to
// the customer's own address and otherwise to its second one.
func (c *eb) order() CreateOrderRequest {
	lines := make([]LineRequest, 0, 5)
	for n := 1 + c.rng.IntN(5); len(lines) < n; {
		item := 1 + c.rng.Int64N(c.pop.Items)
		dup := false
		for _, l := range lines {
			dup = dup || l.ItemID == item
		}
		if !dup {
			lines = append(lines, LineRequest{ItemID: item, Qty: 1 + c.rng.Int64N(10)})
		}
	}
	addr := 2*c.customer - 1
	if c.rng.IntN(10) == 0 {
		addr++
	}
	return CreateOrderRequest{CustomerID: c.customer, ShipAddress: c.gen.addressOf(addr),
		ShipType: ShipTypes[c.rng.IntN(len(ShipTypes))], Lines: lines, Reference: c.tag()}
}

func (c *eb) items() []int64 {
	ids := make([]int64, 1+c.rng.IntN(5))
	for i := range ids {
		ids[i] = 1 + c.rng.Int64N(c.pop.Items)
	}
	return ids
}
