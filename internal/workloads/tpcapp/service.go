package tpcapp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp/partner"
)

// Data is the persistence of the business methods: what they read and
// write in one transaction each, apart from the calls to partners, which
// never happen inside a transaction (a partner's 500 ms would hold the
// transaction's locks). direct.go implements it in SQL. thread is the
// server thread the call runs on (its database session).
type Data interface {
	InsertCustomer(ctx context.Context, thread int, r NewCustomerRequest) (int64, error)
	// SetPayment changes a customer's payment; ErrNoCustomer if none.
	SetPayment(ctx context.Context, thread int, customer int64, p Payment) error
	// CustomerPayment is a customer's payment and discount (basis points).
	CustomerPayment(ctx context.Context, thread int, customer int64) (Payment, int64, error)
	// PlaceOrder stores the order: its shipping address (unless present),
	// the lines with their status by stock, the totals, and the order's
	// place on the shipping queue, in one transaction.
	PlaceOrder(ctx context.Context, thread int, o OrderDraft) (Order, error)
	// CustomerOrders are the customer's business name, password and last
	// count orders with their lines; ErrNoCustomer if none.
	CustomerOrders(ctx context.Context, thread int, customer int64, count int) (name, passwd string, orders []Order, err error)
	NewProducts(ctx context.Context, thread int, subject string, since time.Time, limit int) ([]Product, error)
	ProductDetails(ctx context.Context, thread int, ids []int64) ([]Detail, error)
	SetPubDates(ctx context.Context, thread int, ids []int64, at time.Time) error
}

// OrderDraft is what PlaceOrder stores: the request, and what the service
// learnt before the transaction (the customer's discount, the payment's
// authorization).
type OrderDraft struct {
	CreateOrderRequest
	Payment    string
	DiscountBP int64
	AuthCode   string
	Date       time.Time
}

// ErrNoCustomer: the request names a customer that does not exist.
var ErrNoCustomer = errors.New("no such customer")

// Partners are the external services the methods call.
type Partners struct {
	POV, PGE *partner.Client
}

// Service is the application server's business methods over a Data. It
// is safe for concurrent use, each call on its own server thread.
type Service struct {
	data     Data
	partners Partners
	now      func() time.Time
}

// NewService returns the business methods over data, calling partners.
func NewService(data Data, partners Partners) *Service {
	return &Service{data: data, partners: partners, now: func() time.Time { return time.Now().UTC().Truncate(time.Second) }}
}

// Limits of a request, so that one cannot ask for the whole catalogue.
const (
	maxLines       = 20
	maxQty         = 100
	maxItemsPerReq = 20
	maxOrderCount  = 20
	maxNewProducts = 500
	minCutoff      = 1 // minutes
	maxCutoff      = 10
)

func badRequest(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}

// RequestError is a request the method cannot run as it is (a client's
// bug, not a business outcome): the fronts answer it 400.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

func checkPayment(p Payment) error {
	switch p.Method {
	case CreditCard:
		if p.CardNumber == "" {
			return badRequest("payment by credit card needs card_number")
		}
	case PurchaseOrder:
		if p.POID == "" {
			return badRequest("payment by purchase order needs po_id")
		}
	default:
		return badRequest("payment method %q: want %s or %s", p.Method, CreditCard, PurchaseOrder)
	}
	return nil
}

// verifyPO asks POV when the payment is by purchase order; a decline is a
// business exception.
func (s *Service) verifyPO(ctx context.Context, p Payment, customer string) error {
	if p.Method != PurchaseOrder {
		return nil
	}
	_, err := s.partners.POV.Verify(ctx, partner.VerifyRequest{POID: p.POID, Customer: customer})
	if errors.Is(err, partner.ErrDeclined) {
		return workload.Business("purchase order " + p.POID + " not approved by POV")
	}
	return err
}

func (s *Service) NewCustomer(ctx context.Context, thread int, r NewCustomerRequest) (NewCustomerResult, error) {
	if r.Uname == "" || r.BusinessName == "" {
		return NewCustomerResult{}, badRequest("uname and business_name are required")
	}
	if r.Discount < 0 || r.Discount > 5000 {
		return NewCustomerResult{}, badRequest("discount %d: want 0..5000 basis points", r.Discount)
	}
	if err := checkPayment(r.Payment); err != nil {
		return NewCustomerResult{}, err
	}
	if err := s.verifyPO(ctx, r.Payment, r.Uname); err != nil {
		return NewCustomerResult{}, err
	}
	id, err := s.data.InsertCustomer(ctx, thread, r)
	return NewCustomerResult{CustomerID: id}, err
}

func (s *Service) ChangePaymentMethod(ctx context.Context, thread int, r ChangePaymentMethodRequest) (ChangePaymentMethodResult, error) {
	if err := checkPayment(r.Payment); err != nil {
		return ChangePaymentMethodResult{}, err
	}
	if err := s.verifyPO(ctx, r.Payment, fmt.Sprint(r.CustomerID)); err != nil {
		return ChangePaymentMethodResult{}, err
	}
	if err := s.data.SetPayment(ctx, thread, r.CustomerID, r.Payment); err != nil {
		return ChangePaymentMethodResult{}, err
	}
	return ChangePaymentMethodResult{PaymentMethod: r.Payment.Method}, nil
}

func (s *Service) CreateOrder(ctx context.Context, thread int, r CreateOrderRequest) (CreateOrderResult, error) {
	if len(r.Lines) == 0 || len(r.Lines) > maxLines {
		return CreateOrderResult{}, badRequest("%d lines: want 1..%d", len(r.Lines), maxLines)
	}
	seen := make(map[int64]bool, len(r.Lines))
	for _, l := range r.Lines {
		if l.Qty < 1 || l.Qty > maxQty {
			return CreateOrderResult{}, badRequest("item %d: quantity %d, want 1..%d", l.ItemID, l.Qty, maxQty)
		}
		if seen[l.ItemID] {
			return CreateOrderResult{}, badRequest("item %d ordered on two lines", l.ItemID)
		}
		seen[l.ItemID] = true
	}
	if _, ok := shipBase[r.ShipType]; !ok {
		return CreateOrderResult{}, badRequest("ship type %q: want one of %v", r.ShipType, ShipTypes)
	}
	pay, discount, err := s.data.CustomerPayment(ctx, thread, r.CustomerID)
	if err != nil {
		return CreateOrderResult{}, err
	}
	d := OrderDraft{CreateOrderRequest: r, Payment: pay.Method, DiscountBP: discount, Date: s.now()}
	// Lines in item order: every transaction that touches stock rows
	// touches them in the same order, so two cannot deadlock on them.
	d.Lines = slices.Clone(r.Lines)
	slices.SortFunc(d.Lines, func(a, b LineRequest) int { return int(a.ItemID - b.ItemID) })
	if pay.Method == CreditCard {
		dec, err := s.partners.PGE.Authorize(ctx, partner.AuthorizeRequest{CardNumber: pay.CardNumber, CardName: pay.CardName,
			Expiry: pay.CardExpiry, Reference: r.Reference})
		if errors.Is(err, partner.ErrDeclined) {
			return CreateOrderResult{}, workload.Business("credit card declined by PGE")
		}
		if err != nil {
			return CreateOrderResult{}, err
		}
		d.AuthCode = dec.AuthCode
	}
	o, err := s.data.PlaceOrder(ctx, thread, d)
	return CreateOrderResult{Order: o}, err
}

func (s *Service) OrderStatus(ctx context.Context, thread int, r OrderStatusRequest) (OrderStatusResult, error) {
	if r.Count < 1 || r.Count > maxOrderCount {
		return OrderStatusResult{}, badRequest("count %d: want 1..%d", r.Count, maxOrderCount)
	}
	name, passwd, orders, err := s.data.CustomerOrders(ctx, thread, r.CustomerID, r.Count)
	if err != nil {
		return OrderStatusResult{}, err
	}
	if passwd != r.Passwd {
		return OrderStatusResult{}, workload.Business("authentication failed")
	}
	return OrderStatusResult{BusinessName: name, Orders: orders}, nil
}

func (s *Service) NewProducts(ctx context.Context, thread int, r NewProductsRequest) (NewProductsResult, error) {
	if r.CutoffMinutes < minCutoff || r.CutoffMinutes > maxCutoff {
		return NewProductsResult{}, badRequest("cutoff_minutes %d: want %d..%d", r.CutoffMinutes, minCutoff, maxCutoff)
	}
	if r.Limit < 1 || r.Limit > maxNewProducts {
		return NewProductsResult{}, badRequest("limit %d: want 1..%d", r.Limit, maxNewProducts)
	}
	// The cutoff is a duration subtracted from an instant: no calendar
	// arithmetic, so none of the seed's month-off-by-one (Java counts
	// months from 0), which made every call return its whole limit.
	ps, err := s.data.NewProducts(ctx, thread, r.Subject, s.now().Add(-time.Duration(r.CutoffMinutes)*time.Minute), r.Limit)
	return NewProductsResult{Products: ps}, err
}

func checkIDs(ids []int64) error {
	if len(ids) == 0 || len(ids) > maxItemsPerReq {
		return badRequest("%d item ids: want 1..%d", len(ids), maxItemsPerReq)
	}
	return nil
}

func (s *Service) ProductDetail(ctx context.Context, thread int, r ProductDetailRequest) (ProductDetailResult, error) {
	if err := checkIDs(r.ItemIDs); err != nil {
		return ProductDetailResult{}, err
	}
	ds, err := s.data.ProductDetails(ctx, thread, r.ItemIDs)
	return ProductDetailResult{Items: ds}, err
}

func (s *Service) ChangeItem(ctx context.Context, thread int, r ChangeItemRequest) (ChangeItemResult, error) {
	if err := checkIDs(r.ItemIDs); err != nil {
		return ChangeItemResult{}, err
	}
	ids := slices.Clone(r.ItemIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	now := s.now()
	if err := s.data.SetPubDates(ctx, thread, ids, now); err != nil {
		return ChangeItemResult{}, err
	}
	out := make([]ItemDate, len(ids))
	for i, id := range ids {
		out[i] = ItemDate{ID: id, PubDate: now}
	}
	return ChangeItemResult{Items: out}, nil
}
