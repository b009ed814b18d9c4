package ecperf

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// CancelOrder takes the order's large orders with it, and the large-order
// line, which may have found one just before, skips it instead of failing.
func TestCancelOrderRemovesItsLargeOrders(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg := testConfig()
		db := loadedDB(t, dsn, cfg)
		var err error
		workload.SetOptions(&cfg, func(o *Options) { o.LeadTimeUnit = config.Duration(10 * time.Millisecond) })
		settings := map[string]container.Settings{}
		for _, typ := range entityTypes {
			if settings[typ.Name], err = container.Resolve(cfg.Container(), typ, nil); err != nil {
				t.Fatal(err)
			}
		}
		run, err := Workload{}.Start(ctx, db, workload.RunParams{Common: cfg, Options: workload.OptionsOf(cfg), Entities: settings, Dir: t.TempDir(), Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		a := run.(*app)
		defer a.Stop(ctx)
		b := a.beans[0]
		q := storetest.Querier{T: t, DB: db}
		customer := q.Int(fmt.Sprintf("SELECT c_id FROM c_customer WHERE c_credit <> '%s' ORDER BY c_credit_limit DESC, c_id LIMIT 1", badCredit))

		order, err := b.newOrder(ctx, customer, false, []orderLine{{item: 1, qty: largeOrderQty + 1}, {item: 2, qty: 1}, {item: 3, qty: largeOrderQty + 5}})
		if err != nil {
			t.Fatal(err)
		}
		large := func() int64 { return q.Int("SELECT COUNT(*) FROM m_largeorder WHERE lo_o_id = ?", order) }
		if n := large(); n != 2 {
			t.Fatalf("%d large orders for an order with two lines over %d, want 2", n, largeOrderQty)
		}
		found, err := b.largeOrders(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var mine []workOrder
		for _, w := range found {
			if w.order == order {
				mine = append(mine, w)
			}
		}
		if len(mine) != 2 {
			t.Fatalf("the large-order line found %d of the order's 2 large orders", len(mine))
		}
		if err := b.cancelOrder(ctx, order, []int64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if n := large(); n != 0 {
			t.Errorf("%d large orders left after their order was cancelled, want 0", n)
		}
		before := q.Int("SELECT COUNT(*) FROM m_workorder")
		if _, err := b.scheduleWorkOrder(ctx, mine[0]); !errors.Is(err, errLargeOrderCancelled) {
			t.Errorf("scheduling a cancelled large order: %v, want errLargeOrderCancelled", err)
		}
		if after := q.Int("SELECT COUNT(*) FROM m_workorder"); after != before {
			t.Errorf("%d work orders after scheduling a cancelled large order, %d before: it must roll back", after, before)
		}
	})
}
