package ecperf

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// loadedDB is dsn, a fresh database, with the Ir 1 population of seed 1
// (populate), with sessions for one server thread and cfg's agents.
func loadedDB(t *testing.T, dsn string, cfg config.Run) *store.DB {
	t.Helper()
	populate(t, dsn)
	return storetest.Open(t, dsn, store.Options{Threads: 1 + workload.OptionsOf(cfg).AgentThreads()})
}

// populate fills dsn, a fresh database, with a copy of the Ir 1
// population of seed 1, loaded once per backend by the test binary
// (storetest.Populate).
func populate(t *testing.T, dsn string) {
	t.Helper()
	storetest.Populate(t, dsn, "ecperf Ir 1 seed 1", func(ctx context.Context, db *store.DB) error {
		_, err := load(ctx, db, workload.LoadParams{Scale: 1, Seed: 1})
		return err
	})
}

// startApp starts ECperf on db as the runner does, without terminals: the
// test drives the beans (the container's, or direct SQL's as
// cfg.Persistence says), Stop and Check itself. Stop is also a cleanup.
func startApp(t *testing.T, db *store.DB, cfg config.Run) *app {
	t.Helper()
	ctx := context.Background()
	var settings map[string]container.Settings
	if cfg.Persistence.Container() {
		settings = map[string]container.Settings{}
		for _, typ := range entityTypes {
			var err error
			if settings[typ.Name], err = container.Resolve(cfg.Container(), typ, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	run, err := Workload{}.Start(ctx, db, workload.RunParams{Scale: 1, Common: cfg, Options: workload.OptionsOf(cfg), Entities: settings, Persistence: cfg.Persistence, Dir: t.TempDir(), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := run.(*app)
	t.Cleanup(func() { a.Stop(ctx) })
	return a
}

// Each of the six checks fails on a database corrupted on purpose, with a
// detail that names what is wrong; the others keep passing. Every case
// starts a run (the checks' baseline), corrupts, and checks, then repairs.
func TestChecksCatchCorruption(t *testing.T) {
	t.Parallel()
	none := make([]int64, numOps)
	pop := populationAt(1)
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg := testConfig()
		workload.SetOptions(&cfg, func(o *Options) { o.LeadTimeUnit = config.Duration(10 * time.Millisecond) })
		db := loadedDB(t, dsn, cfg)
		q := storetest.Querier{T: t, DB: db}
		now := time.Now().UTC()
		part := q.Int("SELECT MIN(in_p_id) FROM m_inventory")
		wo := q.Int("SELECT MIN(wo_number) FROM m_workorder")
		order := q.Int("SELECT MIN(o_id) FROM o_orders")
		customer := q.Int("SELECT MIN(c_id) FROM c_customer")
		smallOrder := q.Int(fmt.Sprintf("SELECT MIN(ol_o_id) FROM o_orderline WHERE ol_qty <= %d", largeOrderQty))
		small := [2]int64{smallOrder, q.Int(fmt.Sprintf("SELECT MIN(ol_id) FROM o_orderline WHERE ol_o_id = ? AND ol_qty <= %d", largeOrderQty), smallOrder)}

		cases := []struct {
			name string
			// before runs while the run's agents and emulator are up.
			before  func(t *testing.T, a *app)
			corrupt func()
			repair  func()
			// failing names the checks that must fail, each with a piece
			// of its detail; passing, pieces of the details of checks that
			// must pass.
			failing, passing map[string]string
		}{
			{name: "untouched", passing: map[string]string{
				"po-sent-exactly-once":      "0 POs committed, 0 at the emulator; 0 committed but never sent []",
				"deliveries-applied-once":   "0 POs unsent and 0 awaiting delivery",
				"orders-match-terminals":    fmt.Sprintf("%d orders = %d loaded + 0 NewOrder - 0 CancelOrder (want %d); 0 orders", pop.Orders, pop.Orders, pop.Orders),
				"work-orders-completed":     "0 work orders completed in the run, 0 CompleteWorkOrder by the lines; 0 of them for large orders, 0 completed by the large-order lines",
				"large-orders-follow-lines": "0 waiting large orders whose line is at most 20 units or of another quantity; 0 lines over 20 units of this run's orders with neither",
				"balances-match-orders":     "0 customers whose balance moved apart from their orders' totals []",
			}},
			{
				name: "a large order whose line is small",
				corrupt: func() {
					q.Exec("INSERT INTO m_largeorder (lo_id, lo_o_id, lo_ol_id, lo_assembly_id, lo_qty, lo_due_date) SELECT 900010, ol_o_id, ol_id, ol_i_id, ol_qty, ol_ship_date FROM o_orderline WHERE ol_o_id = ? AND ol_id = ?", small[0], small[1])
				},
				repair:  func() { q.Exec("DELETE FROM m_largeorder WHERE lo_id = 900010") },
				failing: map[string]string{"large-orders-follow-lines": "1 waiting large orders whose line is at most 20 units or of another quantity; 0 lines"},
			},
			{
				name: "a large order of another quantity than its line",
				corrupt: func() {
					q.Exec("INSERT INTO o_orderline (ol_o_id, ol_id, ol_i_id, ol_qty, ol_status, ol_ship_date) VALUES (900011, 1, 1, 30, 1, ?)", now)
					q.Exec("INSERT INTO m_largeorder (lo_id, lo_o_id, lo_ol_id, lo_assembly_id, lo_qty, lo_due_date) VALUES (900011, 900011, 1, 1, 31, ?)", now)
				},
				repair: func() {
					q.Exec("DELETE FROM m_largeorder WHERE lo_id = 900011")
					q.Exec("DELETE FROM o_orderline WHERE ol_o_id = 900011")
				},
				failing: map[string]string{"large-orders-follow-lines": "1 waiting large orders whose line is at most 20 units or of another quantity; 0 lines"},
			},
			{
				name: "a large line of the run with no large order",
				corrupt: func() {
					q.Exec("INSERT INTO o_orderline (ol_o_id, ol_id, ol_i_id, ol_qty, ol_status, ol_ship_date) VALUES (900012, 1, 1, 30, 1, ?)", now)
				},
				repair:  func() { q.Exec("DELETE FROM o_orderline WHERE ol_o_id = 900012") },
				failing: map[string]string{"large-orders-follow-lines": "0 waiting large orders whose line is at most 20 units or of another quantity; 1 lines over 20 units of this run's orders with neither a large order nor a work order"},
			},
			{
				name:    "a customer's balance changed",
				corrupt: func() { q.Exec("UPDATE c_customer SET c_balance = c_balance + 5 WHERE c_id = ?", customer) },
				repair:  func() { q.Exec("UPDATE c_customer SET c_balance = c_balance - 5 WHERE c_id = ?", customer) },
				failing: map[string]string{"balances-match-orders": fmt.Sprintf("1 customers whose balance moved apart from their orders' totals [%d]", customer)},
			},
			{
				name: "a large order's work order completed by no large-order line",
				corrupt: func() {
					q.Exec("INSERT INTO m_workorder (wo_number, wo_o_id, wo_ol_id, wo_status, wo_assembly_id, wo_orig_qty, wo_comp_qty, wo_due_date, wo_start_date) "+
						"SELECT 900013, 900013, 1, ?, wo_assembly_id, wo_orig_qty, wo_orig_qty, wo_due_date, wo_start_date FROM m_workorder WHERE wo_number = ?", int64(woCompleted), wo)
				},
				repair:  func() { q.Exec("DELETE FROM m_workorder WHERE wo_number = 900013") },
				failing: map[string]string{"work-orders-completed": "1 work orders completed in the run, 0 CompleteWorkOrder by the lines; 1 of them for large orders, 0 completed by the large-order lines"},
			},
			{
				name: "a committed PO never sent",
				corrupt: func() {
					q.Exec("INSERT INTO s_purchase_order (po_number, po_supp_id, po_site_id, po_status, po_created) VALUES (900001, 1, 1, ?, ?)", int64(poUnsent), now)
				},
				repair: func() { q.Exec("DELETE FROM s_purchase_order WHERE po_number = 900001") },
				failing: map[string]string{
					"po-sent-exactly-once":    "1 committed but never sent [900001]",
					"deliveries-applied-once": "1 POs unsent and 0 awaiting delivery",
				},
			},
			{
				name: "a PO at the emulator that the database lacks",
				before: func(t *testing.T, a *app) {
					// As from a sync transaction that sent, then aborted. Its
					// lead time outlasts the test: no delivery is attempted.
					doc := emulator.PO{PONumber: 900002, SupplierID: 1, SiteID: 1, Lines: []emulator.POLine{{Line: 1, PartID: "1", Qty: 1, LeadTime: 100_000}}}
					if err := a.dispatch.send(ctx, doc); err != nil {
						t.Fatal(err)
					}
				},
				failing: map[string]string{"po-sent-exactly-once": "0 committed but never sent []; 1 at the emulator that the database lacks and no aborted transaction sent [900002]"},
			},
			{
				// The same PO sent by a sync transaction that then aborted
				// is the reference's flaw, reported and accepted; one
				// alongside that no transaction accounts for is not.
				name: "POs at the emulator that the database lacks, one sent by an aborted transaction",
				before: func(t *testing.T, a *app) {
					for _, n := range []int64{900008, 900009} {
						doc := emulator.PO{PONumber: n, SupplierID: 1, SiteID: 1, Lines: []emulator.POLine{{Line: 1, PartID: "1", Qty: 1, LeadTime: 100_000}}}
						if err := a.dispatch.send(ctx, doc); err != nil {
							t.Fatal(err)
						}
					}
					a.dispatch.abortedAfterSending([]int64{900008})
				},
				failing: map[string]string{"po-sent-exactly-once": "1 at the emulator that the database lacks and no aborted transaction sent [900009]; 0 resent and answered duplicate (idempotent receiver); 1 sent by sync transactions that then aborted [900008]"},
			},
			{
				name: "a PO sent by a sync transaction that then aborted",
				before: func(t *testing.T, a *app) {
					doc := emulator.PO{PONumber: 900008, SupplierID: 1, SiteID: 1, Lines: []emulator.POLine{{Line: 1, PartID: "1", Qty: 1, LeadTime: 100_000}}}
					if err := a.dispatch.send(ctx, doc); err != nil {
						t.Fatal(err)
					}
					a.dispatch.abortedAfterSending([]int64{900008})
				},
				passing: map[string]string{"po-sent-exactly-once": "0 at the emulator that the database lacks and no aborted transaction sent []; 0 resent and answered duplicate (idempotent receiver); 1 sent by sync transactions that then aborted [900008]"},
			},
			{
				// The database has it sent; the emulator does not list it
				// (it restarted): sent all the same, but never delivered.
				name: "a sent PO never delivered",
				corrupt: func() {
					q.Exec("INSERT INTO s_purchase_order (po_number, po_supp_id, po_site_id, po_status, po_created) VALUES (900003, 1, 1, ?, ?)", int64(poSent), now)
				},
				repair:  func() { q.Exec("DELETE FROM s_purchase_order WHERE po_number = 900003") },
				failing: map[string]string{"deliveries-applied-once": "0 POs unsent and 1 awaiting delivery"},
				passing: map[string]string{"po-sent-exactly-once": "0 committed but never sent []; 0 at the emulator that the database lacks and no aborted transaction sent []; 0 resent and answered duplicate (idempotent receiver); 1 sent but unknown to the emulator [900003]"},
			},
			{
				// The bug this check had: a delivered PO the emulator's
				// record lacks is not "never sent".
				name: "a delivered PO the emulator forgot",
				corrupt: func() {
					q.Exec("INSERT INTO s_purchase_order (po_number, po_supp_id, po_site_id, po_status, po_created) VALUES (900004, 1, 1, ?, ?)", int64(poReceived), now)
				},
				repair:  func() { q.Exec("DELETE FROM s_purchase_order WHERE po_number = 900004") },
				passing: map[string]string{"po-sent-exactly-once": "1 POs committed, 0 at the emulator; 0 committed but never sent []", "deliveries-applied-once": "0 POs unsent and 0 awaiting delivery"},
			},
			{
				name:    "a part's quantity on order changed",
				corrupt: func() { q.Exec("UPDATE m_inventory SET in_ordered = in_ordered + 7 WHERE in_p_id = ?", part) },
				repair:  func() { q.Exec("UPDATE m_inventory SET in_ordered = in_ordered - 7 WHERE in_p_id = ?", part) },
				failing: map[string]string{"deliveries-applied-once": "1 parts whose quantity on order differs from their open PO lines"},
			},
			{
				name: "an order nobody placed",
				corrupt: func() {
					q.Exec("INSERT INTO o_orders (o_id, o_c_id, o_ol_cnt, o_discount, o_total, o_status, o_entry_date, o_ship_date) " +
						"SELECT 900005, o_c_id, 0, o_discount, o_total, o_status, o_entry_date, o_ship_date FROM o_orders WHERE o_id = " + fmt.Sprint(order))
				},
				repair: func() { q.Exec("DELETE FROM o_orders WHERE o_id = 900005") },
				failing: map[string]string{
					"orders-match-terminals": fmt.Sprintf("%d orders = %d loaded + 0 NewOrder - 0 CancelOrder (want %d); 0 orders whose line count differs from their lines; 0 large orders",
						pop.Orders+1, pop.Orders, pop.Orders),
					// Its total is on no customer's account.
					"balances-match-orders": fmt.Sprintf("1 customers whose balance moved apart from their orders' totals [%d]", q.Int("SELECT o_c_id FROM o_orders WHERE o_id = ?", order)),
				},
			},
			{
				name:    "an order's line count off",
				corrupt: func() { q.Exec("UPDATE o_orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_id = ?", order) },
				repair:  func() { q.Exec("UPDATE o_orders SET o_ol_cnt = o_ol_cnt - 1 WHERE o_id = ?", order) },
				failing: map[string]string{"orders-match-terminals": "; 1 orders whose line count differs from their lines; 0 large orders"},
			},
			{
				name: "a large order of a cancelled order",
				corrupt: func() {
					q.Exec("INSERT INTO m_largeorder (lo_id, lo_o_id, lo_ol_id, lo_assembly_id, lo_qty, lo_due_date) VALUES (900006, 900006, 1, 1, 30, ?)", now)
				},
				repair:  func() { q.Exec("DELETE FROM m_largeorder WHERE lo_id = 900006") },
				failing: map[string]string{"orders-match-terminals": "; 0 orders whose line count differs from their lines; 1 large orders of cancelled orders"},
			},
			{
				name: "a work order completed by no line",
				corrupt: func() {
					q.Exec("INSERT INTO m_workorder (wo_number, wo_o_id, wo_ol_id, wo_status, wo_assembly_id, wo_orig_qty, wo_comp_qty, wo_due_date, wo_start_date) "+
						"SELECT 900007, wo_o_id, wo_ol_id, ?, wo_assembly_id, wo_orig_qty, wo_orig_qty, wo_due_date, wo_start_date FROM m_workorder WHERE wo_number = ?", int64(woCompleted), wo)
				},
				repair:  func() { q.Exec("DELETE FROM m_workorder WHERE wo_number = 900007") },
				failing: map[string]string{"work-orders-completed": "1 work orders completed in the run, 0 CompleteWorkOrder by the lines"},
			},
		}
		for i, tc := range cases {
			t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				// Each case starts the application: make test runs each
				// on one backend, make test-all on the others.
				storetest.ShareCell(t, dsn, i)
				a := startApp(t, db, cfg)
				if tc.before != nil {
					tc.before(t, a)
				}
				if err := a.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				if tc.corrupt != nil {
					tc.corrupt()
				}
				if tc.repair != nil {
					defer tc.repair()
				}
				checks, err := a.Check(ctx, workload.Outcomes{Succeeded: none})
				if err != nil {
					t.Fatal(err)
				}
				if len(checks) != 6 {
					t.Fatalf("%d checks, want 6: %+v", len(checks), checks)
				}
				for _, c := range checks {
					piece, fails := tc.failing[c.Name]
					if c.Passed == fails {
						t.Errorf("%s: passed %v, want %v: %s", c.Name, c.Passed, !fails, c.Detail)
					}
					if p, ok := tc.passing[c.Name]; ok {
						piece = p
					}
					if !strings.Contains(c.Detail, piece) {
						t.Errorf("%s: detail %q\nwant it to contain %q", c.Name, c.Detail, piece)
					}
				}
			})
		}
	})
}

// testConfig is a run of ECperf at its defaults, options included.
func testConfig() config.Run {
	cfg := config.New("ecperf", config.Defaults{})
	cfg.Options = DefaultOptions
	return cfg
}
