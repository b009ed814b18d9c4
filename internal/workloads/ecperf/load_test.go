package ecperf

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

func TestPopulationAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ir   int
		c, p int64
	}{{0, 10, 100}, {1, 10, 100}, {10, 10, 100}, {15, 20, 100}, {100, 100, 100}, {101, 110, 200}} {
		pop := populationAt(tc.ir)
		if pop.C != tc.c || pop.P != tc.p {
			t.Errorf("populationAt(%d): C=%d P=%d, want C=%d P=%d", tc.ir, pop.C, pop.P, tc.c, tc.p)
		}
		if pop.Customers != 75*tc.c || pop.Orders != 75*tc.c || pop.Items != tc.p ||
			pop.Assemblies != tc.p || pop.Components != 10*tc.p || pop.Parts != 11*tc.p {
			t.Errorf("populationAt(%d) = %+v", tc.ir, pop)
		}
	}
}

// TestLoad loads Ir = 1 and Ir = 15 into every backend and checks the
// population against the schema contract. It loads over a copy of the
// other tests' population (another seed): the load drops and recreates
// every table, so the rows must be this load's alone, none left or
// doubled. (The load into an empty database is the one every test binary
// makes once per backend for populate.)
func TestLoad(t *testing.T) {
	t.Parallel()
	const seed = 42
	for _, ir := range []int{1, 15} {
		want := popChecksumsOf(seed, populationAt(ir))
		t.Run(fmt.Sprintf("Ir=%d", ir), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, dsn string) {
				ctx := context.Background()
				populate(t, dsn)
				db := storetest.Open(t, dsn, store.Options{Threads: 1})
				pop := populationAt(ir)
				report, err := load(ctx, db, workload.LoadParams{Scale: ir, Seed: seed})
				if err != nil {
					t.Fatalf("load Ir=%d: %v", ir, err)
				}
				q := storetest.Querier{T: t, DB: db}
				checkLoadCounts(t, q, report, pop)
				checkLoadRules(t, q, pop)
				if got := popChecksumsFrom(q); got != want {
					t.Errorf("Ir=%d checksums %+v, want %+v (the generators' own)", ir, got, want)
				}
				checkLoadIdentities(t, q, pop)
			})
		})
	}
}

// TestLoadSeeds checks that another seed gives another population.
func TestLoadSeeds(t *testing.T) {
	t.Parallel()
	pop := populationAt(1)
	if a, b := popChecksumsOf(1, pop), popChecksumsOf(2, pop); a == b {
		t.Errorf("seeds 1 and 2 give the same checksums %+v", a)
	}
}

func checkLoadCounts(t *testing.T, q storetest.Querier, report workload.LoadReport, pop population) {
	t.Helper()
	lines := q.Int("SELECT SUM(o_ol_cnt) FROM o_orders")
	bom := q.Int("SELECT COUNT(*) FROM m_bom")
	want := map[string]int64{
		"c_customer": pop.Customers, "o_customer": pop.Customers, "o_orders": pop.Orders, "o_orderline": lines,
		"o_item": pop.P, "c_parts": 11 * pop.P, "m_parts": 11 * pop.P, "m_inventory": 11 * pop.P,
		"s_component": 10 * pop.P, "s_supp_component": 100 * pop.P, "m_bom": bom, "m_workorder": pop.P,
		"c_supplier": 10, "s_supplier": 10, "c_site": 1, "s_site": 1, "c_discount": 6, "c_rule": 5, "u_sequences": 5,
		"m_largeorder": 0, "s_purchase_order": 0, "s_purchase_orderline": 0, "s_outbox": 0,
	}
	if lines < pop.Orders || lines > popMaxOrderLines*pop.Orders {
		t.Errorf("%d order lines for %d orders", lines, pop.Orders)
	}
	if bom < popMinBOMLines*pop.P || bom > popMaxBOMLines*pop.P {
		t.Errorf("%d BOM rows for %d assemblies", bom, pop.P)
	}
	q.WantRows(want, report.Tables, report.Rows)
	if report.Duration <= 0 {
		t.Errorf("report: duration %v", report.Duration)
	}
}

func checkLoadRules(t *testing.T, q storetest.Querier, pop population) {
	t.Helper()
	zero := []struct{ what, sql string }{
		{"bad-credit customers with a limit", "SELECT COUNT(*) FROM c_customer WHERE c_credit = 'BC' AND c_credit_limit <> 0"},
		{"good-credit customers out of limits", "SELECT COUNT(*) FROM c_customer WHERE c_credit = 'GC' AND (c_credit_limit < 5000000 OR c_credit_limit > 50000000)"},
		{"customers of another credit", "SELECT COUNT(*) FROM c_customer WHERE c_credit NOT IN ('GC', 'BC')"},
		{"customers differing between c_ and o_customer", "SELECT COUNT(*) FROM c_customer c JOIN o_customer o ON o.c_id = c.c_id " +
			"WHERE o.c_first <> c.c_first OR o.c_last <> c.c_last OR o.c_street1 <> c.c_street1 OR o.c_zip <> c.c_zip OR o.c_since <> c.c_since"},
		{"inventory outside [lomark+50, himark]", "SELECT COUNT(*) FROM m_inventory JOIN m_parts ON p_id = in_p_id WHERE in_qty < p_lomark + 50 OR in_qty > p_himark"},
		{"orders whose o_ol_cnt is not their line count", "SELECT COUNT(*) FROM o_orders WHERE o_ol_cnt <> (SELECT COUNT(*) FROM o_orderline WHERE ol_o_id = o_id)"},
		{"orders whose total is not the sum of their lines", "SELECT COUNT(*) FROM o_orders WHERE o_total <> " +
			"(SELECT SUM(i_price * ol_qty) FROM o_orderline JOIN o_item ON i_id = ol_i_id WHERE ol_o_id = o_id)"},
		{"lines of another status than their order", "SELECT COUNT(*) FROM o_orderline JOIN o_orders ON o_id = ol_o_id WHERE ol_status <> o_status"},
		{"orders of unknown customers", "SELECT COUNT(*) FROM o_orders WHERE o_c_id NOT IN (SELECT c_id FROM o_customer)"},
		{"BOM rows of a non-component", "SELECT COUNT(*) FROM m_bom JOIN m_parts ON p_id = b_comp_id WHERE p_type <> 2"},
		{"parts differing between c_ and m_parts", "SELECT COUNT(*) FROM c_parts c JOIN m_parts m ON m.p_id = c.p_id " +
			"WHERE m.p_name <> c.p_name OR m.p_type <> c.p_type OR m.p_lomark <> c.p_lomark OR m.p_himark <> c.p_himark OR m.p_planner <> c.p_planner"},
		{"components whose cost is not their part's", "SELECT COUNT(*) FROM s_component JOIN c_parts ON p_id = comp_id WHERE comp_cost <> p_cost OR p_type <> 2"},
		{"quotes out of range", "SELECT COUNT(*) FROM s_supp_component JOIN s_component ON comp_id = sc_p_id " +
			"WHERE sc_price * 100 < comp_cost * 90 - 100 OR sc_price * 100 > comp_cost * 110 OR sc_del_date < 2 OR sc_del_date > 10 OR sc_qty <> 1"},
	}
	for _, z := range zero {
		if n := q.Int(z.sql); n != 0 {
			t.Errorf("%d %s", n, z.what)
		}
	}
	if got, want := q.Int("SELECT COUNT(*) FROM c_customer WHERE c_credit = 'BC'"), pop.Customers/10; got != want {
		t.Errorf("%d bad-credit customers of %d, want %d", got, pop.Customers, want)
	}
	if got, want := q.Int("SELECT COUNT(*) FROM o_orders WHERE o_status = 1"), pop.Orders/10; got != want {
		t.Errorf("%d open orders of %d, want %d", got, pop.Orders, want)
	}
	bomMin := q.Int("SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM m_bom GROUP BY b_assembly_id) x")
	bomMax := q.Int("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM m_bom GROUP BY b_assembly_id) x")
	assemblies := q.Int("SELECT COUNT(DISTINCT b_assembly_id) FROM m_bom")
	if bomMin < popMinBOMLines || bomMax > popMaxBOMLines || assemblies != pop.P {
		t.Errorf("BOM: %d assemblies with %d..%d components, want %d with 5..15", assemblies, bomMin, bomMax, pop.P)
	}
	if n := q.Int("SELECT COUNT(*) FROM m_workorder WHERE wo_status = 4 AND wo_orig_qty = 11 AND wo_comp_qty = 11 AND wo_assembly_id BETWEEN 1 AND ?", pop.P); n != pop.P {
		t.Errorf("%d completed work orders of assemblies, want %d", n, pop.P)
	}
	if n := q.Int("SELECT s_nextnum FROM u_sequences WHERE s_id = 'customer'"); n != pop.Customers+1 {
		t.Errorf("customer sequence at %d, want %d", n, pop.Customers+1)
	}
	// Timestamps come back as times on every backend, as loaded.
	gen := newPopCustomerGen(42, pop)
	gen.next()
	var since time.Time
	if err := q.Row("SELECT c_since FROM c_customer WHERE c_id = 1").Scan(&since); err != nil {
		t.Errorf("c_since of customer 1: %v", err)
	} else if !since.Equal(gen.c.since) {
		t.Errorf("c_since of customer 1 is %v, want %v", since, gen.c.since)
	}
}

// checkLoadIdentities inserts a row without its key into each table whose
// key the database generates: the key must come after the loaded ones.
func checkLoadIdentities(t *testing.T, q storetest.Querier, pop population) {
	t.Helper()
	at := popEpoch
	for _, tc := range []struct {
		table, key string
		loaded     int64
		insert     string
		args       []any
	}{
		{"c_customer", "c_id", pop.Customers, "INSERT INTO c_customer (c_first, c_last, c_street1, c_street2, c_city, c_state, c_country, c_zip, " +
			"c_phone, c_contact, c_since, c_balance, c_credit, c_credit_limit, c_ytd_payment) VALUES ('A', 'B', 'C', 'D', 'E', 'FF', 'G', 'H', 'I', 'J', ?, 0, 'GC', 1, 0)", []any{at}},
		{"o_orders", "o_id", pop.Orders, "INSERT INTO o_orders (o_c_id, o_ol_cnt, o_discount, o_total, o_status, o_entry_date, o_ship_date) VALUES (1, 0, 0, 0, 1, ?, ?)", []any{at, at}},
		{"m_workorder", "wo_number", pop.P, "INSERT INTO m_workorder (wo_o_id, wo_ol_id, wo_status, wo_assembly_id, wo_orig_qty, wo_comp_qty, wo_due_date, wo_start_date) " +
			"VALUES (0, 0, 1, 1, 1, 0, ?, ?)", []any{at, at}},
		{"m_largeorder", "lo_id", 0, "INSERT INTO m_largeorder (lo_o_id, lo_ol_id, lo_assembly_id, lo_qty, lo_due_date) VALUES (1, 1, 1, 1, ?)", []any{at}},
		{"s_purchase_order", "po_number", 0, "INSERT INTO s_purchase_order (po_supp_id, po_site_id, po_status, po_created) VALUES (1, 1, 0, ?)", []any{at}},
	} {
		q.Exec(tc.insert, tc.args...)
		if got := q.Int("SELECT MAX(" + tc.key + ") FROM " + tc.table); got <= tc.loaded {
			t.Errorf("%s: the generated %s is %d, not after the loaded %d", tc.table, tc.key, got, tc.loaded)
		}
	}
}

// popChecksums are sums over a few tables that a seed fixes.
type popChecksums struct {
	CreditLimits, BOMQty, InventoryQty, OrderTotals, QuotePrices int64
}

func popChecksumsFrom(q storetest.Querier) popChecksums {
	return popChecksums{
		CreditLimits: q.Int("SELECT SUM(c_credit_limit) FROM c_customer"),
		BOMQty:       q.Int("SELECT SUM(b_qty) FROM m_bom"),
		InventoryQty: q.Int("SELECT SUM(in_qty) FROM m_inventory"),
		OrderTotals:  q.Int("SELECT SUM(o_total) FROM o_orders"),
		QuotePrices:  q.Int("SELECT SUM(sc_price) FROM s_supp_component"),
	}
}

// popChecksumsOf computes the checksums from the generators, without a
// database: every backend must match them.
func popChecksumsOf(seed uint64, pop population) popChecksums {
	var s popChecksums
	// The column summed, by its index in the table's row.
	col := map[string]int{"c_customer": 14, "m_bom": 3, "m_inventory": 1, "o_orders": 4, "s_supp_component": 2}
	for _, tbl := range popTables(seed, pop) {
		i, ok := col[tbl.name]
		if !ok {
			continue
		}
		var sum int64
		for tbl.rows.Next() {
			sum += tbl.rows.Values()[i].(int64)
		}
		switch tbl.name {
		case "c_customer":
			s.CreditLimits = sum
		case "m_bom":
			s.BOMQty = sum
		case "m_inventory":
			s.InventoryQty = sum
		case "o_orders":
			s.OrderTotals = sum
		case "s_supp_component":
			s.QuotePrices = sum
		}
	}
	return s
}
