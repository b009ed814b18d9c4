package tpcapp

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp/partner"
)

const testImageBytes = 2048

// testPopulation is a tenth of scale 1, loaded in a tenth of the time:
// what the tests that call the methods, corrupt the tables or run the mix
// need (items 1 to 40, orders 5 and 7, customers without orders, items
// ordered often enough to be reordered), not 17,000 rows.
// TestLoadWritesThePopulation loads scale 1 whole.
var testPopulation = population{Items: 100, Authors: 25, Customers: 200, Addresses: 400, Orders: 180}

// loadTest loads scale 1 with small images into a fresh database.
func loadTest(t testing.TB, dsn string, threads int, o LoadOptions) (*store.DB, workload.LoadReport) {
	t.Helper()
	return loadTestPopulation(t, dsn, threads, populationAt(1), o)
}

// loadTestPopulation is loadTest of the population pop.
func loadTestPopulation(t testing.TB, dsn string, threads int, pop population, o LoadOptions) (*store.DB, workload.LoadReport) {
	t.Helper()
	db := storetest.Open(t, dsn, store.Options{Threads: threads})
	if o.Images == "" {
		o.Images = ImagesInRow
	}
	if o.ImageBytes == 0 {
		o.ImageBytes = testImageBytes
	}
	if o.Indexes == "" {
		o.Indexes = IndexesSpec
	}
	rep, err := loadPopulation(context.Background(), db, 7, pop, o)
	if err != nil {
		t.Fatal(err)
	}
	return db, rep
}

func TestLoadWritesThePopulation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		dir := t.TempDir()
		db, rep := loadTest(t, dsn, 1, LoadOptions{Images: ImagesFile, ImageDir: dir, Indexes: IndexesTuned})
		pop := populationAt(1)
		g := gen{seed: 7}
		var lines int64
		for id := int64(1); id <= pop.Orders; id++ {
			_, _, ls := g.pastOrder(pop, id)
			lines += int64(len(ls))
		}
		want := map[string]int64{"country": countries, "author": pop.Authors, "item": pop.Items, "stock": pop.Items,
			"address": pop.Addresses, "customer": pop.Customers, "orders": pop.Orders, "order_line": lines, "shipment": pop.Orders}
		q := storetest.Querier{T: t, DB: db}
		for table, n := range want {
			if rep.Tables[table] != n {
				t.Errorf("report: %s %d rows, want %d", table, rep.Tables[table], n)
			}
			if got := q.Int("SELECT COUNT(*) FROM " + table); got != n {
				t.Errorf("%s holds %d rows, want %d", table, got, n)
			}
		}
		if rep.Bytes != pop.Items*testImageBytes {
			t.Errorf("image bytes %d, want %d", rep.Bytes, pop.Items*testImageBytes)
		}
		// --item-images file: the rows name files, none holds the bytes.
		if n := q.Int("SELECT COUNT(*) FROM item WHERE i_image IS NULL AND i_image_path IS NOT NULL"); n != pop.Items {
			t.Errorf("%d items name a file and hold no image, want %d", n, pop.Items)
		}
		b, err := os.ReadFile(filepath.Join(dir, "17.jpg"))
		if err != nil || len(b) != testImageBytes || binary.BigEndian.Uint64(b) != 17 {
			t.Errorf("item 17's image file: %d bytes, %v", len(b), err)
		}
		// The sequences moved past the loaded keys: the next customer is
		// 2001.
		svc, _ := testService(t, db, 1, 1)
		res, err := svc.NewCustomer(context.Background(), 0, testCustomer("after-load", PurchaseOrder))
		if err != nil || res.CustomerID != pop.Customers+1 {
			t.Errorf("first new customer %d, %v; want %d", res.CustomerID, err, pop.Customers+1)
		}
	})
}

// testService is the business methods in direct SQL over db with
// in-process partners approving approve of POV's and PGE's requests,
// without delay.
func testService(t testing.TB, db *store.DB, povApprove, pgeApprove float64) (*Service, *Direct) {
	t.Helper()
	d, err := NewDirect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return serviceOver(t, d, povApprove, pgeApprove), d
}

// testBeans is Data on an entity container over db with the settings
// given for every type (the types' presets apply over them).
func testBeans(t testing.TB, db *store.DB, run container.Settings) *Beans {
	t.Helper()
	settings := make(map[string]container.Settings)
	for _, typ := range entityTypes {
		s, err := container.Resolve(run, typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		settings[typ.Name] = s
	}
	ctr, err := container.New(context.Background(), db, entityTypes, settings)
	if err != nil {
		t.Fatal(err)
	}
	return NewBeans(ctr)
}

// serviceOver is the business methods over data with in-process partners
// approving approve of POV's and PGE's requests, without delay.
func serviceOver(t testing.TB, data Data, povApprove, pgeApprove float64) *Service {
	t.Helper()
	client := func(k partner.Kind, approve float64) *partner.Client {
		srv, err := partner.New(partner.Config{Kind: k, Delay: partner.Delay{Kind: partner.NoDelay}, Approve: &approve})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		c, err := partner.NewClient(k, hs.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return NewService(data, Partners{POV: client(partner.POV, povApprove), PGE: client(partner.PGE, pgeApprove)})
}

func testCustomer(tag, method string) NewCustomerRequest {
	p := Payment{Method: PurchaseOrder, POID: "PO-" + tag}
	if method == CreditCard {
		p = Payment{Method: CreditCard, CardNumber: "4000000000000002", CardName: "Test", CardExpiry: "01/30"}
	}
	return NewCustomerRequest{Uname: "U" + tag, Passwd: "pw", BusinessName: "B " + tag, BusinessInfo: "i", FirstName: "F", LastName: "L",
		Phone: "1", Email: "e", Address: Address{Street1: tag + " Road", Street2: "", City: "C", State: "S", Zip: "00001", Country: 3},
		Payment: p, Discount: 1000}
}

// Each method's effect, on every backend, for both persistence strategies
// (in SQL, and on the entity container under CMP with commit options C and
// A, and under BMP) and both fronts: the rows it writes, the answers it
// gives, and what a partner's decline prevents.
func TestMethodsEffects(t *testing.T) {
	t.Parallel()
	cmpC := container.Settings{Persistence: container.CMP, CommitOption: container.OptionC}
	cmpA := container.Settings{Persistence: container.CMP, CommitOption: container.OptionA, Concurrency: container.Exclusive}
	bmp := container.Settings{Persistence: container.BMP, CommitOption: container.OptionB}
	modes := []struct {
		name  string
		front string
		beans *container.Settings
	}{
		{"direct", "in-process", nil}, {"direct-soap", FrontSOAP, nil}, {"direct-json", FrontJSON, nil},
		{"cmp-C", "in-process", &cmpC}, {"cmp-A-exclusive-soap", FrontSOAP, &cmpA}, {"bmp-B", "in-process", &bmp},
	}
	storetest.Each(t, func(t *testing.T, dsn string) {
		for i, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				// A load of its own each: make test runs each mode on
				// one backend, make test-all on the others.
				storetest.ShareCell(t, dsn, i)
				t.Parallel()
				methodsEffects(t, storetest.Fresh(t, dsn), m.front, m.beans)
			})
		}
	})
}

// over is the methods as a business reaches them through front: the
// service itself, or a Caller of a Front served on a loopback socket.
func over(t *testing.T, svc *Service, front string) Methods {
	if front == "in-process" {
		return svc
	}
	hs := httptest.NewServer(NewFront(svc, 2))
	t.Cleanup(hs.Close)
	return NewCaller(hs.URL, front, hs.Client())
}

func methodsEffects(t *testing.T, dsn, front string, beans *container.Settings) {
	{
		ctx := context.Background()
		db, _ := loadTestPopulation(t, dsn, 2, testPopulation, LoadOptions{})
		q := storetest.Querier{T: t, DB: db}
		service, _ := testService(t, db, 1, 1)
		decliner, _ := testService(t, db, 0, 0)
		var bs *Beans
		if beans != nil {
			// One container for both: a cache is the container's own.
			bs = testBeans(t, db, *beans)
			service, decliner = serviceOver(t, bs, 1, 1), serviceOver(t, bs, 0, 0)
		}
		svc, declining := over(t, service, front), over(t, decliner, front)

		// NewCustomer stores the address once.
		addresses := q.Int("SELECT COUNT(*) FROM address")
		a, err := svc.NewCustomer(ctx, 0, testCustomer("a", PurchaseOrder))
		if err != nil {
			t.Fatal(err)
		}
		b := testCustomer("a", CreditCard)
		b.Uname = "Ub"
		if _, err := svc.NewCustomer(ctx, 1, b); err != nil {
			t.Fatal(err)
		}
		if n := q.Int("SELECT COUNT(*) FROM address") - addresses; n != 1 {
			t.Errorf("two customers at one new address added %d addresses, want 1", n)
		}
		if n := q.Int("SELECT COUNT(*) FROM customer WHERE c_id = ? AND c_payment_method = 'PO' AND c_po_id = 'PO-a' AND c_discount = 1000", a.CustomerID); n != 1 {
			t.Errorf("customer %d not stored as asked", a.CustomerID)
		}
		customers := q.Int("SELECT COUNT(*) FROM customer")
		if _, err := declining.NewCustomer(ctx, 0, testCustomer("c", PurchaseOrder)); !workload.IsBusiness(err) {
			t.Errorf("NewCustomer declined by POV: %v, want a business exception", err)
		}
		if n := q.Int("SELECT COUNT(*) FROM customer"); n != customers {
			t.Errorf("a declined NewCustomer left %d customers, want %d", n, customers)
		}

		// ChangePaymentMethod: to a card, then a declined purchase order.
		card := Payment{Method: CreditCard, CardNumber: "4111", CardName: "N", CardExpiry: "02/31"}
		if r, err := svc.ChangePaymentMethod(ctx, 0, ChangePaymentMethodRequest{CustomerID: a.CustomerID, Payment: card}); err != nil || r.PaymentMethod != CreditCard {
			t.Fatalf("ChangePaymentMethod: %+v, %v", r, err)
		}
		if _, err := declining.ChangePaymentMethod(ctx, 0, ChangePaymentMethodRequest{CustomerID: a.CustomerID, Payment: Payment{Method: PurchaseOrder, POID: "X"}}); !workload.IsBusiness(err) {
			t.Errorf("ChangePaymentMethod declined by POV: %v, want a business exception", err)
		}
		if n := q.Int("SELECT COUNT(*) FROM customer WHERE c_id = ? AND c_payment_method = 'CC' AND c_cc_number = '4111'", a.CustomerID); n != 1 {
			t.Errorf("the payment is not the card after a declined change")
		}
		if _, err := svc.ChangePaymentMethod(ctx, 0, ChangePaymentMethodRequest{CustomerID: 1 << 40, Payment: card}); !errors.Is(err, ErrNoCustomer) && !errors.Is(err, ErrNotFound) {
			t.Errorf("ChangePaymentMethod of no customer: %v", err)
		}

		// CreateOrder: one line in stock, one short; totals as priced.
		q.Exec("UPDATE stock SET s_qty = 0 WHERE s_i_id = 9")
		q.Exec("UPDATE stock SET s_qty = 50 WHERE s_i_id = 4")
		req := CreateOrderRequest{CustomerID: a.CustomerID, ShipAddress: testCustomer("a", CreditCard).Address, ShipType: "AIR",
			Lines: []LineRequest{{ItemID: 9, Qty: 2}, {ItemID: 4, Qty: 3}}, Reference: "r1"}
		o, err := svc.CreateOrder(ctx, 0, req)
		if err != nil {
			t.Fatal(err)
		}
		g := gen{seed: 7}
		lines := []Line{{ItemID: 4, Qty: 3, Price: g.itemCost(4), Status: StatusPending}, {ItemID: 9, Qty: 2, Price: g.itemCost(9), Status: StatusBackOrdered}}
		ship := shipCost("AIR", countryZone(3), 3*g.itemVolume(4)+2*g.itemVolume(9))
		sub, disc, tax, total := totals(lines, 1000, ship)
		got := o.Order
		if got.Status != StatusBackOrdered || got.SubTotal != sub || got.Discount != disc || got.Tax != tax || got.ShipCost != ship || got.Total != total ||
			!slices.EqualFunc(got.Lines, lines, func(a, b Line) bool { return a == b }) {
			t.Errorf("order %+v, want lines %+v, sub %d, discount %d, tax %d, ship %d, total %d", got, lines, sub, disc, tax, ship, total)
		}
		if n := q.Int("SELECT COUNT(*) FROM ship_outbox WHERE so_o_id = ?", got.ID); n != 1 {
			t.Errorf("order %d is not in the shipping outbox", got.ID)
		}
		if n := q.Int("SELECT COUNT(*) FROM order_line WHERE ol_o_id = ?", got.ID); n != 2 {
			t.Errorf("order %d has %d lines, want 2", got.ID, n)
		}
		orders, outboxed := q.Int("SELECT COUNT(*) FROM orders"), q.Int("SELECT COUNT(*) FROM ship_outbox")
		if _, err := declining.CreateOrder(ctx, 0, req); !workload.IsBusiness(err) {
			t.Errorf("CreateOrder declined by PGE: %v, want a business exception", err)
		}
		if q.Int("SELECT COUNT(*) FROM orders") != orders || q.Int("SELECT COUNT(*) FROM ship_outbox") != outboxed {
			t.Errorf("a declined CreateOrder wrote an order or queued one")
		}

		// OrderStatus: the order just placed first; a wrong password fails.
		st, err := svc.OrderStatus(ctx, 1, OrderStatusRequest{CustomerID: a.CustomerID, Passwd: "pw", Count: 3})
		if err != nil || len(st.Orders) != 1 || st.Orders[0].ID != got.ID || len(st.Orders[0].Lines) != 2 || st.Orders[0].Total != total || st.BusinessName != "B a" {
			t.Errorf("OrderStatus: %+v, %v", st, err)
		}
		if _, err := svc.OrderStatus(ctx, 1, OrderStatusRequest{CustomerID: a.CustomerID, Passwd: "wrong", Count: 3}); !workload.IsBusiness(err) {
			t.Errorf("OrderStatus with a wrong password: %v, want a business exception", err)
		}

		// ChangeItem makes items new; NewProducts finds exactly them.
		subject := g.itemSubject(5)
		var same []int64
		for id := int64(1); id <= 40; id++ {
			if g.itemSubject(id) == subject {
				same = append(same, id)
			}
		}
		ch, err := svc.ChangeItem(ctx, 0, ChangeItemRequest{ItemIDs: same})
		if err != nil || len(ch.Items) != len(same) {
			t.Fatalf("ChangeItem: %+v, %v", ch, err)
		}
		np, err := svc.NewProducts(ctx, 1, NewProductsRequest{Subject: subject, CutoffMinutes: 1, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, p := range np.Products {
			ids = append(ids, p.ID)
			if !strings.HasPrefix(p.Author, "First") {
				t.Errorf("product %d's author %q", p.ID, p.Author)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, same) {
			t.Errorf("NewProducts(%s, 1 minute) = %v, want the items just changed %v", subject, ids, same)
		}
		if _, err := svc.NewProducts(ctx, 1, NewProductsRequest{Subject: subject, CutoffMinutes: 11, Limit: 50}); err == nil {
			t.Error("a cutoff of 11 minutes was accepted")
		}

		// ProductDetail carries the image.
		pd, err := svc.ProductDetail(ctx, 0, ProductDetailRequest{ItemIDs: []int64{3, 4}})
		if err != nil || len(pd.Items) != 2 || len(pd.Items[0].Image) != testImageBytes || binary.BigEndian.Uint64(pd.Items[0].Image) != 3 || pd.Items[1].Stock != 50 {
			t.Errorf("ProductDetail: %d items, %v", len(pd.Items), err)
		}

		// On the container, the writes went through the entity types, as
		// many as the methods above made.
		if bs != nil {
			stats := make(map[string]container.Stats)
			for _, e := range bs.EntityStats() {
				stats[e.Name] = e.Stats
			}
			// BMP stores every instance a read-write transaction found,
			// changed or not: the address found twice, the order's two
			// items and their stock.
			var unchanged int64
			if beans.Persistence == container.BMP {
				unchanged = 2
			}
			for _, w := range []struct {
				typ             string
				creates, stores int64
			}{
				{"Customer", 2, 1}, {"Address", 1, unchanged}, {"Order", 1, 0}, {"OrderLine", 2, 0}, {"ShipOutbox", 1, 0},
				{"Item", 0, int64(len(same)) + unchanged}, {"Stock", 0, unchanged},
			} {
				if got := stats[w.typ]; got.Creates != w.creates || got.Stores != w.stores {
					t.Errorf("%s: %d creates, %d stores; want %d, %d", w.typ, got.Creates, got.Stores, w.creates, w.stores)
				}
			}
		}
	}
}

// outcomes are successful (and in-doubt) operations by operation.
func outcomes(succeeded map[int]int64) workload.Outcomes {
	o := workload.Outcomes{Succeeded: make([]int64, numOps), InDoubt: make([]int64, numOps)}
	for op, n := range succeeded {
		o.Succeeded[op] = n
	}
	return o
}

func failedChecks(t *testing.T, c *checker, o workload.Outcomes, f runFacts) []string {
	t.Helper()
	checks, err := c.check(context.Background(), o, f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ch := range checks {
		if !ch.Passed {
			out = append(out, ch.Name)
		}
	}
	return out
}

// Each check passes on the population and fails on a database corrupted
// on purpose, each corruption on a fresh load.
func TestChecksCatchCorruption(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		// Order 5's shipment not yet noticed when the run starts, noticed
		// by its end: the notice cases' one notice of the run.
		unnoticed5 := func(q storetest.Querier) { q.Exec("UPDATE shipment SET sh_noticed = 0 WHERE sh_o_id = 5") }
		noticed5 := func(q storetest.Querier) { q.Exec("UPDATE shipment SET sh_noticed = 1 WHERE sh_o_id = 5") }
		for i, tt := range []struct {
			name    string
			before  func(q storetest.Querier)
			corrupt func(q storetest.Querier)
			facts   runFacts
			want    []string
		}{
			{"nothing", nil, func(storetest.Querier) {}, runFacts{}, nil},
			{"a customer lost", nil, func(q storetest.Querier) {
				q.Exec("DELETE FROM customer WHERE c_id = ?", q.Int("SELECT MAX(c_id) FROM customer WHERE c_id NOT IN (SELECT o_c_id FROM orders)"))
			}, runFacts{}, []string{"customers-match-NewCustomer"}},
			{"an order nobody placed", nil, func(q storetest.Querier) {
				q.Exec("INSERT INTO orders (o_c_id, o_date, o_sub_total, o_discount, o_tax, o_ship_cost, o_total, o_ship_type, o_ship_addr_id, o_status, o_payment_method, o_auth_code) "+
					"VALUES (1, ?, 0, 0, 0, 0, 0, 'AIR', 1, 'PENDING', 'PO', '')", now)
			}, runFacts{}, []string{"orders-match-CreateOrder", "orders-shipped-once", "totals-recompute"}},
			{"an order line lost", nil, func(q storetest.Querier) {
				q.Exec("DELETE FROM order_line WHERE ol_id = ?", q.Int("SELECT MIN(ol_id) FROM order_line"))
			}, runFacts{}, []string{"lines-match-CreateOrder", "shipments-match-lines", "stock-balances", "totals-recompute"}},
			{"an order never shipped", nil, func(q storetest.Querier) {
				q.Exec("DELETE FROM shipment WHERE sh_o_id = 5")
			}, runFacts{}, []string{"orders-shipped-once", "orders-noticed-once"}},
			{"a shipment of no order", nil, func(q storetest.Querier) {
				q.Exec("INSERT INTO shipment (sh_o_id, sh_date, sh_lines) VALUES (999999, ?, 0)", now)
			}, runFacts{}, []string{"orders-shipped-once", "orders-noticed-once"}},
			{"an order left in the outbox", nil, func(q storetest.Querier) {
				q.Exec("INSERT INTO ship_outbox (so_o_id, so_created) VALUES (5, ?)", now)
			}, runFacts{}, []string{"orders-shipped-once"}},
			{"a shipment counting a line that did not ship", nil, func(q storetest.Querier) {
				q.Exec("UPDATE shipment SET sh_lines = sh_lines + 1 WHERE sh_o_id = 5")
			}, runFacts{}, []string{"shipments-match-lines"}},
			{"negative stock", nil, func(q storetest.Querier) {
				q.Exec("UPDATE stock SET s_qty = -1 WHERE s_i_id = 1")
			}, runFacts{}, []string{"no-negative-stock", "stock-balances"}},
			{"stock taken without a shipment", nil, func(q storetest.Querier) {
				q.Exec("UPDATE stock SET s_qty = s_qty - 1 WHERE s_i_id = 2")
			}, runFacts{}, []string{"stock-balances"}},
			{"a total that does not add up", nil, func(q storetest.Querier) {
				q.Exec("UPDATE orders SET o_total = o_total + 1 WHERE o_id = 7")
			}, runFacts{}, []string{"totals-recompute"}},
			{"a reorder never received", nil, func(q storetest.Querier) {
				q.Exec("INSERT INTO reorder (r_i_id, r_qty, r_status, r_requested) VALUES (1, 100, 'PENDING', ?)", now)
			}, runFacts{}, []string{"reorders-received-once"}},
			{"a reorder received without its stock", nil, func(q storetest.Querier) {
				q.Exec("INSERT INTO reorder (r_i_id, r_qty, r_status, r_requested, r_received) VALUES (1, 100, 'RECEIVED', ?, ?)", now, now)
			}, runFacts{iceKnown: true}, []string{"stock-balances", "reorders-received-once"}},
			{"lines the run did not commit", nil, func(storetest.Querier) {}, runFacts{lines: 3}, []string{"lines-match-CreateOrder"}},
			{"a shipment never noticed", nil, unnoticed5, runFacts{}, []string{"orders-noticed-once"}},
			{"a notice SNE dropped", unnoticed5, noticed5,
				runFacts{noticed: 1, sneKnown: true}, []string{"orders-noticed-once"}},
			{"a notice SNE received twice", unnoticed5, noticed5,
				runFacts{noticed: 1, sneKnown: true, sneAccepted: 1, sneResent: 1, sneOrders: map[int64]int{5: 2}}, []string{"orders-noticed-once"}},
			{"a notice sent again after a failed call", unnoticed5, noticed5,
				runFacts{noticed: 1, sneFailures: 1, sneKnown: true, sneAccepted: 1, sneResent: 1, sneOrders: map[int64]int{5: 2}}, nil},
			// Read from outside the sites (--app-servers N): no count of
			// the lines committed, the lines' orders instead.
			{"nothing, from outside", nil, func(storetest.Querier) {}, runFacts{outside: true}, nil},
			{"a line of no order, from outside", nil, func(q storetest.Querier) {
				q.Exec("INSERT INTO order_line (ol_o_id, ol_i_id, ol_qty, ol_price, ol_status) VALUES (999999, 1, 1, 100, 'PENDING')")
			}, runFacts{outside: true}, []string{"lines-belong-to-orders"}},
			{"an order without its lines, from outside", nil, func(q storetest.Querier) {
				q.Exec("DELETE FROM order_line WHERE ol_o_id = 5")
			}, runFacts{outside: true}, []string{"lines-belong-to-orders", "shipments-match-lines", "stock-balances", "totals-recompute"}},
			{"an order of too many lines, from outside", nil, func(q storetest.Querier) {
				for range maxLines {
					q.Exec("INSERT INTO order_line (ol_o_id, ol_i_id, ol_qty, ol_price, ol_status) VALUES (5, 1, 1, 0, 'BACKORDERED')")
				}
			}, runFacts{outside: true}, []string{"lines-belong-to-orders", "shipments-match-lines", "totals-recompute"}}, // their volume, the shipping cost
		} {
			t.Run(tt.name, func(t *testing.T) {
				// Each case loads a database of its own: make test runs
				// each on one backend, make test-all on the others.
				storetest.ShareCell(t, dsn, i)
				t.Parallel()
				db, _ := loadTestPopulation(t, storetest.Fresh(t, dsn), 1, testPopulation, LoadOptions{Images: ImagesNone})
				if tt.before != nil {
					tt.before(storetest.Querier{T: t, DB: db})
				}
				c, err := newChecker(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				tt.corrupt(storetest.Querier{T: t, DB: db})
				if f := failedChecks(t, c, outcomes(nil), tt.facts); !slices.Equal(f, tt.want) {
					t.Errorf("failed %v, want %v", f, tt.want)
				}
			})
		}
	})
}

func TestSessionLengths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := filepath.Join(dir, "cdf.txt")
	os.WriteFile(table, []byte("# length\tP(L <= length)\n1\t0.5\n2\t0.5\n3\t1\n"), 0o644)
	for _, c := range []struct {
		spec     string
		mean     float64
		min, max int
	}{
		{"fixed:7", 7, 7, 7},
		{"uniform:1-120", 60.5, 1, 120},
		{table, 2, 1, 3},
		{"negexp:20", 0, 1, maxSession},
	} {
		s, err := ParseSessionLength(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if c.mean > 0 && abs(s.Mean()-c.mean) > 1e-9 {
			t.Errorf("%s: mean %g, want %g", c.spec, s.Mean(), c.mean)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		sum := 0
		const n = 20000
		for range n {
			l := s.Draw(rng)
			if l < c.min || l > c.max || (c.spec == table && l == 2) {
				t.Fatalf("%s: drew %d", c.spec, l)
			}
			sum += l
		}
		if mean := float64(sum) / n; abs(mean-s.Mean()) > 0.03*s.Mean() {
			t.Errorf("%s: drawn mean %g, the distribution's %g", c.spec, mean, s.Mean())
		}
	}
	// negexp:20 cut at 120 has a mean just under 20.
	if s, _ := ParseSessionLength("negexp:20"); s.Mean() < 19 || s.Mean() > 21 {
		t.Errorf("negexp:20 mean %g", s.Mean())
	}
	for _, bad := range []string{"fixed:0", "fixed:121", "uniform:5-2", "negexp:-1", filepath.Join(dir, "missing")} {
		if _, err := ParseSessionLength(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	os.WriteFile(table, []byte("1 0.5\n3 1\n"), 0o644)
	if _, err := ParseSessionLength(table); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a table skipping length 2: %v", err)
	}
}

func abs(x float64) float64 { return max(x, -x) }

// runTest starts a run over a database loaded with testPopulation, runs
// steps operations of the mix on clients emulated businesses itself,
// stops the run (draining the shipping) and returns its checks and what
// succeeded.
func runTest(t *testing.T, db *store.DB, cfg config.Run, clients, steps int) ([]workload.Check, workload.Outcomes, *site) {
	t.Helper()
	ctx := context.Background()
	threads := 4
	wr, err := Workload{}.Start(ctx, db, workload.RunParams{Scale: 1, Persistence: container.Direct, Common: cfg, Options: workload.OptionsOf(cfg), Dir: t.TempDir(), Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	a := wr.(*run)
	a.pop = testPopulation // the businesses choose among the population loaded
	t.Cleanup(func() { a.Stop(ctx) })
	o := outcomes(nil)
	rng := rand.New(rand.NewPCG(cfg.Seed, 99))
	ebs := make([]workload.Client, clients)
	for i := range ebs {
		ebs[i] = wr.NewClient(0, i, rand.New(rand.NewPCG(cfg.Seed, uint64(i))))
	}
	weights := mixOf(specMix).Cards
	for i := range steps {
		x, op := rng.IntN(100), 0
		for _, c := range weights {
			if x < c.Count {
				op = c.Op
				break
			}
			x -= c.Count
		}
		err := ebs[i%clients].Do(ctx, workload.Step{Op: op, Pair: -1, Thread: i % threads})
		if err == nil {
			o.Succeeded[op]++
		} else if !workload.IsBusiness(err) && optionsOf(workload.OptionsOf(cfg)).PartnerFailRate == 0 {
			t.Fatalf("%s: %v", opNames[op], err)
		}
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	checks, err := wr.Check(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return checks, o, a.site
}

func testConfig() config.Run {
	cfg := config.New("tpcapp", Workload{}.Info().Defaults)
	o := DefaultOptions
	o.PartnerDelay = "none"
	cfg.Options, cfg.Seed = o, 5
	return cfg
}

// A run ships every committed order exactly once and receives every
// reorder once, and the checks pass, on every backend.
func TestRunShipsEveryOrderOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		t.Parallel()
		db, _ := loadTestPopulation(t, dsn, 4+2*2, testPopulation, LoadOptions{Images: ImagesNone})
		checks, o, a := runTest(t, db, testConfig(), 8, 300)
		for _, c := range checks {
			if !c.Passed {
				t.Errorf("check %s failed: %s", c.Name, c.Detail)
			}
		}
		if got, want := a.ship.shipped.Load(), o.Succeeded[CreateOrder]; got != want || want == 0 {
			t.Errorf("shipped %d orders, want the %d CreateOrders that succeeded", got, want)
		}
		if a.ship.received.Load() == 0 {
			t.Error("no reorder was received: the run did not exercise inventory control")
		}
		// Every shipped order noticed once to the in-process SNE, with its
		// label: nothing failed, so nothing was sent twice.
		sne, shipped := a.inProc[partner.SNE].Stats(), a.ship.shipped.Load()
		if sne.Requests != shipped || sne.Approved != shipped || sne.Duplicates != 0 || a.ship.noticed.Load() != shipped ||
			sne.LabelBytes != a.ship.labelBytes.Load() || sne.LabelBytes < shipped*5000 {
			t.Errorf("SNE %+v, agents noticed %d with %d label bytes; want %d notices received and accepted once, labels of at least 5,000 bytes",
				sne, a.ship.noticed.Load(), a.ship.labelBytes.Load(), shipped)
		}
	})
}

// Partners that fail part of their calls fail the methods that call them,
// and every order that committed still ships once: ICE's failures only
// delay the reorders, which are retried until received.
func TestPartnersFailingPartOfTheTime(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		t.Parallel()
		db, _ := loadTestPopulation(t, dsn, 4+2*2, testPopulation, LoadOptions{Images: ImagesNone})
		cfg := testConfig()
		workload.SetOptions(&cfg, func(o *Options) { o.PartnerFailRate = 0.3 })
		checks, o, a := runTest(t, db, cfg, 8, 300)
		for _, c := range checks {
			if !c.Passed {
				t.Errorf("check %s failed: %s", c.Name, c.Detail)
			}
		}
		if a.ship.iceFailures.Load() == 0 || a.inProc[partner.PGE].Stats().Failed == 0 || a.ship.sneFailures.Load() == 0 {
			t.Errorf("ICE failed %d calls, PGE %d, SNE %d: the fail rate did not bite", a.ship.iceFailures.Load(), a.inProc[partner.PGE].Stats().Failed, a.ship.sneFailures.Load())
		}
		if sne := a.inProc[partner.SNE].Stats(); sne.Approved != o.Succeeded[CreateOrder] {
			t.Errorf("SNE accepted %d notices, want one for each of the %d orders", sne.Approved, o.Succeeded[CreateOrder])
		}
		if got, want := a.ship.shipped.Load(), o.Succeeded[CreateOrder]; got != want {
			t.Errorf("shipped %d orders, want %d", got, want)
		}
	})
}
