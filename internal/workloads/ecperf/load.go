package ecperf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// load recreates the ECperf tables and writes the kit's population at
// Ir = p.Scale (at least 1), reproducibly from p.Seed: the same seed gives
// the same rows on every backend. Every table goes through BulkInsert
// (COPY on PostgreSQL), its rows generated as they are sent.
func load(ctx context.Context, db *store.DB, p workload.LoadParams) (workload.LoadReport, error) {
	began := time.Now()
	pop := populationAt(p.Scale)
	ddl, err := schemaScript(db.Dialect())
	if err != nil {
		return workload.LoadReport{}, err
	}
	after, err := afterLoadScript(db.Dialect())
	if err != nil {
		return workload.LoadReport{}, err
	}
	if err := db.ExecScript(ctx, ddl); err != nil {
		return workload.LoadReport{}, fmt.Errorf("create schema: %w", err)
	}
	report := workload.LoadReport{Tables: make(map[string]int64)}
	for _, t := range popTables(p.Seed, pop) {
		if t.rows == nil {
			report.Tables[t.name] = 0
			continue
		}
		n, err := db.BulkInsert(ctx, t.name, t.columns, t.rows)
		if err != nil {
			return report, err
		}
		report.Tables[t.name] = n
		report.Rows += n
	}
	if err := db.ExecScript(ctx, after); err != nil {
		return report, fmt.Errorf("after load: %w", err)
	}
	report.Duration = time.Since(began)
	return report, nil
}

// popTable is a table of the population and the source of its rows (nil:
// loaded empty).
type popTable struct {
	name    string
	columns []string
	rows    store.RowSource
}

func popTables(seed uint64, pop population) []popTable {
	prices, discounts := popItemPrices(seed, pop)
	parts := func() *popPartGen { return newPopPartGen(seed, pop, prices) }
	return []popTable{
		{"c_customer", []string{"c_id", "c_first", "c_last", "c_street1", "c_street2", "c_city", "c_state", "c_country", "c_zip",
			"c_phone", "c_contact", "c_since", "c_balance", "c_credit", "c_credit_limit", "c_ytd_payment"},
			&popCustomerRows{gen: newPopCustomerGen(seed, pop), credit: true}},
		{"o_customer", []string{"c_id", "c_first", "c_last", "c_street1", "c_street2", "c_city", "c_state", "c_country", "c_zip",
			"c_phone", "c_contact", "c_since"},
			&popCustomerRows{gen: newPopCustomerGen(seed, pop)}},
		{"c_supplier", popSupplierColumns[:len(popSupplierColumns)-1], popSupplierRows(false)},
		{"s_supplier", popSupplierColumns, popSupplierRows(true)},
		{"c_site", popSiteColumns, popSiteRows()},
		{"s_site", popSiteColumns, popSiteRows()},
		{"c_discount", []string{"d_id", "d_percent"}, popDiscountRows()},
		{"c_rule", []string{"r_id", "r_text"}, popRuleRows()},
		{"o_item", []string{"i_id", "i_name", "i_desc", "i_price", "i_discount"}, &popItemRows{price: prices, discount: discounts}},
		{"c_parts", []string{"p_id", "p_name", "p_desc", "p_rev", "p_unit", "p_cost", "p_price", "p_planner", "p_type", "p_ind", "p_lomark", "p_himark"},
			&popPartRows{gen: parts(), corporate: true}},
		{"m_parts", []string{"p_id", "p_name", "p_desc", "p_rev", "p_planner", "p_type", "p_ind", "p_lomark", "p_himark"},
			&popPartRows{gen: parts()}},
		{"m_bom", []string{"b_assembly_id", "b_comp_id", "b_line_no", "b_qty", "b_ops", "b_eng_change", "b_ops_desc"},
			&popBOMRows{rng: popRand(seed, popStreamBOM), pop: pop}},
		{"m_inventory", []string{"in_p_id", "in_qty", "in_ordered", "in_location", "in_acc_code", "in_act_date"},
			&popInventoryRows{parts: parts(), rng: popRand(seed, popStreamInventory)}},
		{"s_component", []string{"comp_id", "comp_name", "comp_desc", "comp_unit", "comp_cost", "qty_on_order", "qty_demanded", "lead_time", "container_size"},
			&popComponentRows{parts: parts(), rng: popRand(seed, popStreamComponents)}},
		{"s_supp_component", []string{"sc_p_id", "sc_supp_id", "sc_price", "sc_qty", "sc_discount", "sc_del_date"},
			&popQuoteRows{parts: parts(), rng: popRand(seed, popStreamQuotes)}},
		{"o_orders", []string{"o_id", "o_c_id", "o_ol_cnt", "o_discount", "o_total", "o_status", "o_entry_date", "o_ship_date"},
			&popOrderRows{gen: newPopOrderGen(seed, pop, prices)}},
		{"o_orderline", []string{"ol_o_id", "ol_id", "ol_i_id", "ol_qty", "ol_status", "ol_ship_date"},
			&popOrderLineRows{gen: newPopOrderGen(seed, pop, prices)}},
		{"m_workorder", []string{"wo_number", "wo_o_id", "wo_ol_id", "wo_status", "wo_assembly_id", "wo_orig_qty", "wo_comp_qty", "wo_due_date", "wo_start_date"},
			&popWorkOrderRows{rng: popRand(seed, popStreamWorkOrders), pop: pop}},
		{"u_sequences", []string{"s_id", "s_nextnum", "s_blocksize"}, popSequenceRows(pop)},
		{"m_largeorder", nil, nil},
		{"s_purchase_order", nil, nil},
		{"s_purchase_orderline", nil, nil},
		{"s_outbox", nil, nil},
	}
}

// popEpochArg is popEpoch boxed once, for the many rows dated at the epoch.
var popEpochArg any = popEpoch

type popCustomerRows struct {
	gen    *popCustomerGen
	credit bool // c_customer's credit columns, not o_customer's
	row    [16]any
}

func (r *popCustomerRows) Next() bool {
	if !r.gen.next() {
		return false
	}
	c := &r.gen.c
	r.row = [16]any{c.id, c.first, c.last, c.street1, c.street2, c.city, c.state, c.country, c.zip,
		c.phone, c.contact, c.since, int64(0), c.credit, c.creditLimit, c.ytdPayment}
	return true
}

func (r *popCustomerRows) Values() []any {
	if r.credit {
		return r.row[:]
	}
	return r.row[:12]
}

type popItemRows struct {
	price, discount []int64
	i               int
	row             [5]any
}

func (r *popItemRows) Next() bool {
	if r.i == len(r.price) {
		return false
	}
	r.i++
	id := int64(r.i)
	r.row = [5]any{id, "Item " + popItoa(id), "Assembly " + popItoa(id) + " as sold", r.price[r.i-1], r.discount[r.i-1]}
	return true
}

func (r *popItemRows) Values() []any { return r.row[:] }

// popPartRows are c_parts (corporate) or m_parts rows.
type popPartRows struct {
	gen       *popPartGen
	corporate bool
	row       [12]any
}

func (r *popPartRows) Next() bool {
	if !r.gen.next() {
		return false
	}
	p := &r.gen.p
	name, desc := popPartName(p)
	if r.corporate {
		r.row = [12]any{p.id, name, desc, "A", "each", p.cost, p.price, p.planner, p.typ, int64(0), p.lomark, p.himark}
	} else {
		r.row = [12]any{p.id, name, desc, "A", p.planner, p.typ, int64(0), p.lomark, p.himark}
	}
	return true
}

func (r *popPartRows) Values() []any {
	if r.corporate {
		return r.row[:]
	}
	return r.row[:9]
}

// popPartName is a part's p_name (at most 10 characters up to id 9,999,999)
// and p_desc.
func popPartName(p *popPart) (name, desc string) {
	id := popItoa(p.id)
	if p.typ == popTypeAssembly {
		return "ASM" + id, "Assembly " + id
	}
	return "CMP" + id, "Component " + id
}

// popBOMRows give every assembly 5..15 distinct random components.
type popBOMRows struct {
	rng      *rand.Rand
	pop      population
	assembly int64
	comps    [popMaxBOMLines]int64
	n, line  int
	row      [7]any
}

func (r *popBOMRows) Next() bool {
	if r.line == r.n {
		if r.assembly == r.pop.Assemblies {
			return false
		}
		r.assembly++
		r.n, r.line = int(popBetween(r.rng, popMinBOMLines, popMaxBOMLines)), 0
		for i := 0; i < r.n; {
			c := r.pop.Assemblies + 1 + r.rng.Int64N(r.pop.Components)
			dup := false
			for _, have := range r.comps[:i] {
				dup = dup || have == c
			}
			if !dup {
				r.comps[i] = c
				i++
			}
		}
	}
	line := int64(r.line + 1)
	r.row = [7]any{r.assembly, r.comps[r.line], line, popBetween(r.rng, 1, popMaxBOMQty), line, "", popOpsDesc[r.line]}
	r.line++
	return true
}

func (r *popBOMRows) Values() []any { return r.row[:] }

var popOpsDesc = func() (d [popMaxBOMLines]any) {
	for i := range d {
		d[i] = fmt.Sprintf("Operation %d: fit and fasten", i+1)
	}
	return d
}()

type popInventoryRows struct {
	parts *popPartGen
	rng   *rand.Rand
	row   [6]any
}

func (r *popInventoryRows) Next() bool {
	if !r.parts.next() {
		return false
	}
	p := &r.parts.p
	qty := popBetween(r.rng, p.lomark+popInventoryFloor, p.himark)
	r.row = [6]any{p.id, qty, int64(0), popLocations[r.rng.IntN(len(popLocations))], popBetween(r.rng, 1, 100), popEpochArg}
	return true
}

func (r *popInventoryRows) Values() []any { return r.row[:] }

var popLocations = [...]any{"Bay 1 Aisle A", "Bay 1 Aisle B", "Bay 2 Aisle A", "Bay 2 Aisle B", "Bay 3 Aisle A",
	"Bay 3 Aisle B", "Yard North", "Yard South", "Dock East", "Dock West"}

// popComponentRows are s_component rows: one per component part.
type popComponentRows struct {
	parts *popPartGen
	rng   *rand.Rand
	row   [9]any
}

func (r *popComponentRows) Next() bool {
	for r.parts.next() {
		p := &r.parts.p
		if p.typ != popTypeComponent {
			continue
		}
		name, desc := popPartName(p)
		r.row = [9]any{p.id, name, desc, "each", p.cost, int64(0), int64(0),
			popBetween(r.rng, popMinLeadTime, popMaxLeadTime), popBetween(r.rng, popMinContainer, popMaxContainer)}
		return true
	}
	return false
}

func (r *popComponentRows) Values() []any { return r.row[:] }

// popQuoteRows are s_supp_component rows: every supplier's quote for every
// component.
type popQuoteRows struct {
	parts    *popPartGen
	rng      *rand.Rand
	supplier int64 // of the current component; popSuppliers: next component
	row      [6]any
}

func (r *popQuoteRows) Next() bool {
	p := &r.parts.p
	if r.supplier == 0 || r.supplier == popSuppliers {
		for {
			if !r.parts.next() {
				return false
			}
			if p.typ == popTypeComponent {
				break
			}
		}
		r.supplier = 0
	}
	r.supplier++
	price := p.cost * popBetween(r.rng, 90, 110) / 100
	r.row = [6]any{p.id, r.supplier, price, int64(1), r.rng.Int64N(popMaxDiscount + 1), popBetween(r.rng, popMinLeadTime, popMaxLeadTime)}
	return true
}

func (r *popQuoteRows) Values() []any { return r.row[:] }

type popOrderRows struct {
	gen *popOrderGen
	row [8]any
}

func (r *popOrderRows) Next() bool {
	if !r.gen.next() {
		return false
	}
	o := &r.gen.o
	r.row = [8]any{o.id, o.customer, int64(o.lines), int64(0), o.total, o.status, o.entry, o.ship}
	return true
}

func (r *popOrderRows) Values() []any { return r.row[:] }

// popOrderLineRows replay the orders' stream, line by line; a line takes
// its order's status and ship date.
type popOrderLineRows struct {
	gen  *popOrderGen
	line int
	ship any
	row  [6]any
}

func (r *popOrderLineRows) Next() bool {
	o := &r.gen.o
	if r.line == o.lines {
		if !r.gen.next() {
			return false
		}
		r.line, r.ship = 0, o.ship
	}
	r.row = [6]any{o.id, int64(r.line + 1), o.item[r.line], o.qty[r.line], o.status, r.ship}
	r.line++
	return true
}

func (r *popOrderLineRows) Values() []any { return r.row[:] }

// popWorkOrderRows are P completed work orders for planned (not ordered)
// assemblies, so that m_workorder starts non-empty.
type popWorkOrderRows struct {
	rng *rand.Rand
	pop population
	id  int64
	row [9]any
}

func (r *popWorkOrderRows) Next() bool {
	if r.id == r.pop.Assemblies {
		return false
	}
	r.id++
	start := popEpoch.Add(-time.Duration(popBetween(r.rng, 8*popDay, 30*popDay)) * time.Second)
	due := start.Add(time.Duration(popBetween(r.rng, popDay, 7*popDay)) * time.Second)
	r.row = [9]any{r.id, int64(0), int64(0), int64(popWorkCompleted), popBetween(r.rng, 1, r.pop.Assemblies),
		int64(popWorkOrderQty), int64(popWorkOrderQty), due, start}
	return true
}

func (r *popWorkOrderRows) Values() []any { return r.row[:] }

// popStaticRows are a few fixed rows.
type popStaticRows struct {
	rows [][]any
	i    int
}

func (r *popStaticRows) Next() bool {
	if r.i == len(r.rows) {
		return false
	}
	r.i++
	return true
}

func (r *popStaticRows) Values() []any { return r.rows[r.i-1] }

var (
	popSupplierColumns = []string{"supp_id", "supp_name", "supp_street1", "supp_street2", "supp_city", "supp_state",
		"supp_country", "supp_zip", "supp_phone", "supp_contact", "supp_url"}
	popSiteColumns = []string{"site_id", "site_name", "site_street1", "site_street2", "site_city", "site_state",
		"site_country", "site_zip"}
)

// popSupplierRows are suppliers 1..10 of c_supplier, or of s_supplier with
// its supp_url.
func popSupplierRows(withURL bool) *popStaticRows {
	rows := make([][]any, popSuppliers)
	for i := range rows {
		id := int64(i + 1)
		city := popCities[i%len(popCities)]
		row := []any{id, "Supplier " + popItoa(id), popItoa(100*id) + " Industrial Way", "Unit " + popItoa(id),
			city.name, city.state, "USA", popItoa(60000+id) + "1111", "555" + popItoa(1_000_000+id), "Sales desk " + popItoa(id)}
		if withURL {
			row = append(row, "")
		}
		rows[i] = row
	}
	return &popStaticRows{rows: rows}
}

func popSiteRows() *popStaticRows {
	return &popStaticRows{rows: [][]any{{int64(1), "Plant 1", "1 Factory Road", "Gate 1", "Springfield", "IL", "USA", "627011111"}}}
}

func popDiscountRows() *popStaticRows {
	return &popStaticRows{rows: [][]any{
		{"platinum", int64(40)}, {"gold", int64(30)}, {"silver", int64(20)},
		{"longtime", int64(10)}, {"firsttime", int64(15)}, {"none", int64(0)},
	}}
}

func popRuleRows() *popStaticRows {
	return &popStaticRows{rows: [][]any{
		{"platinum", "Platinum: year-to-date payment over $300,000"},
		{"gold", "Gold: year-to-date payment over $200,000"},
		{"silver", "Silver: year-to-date payment over $100,000"},
		{"longtime", "LongTime: customer for more than 5 years"},
		{"firsttime", "FirstTime: no previous order"},
	}}
}

// popSequenceRows are the next free key of each sequence the kit hands out
// in blocks.
func popSequenceRows(pop population) *popStaticRows {
	return &popStaticRows{rows: [][]any{
		{"customer", pop.Customers + 1, int64(popSequenceBlockSize)},
		{"order", pop.Orders + 1, int64(popSequenceBlockSize)},
		{"workorder", pop.Assemblies + 1, int64(popSequenceBlockSize)},
		{"largeorder", int64(1), int64(popSequenceBlockSize)},
		{"po", int64(1), int64(popSequenceBlockSize)},
	}}
}
