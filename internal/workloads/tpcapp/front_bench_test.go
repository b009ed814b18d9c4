package tpcapp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tierbench/tierbench/internal/store/storetest"
)

// recorded answers each method with what the service on a real database
// answered once: the benchmark then measures the fronts alone (the
// caller's encoding and decoding and the server's), not the database.
type recorded struct {
	order    CreateOrderResult
	status   OrderStatusResult
	products NewProductsResult
	detail   ProductDetailResult
}

func (r *recorded) NewCustomer(context.Context, int, NewCustomerRequest) (NewCustomerResult, error) {
	return NewCustomerResult{CustomerID: 2001}, nil
}
func (r *recorded) ChangePaymentMethod(_ context.Context, _ int, q ChangePaymentMethodRequest) (ChangePaymentMethodResult, error) {
	return ChangePaymentMethodResult{PaymentMethod: q.Payment.Method}, nil
}
func (r *recorded) CreateOrder(context.Context, int, CreateOrderRequest) (CreateOrderResult, error) {
	return r.order, nil
}
func (r *recorded) OrderStatus(context.Context, int, OrderStatusRequest) (OrderStatusResult, error) {
	return r.status, nil
}
func (r *recorded) NewProducts(context.Context, int, NewProductsRequest) (NewProductsResult, error) {
	return r.products, nil
}
func (r *recorded) ProductDetail(context.Context, int, ProductDetailRequest) (ProductDetailResult, error) {
	return r.detail, nil
}
func (r *recorded) ChangeItem(context.Context, int, ChangeItemRequest) (ChangeItemResult, error) {
	return ChangeItemResult{}, nil
}

// inProcess carries a caller's requests to a handler without a socket.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// The fronts' CPU per request, SOAP against JSON: a business's call
// encoded, decoded by the front, answered, encoded and decoded again, in
// one process. ProductDetail carries two items with 100 KiB images each.
//
//	go test ./internal/workloads/tpcapp/ -run '^$' -bench BenchmarkFront -benchmem
func BenchmarkFront(b *testing.B) {
	ctx := context.Background()
	db, _ := loadTest(b, storetest.SQLite(b), 2, LoadOptions{Images: ImagesInRow, ImageBytes: 100 << 10})
	svc, _ := testService(b, db, 1, 1)
	order := CreateOrderRequest{CustomerID: 17, ShipAddress: testCustomer("bench", CreditCard).Address, ShipType: "AIR",
		Lines: []LineRequest{{ItemID: 3, Qty: 1}, {ItemID: 8, Qty: 2}, {ItemID: 21, Qty: 1}}, Reference: "bench"}
	var rec recorded
	var err error
	if rec.order, err = svc.CreateOrder(ctx, 0, order); err != nil {
		b.Fatal(err)
	}
	if rec.status, err = svc.OrderStatus(ctx, 0, OrderStatusRequest{CustomerID: 17, Passwd: Passwd(Uname(17)), Count: 5}); err != nil {
		b.Fatal(err)
	}
	if rec.products, err = svc.NewProducts(ctx, 0, NewProductsRequest{Subject: gen{seed: 7}.itemSubject(1), CutoffMinutes: 10, Limit: 50}); err != nil {
		b.Fatal(err)
	}
	detail := ProductDetailRequest{ItemIDs: []int64{5, 6}}
	if rec.detail, err = svc.ProductDetail(ctx, 0, detail); err != nil {
		b.Fatal(err)
	}
	calls := []struct {
		name string
		call func(m Methods) error
	}{
		{"CreateOrder", func(m Methods) error { _, err := m.CreateOrder(ctx, 0, order); return err }},
		{"OrderStatus", func(m Methods) error {
			_, err := m.OrderStatus(ctx, 0, OrderStatusRequest{CustomerID: 17, Passwd: "x", Count: 5})
			return err
		}},
		{"ProductDetail", func(m Methods) error { _, err := m.ProductDetail(ctx, 0, detail); return err }},
	}
	front := NewFront(&rec, 1)
	for _, c := range calls {
		for _, proto := range Fronts {
			caller := NewCaller("http://front", proto, &http.Client{Transport: inProcess{front}})
			b.Run(c.name+"/"+proto, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := c.call(caller); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
