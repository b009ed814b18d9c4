package ecperf

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tierbench/tierbench/internal/workload"
)

// population is the initial database at an injection rate Ir, scaled as
// the ECperf 1.1 kit does: customers and orders in steps of 10 Ir,
// parts in steps of 100.
type population struct {
	C, P int64 // the kit's scaling units: ceil(Ir/10)*10 and ceil(Ir/100)*100

	Customers  int64 // c_customer and o_customer rows: 75·C
	Orders     int64 // o_orders rows: 75·C (1..5 lines each)
	Items      int64 // o_item rows, one per assembly: P
	Assemblies int64 // parts 1..P
	Components int64 // parts P+1..11·P
	Parts      int64 // c_parts and m_parts rows: 11·P
}

// bytesPerIr is the loaded database per unit of Ir, measured on SQLite:
// 4.6 MB at Ir 100 (1.0 MB at Ir 1 and 10, the kit's steps of 10).
const bytesPerIr = 46_000

// maxIR: 80,000 terminals, half a gigabyte of rows.
const maxIR = 10_000

func footprintAt(ir int) workload.Footprint {
	ir = max(ir, 1)
	return workload.Footprint{
		DBBytes:   max(workload.PerUnit(ir, bytesPerIr), 1_000_000),
		Terminals: workload.PerUnit(ir, orderTerminalsPerIr+plannedLinesPerIr) + 1, // and the large-order line
	}
}

func populationAt(ir int) population {
	ir64 := int64(max(ir, 1))
	c := (ir64 + 9) / 10 * 10
	p := (ir64 + 99) / 100 * 100
	return population{
		C: c, P: p,
		Customers: 75 * c, Orders: 75 * c,
		Items: p, Assemblies: p, Components: 10 * p, Parts: 11 * p,
	}
}

// The fixed shape of the population.
const (
	popSuppliers         = 10
	popSites             = 1
	popBadCreditPercent  = 10 // of customers: 'BC', limit 0
	popOpenOrderPercent  = 10 // of orders: status open; the rest shipped
	popMaxOrderLines     = 5
	popMinBOMLines       = 5
	popMaxBOMLines       = 15
	popWorkOrderQty      = 11
	popSequenceBlockSize = 100
)

// Values of the schema's status and type columns.
const (
	popOrderOpen      = 1
	popOrderShipped   = 2
	popWorkCompleted  = 4
	popTypeAssembly   = 1
	popTypeComponent  = 2
	popGoodCredit     = "GC"
	popBadCredit      = "BC"
	popAssemblyLomark = 10
	popAssemblyHimark = 100
)

// Value ranges, money in cents.
const (
	popMinCreditLimit = 5_000_000  // $50,000
	popMaxCreditLimit = 50_000_000 // $500,000
	popMaxYTDPayment  = 40_000_000 // $400,000
	popMinItemPrice   = 1_000      // $10
	popMaxItemPrice   = 100_000    // $1,000
	popMinCompCost    = 100        // $1
	popMaxCompCost    = 10_000     // $100
	popMaxDiscount    = 10         // percent, items and supplier quotes
	popMaxLineQty     = 20
	popMaxBOMQty      = 3
	popMinLeadTime    = 2
	popMaxLeadTime    = 10
	popMinContainer   = 10
	popMaxContainer   = 100
	popInventoryFloor = 50 // in_qty ≥ lomark + popInventoryFloor
)

// popEpoch is "now" for every date of the population: fixed, so that a
// seed gives the same database whenever it is loaded.
var popEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const popDay = 24 * 60 * 60 // seconds

// popStream keeps the population's random streams apart from clients'
// streams of the same seed (and from Stock-Online's, 0x5eed_0001). Each
// generator below draws from its own stream, popStream+k, so that tables
// sharing values (c_customer and o_customer, c_parts and m_parts, orders and
// their lines) replay a stream instead of holding the population in memory.
const popStream = 0xec9e_0000

const (
	popStreamCustomers = popStream + iota + 1
	popStreamItems
	popStreamParts
	popStreamBOM
	popStreamInventory
	popStreamOrders
	popStreamWorkOrders
	popStreamComponents
	popStreamQuotes
)

func popRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// popBetween is uniform in [lo, hi].
func popBetween(rng *rand.Rand, lo, hi int64) int64 { return lo + rng.Int64N(hi-lo+1) }

// popSample picks exactly k of n in order, each subset equally likely
// (Knuth's selection sampling): the exact 10% of bad-credit customers
// and open orders without a list of the chosen.
type popSample struct{ left, want int64 }

func (s *popSample) pick(rng *rand.Rand) bool {
	chosen := rng.Int64N(s.left) < s.want
	s.left--
	if chosen {
		s.want--
	}
	return chosen
}

// popCustomer is customer id's row; c_customer and o_customer share all but
// the credit columns.
type popCustomer struct {
	id                                  int64
	first, last, street1, street2, city string
	state, country, zip, phone, contact string
	since                               time.Time
	credit                              string
	creditLimit, ytdPayment             int64
}

type popCustomerGen struct {
	rng *rand.Rand
	n   int64
	bad popSample
	c   popCustomer
}

func newPopCustomerGen(seed uint64, pop population) *popCustomerGen {
	return &popCustomerGen{
		rng: popRand(seed, popStreamCustomers),
		n:   pop.Customers,
		bad: popSample{left: pop.Customers, want: pop.Customers * popBadCreditPercent / 100},
	}
}

func (g *popCustomerGen) next() bool {
	if g.c.id == g.n {
		return false
	}
	r, c := g.rng, &g.c
	c.id++
	c.first = popFirstNames[r.IntN(len(popFirstNames))]
	c.last = popLastName(r.IntN(1000))
	c.street1 = popItoa(popBetween(r, 1, 9999)) + " " + popStreets[r.IntN(len(popStreets))]
	c.street2 = "Apt " + popItoa(popBetween(r, 1, 999))
	city := r.IntN(len(popCities))
	c.city, c.state, c.country = popCities[city].name, popCities[city].state, "USA"
	c.zip = popItoa(popBetween(r, 10000, 99999)) + "1111"
	c.phone = popItoa(popBetween(r, 200_000_0000, 999_999_9999))
	c.contact = c.first + " " + c.last
	c.since = popEpoch.Add(-time.Duration(r.Int64N(10*365*popDay+1)) * time.Second)
	if g.bad.pick(r) {
		c.credit, c.creditLimit = popBadCredit, 0
	} else {
		c.credit, c.creditLimit = popGoodCredit, popBetween(r, popMinCreditLimit, popMaxCreditLimit)
	}
	c.ytdPayment = r.Int64N(popMaxYTDPayment + 1)
	return true
}

// popItemPrices are the prices of items 1..P (index id-1) with their
// discounts: orders need them at random, and the items table is small.
func popItemPrices(seed uint64, pop population) (price, discount []int64) {
	rng := popRand(seed, popStreamItems)
	price, discount = make([]int64, pop.Items), make([]int64, pop.Items)
	for i := range price {
		price[i] = popBetween(rng, popMinItemPrice, popMaxItemPrice)
		discount[i] = rng.Int64N(popMaxDiscount + 1)
	}
	return price, discount
}

// popPart is part id's row of c_parts and m_parts.
type popPart struct {
	id             int64
	typ            int64
	cost, price    int64
	planner        int64
	lomark, himark int64
}

// popPartGen gives parts 1..11·P: assemblies first, then components.
// Tables of per-part values (inventory, components, supplier quotes) run
// their own copy beside their own stream.
type popPartGen struct {
	rng        *rand.Rand
	pop        population
	itemPrices []int64
	p          popPart
}

func newPopPartGen(seed uint64, pop population, itemPrices []int64) *popPartGen {
	return &popPartGen{rng: popRand(seed, popStreamParts), pop: pop, itemPrices: itemPrices}
}

func (g *popPartGen) next() bool {
	if g.p.id == g.pop.Parts {
		return false
	}
	r, p := g.rng, &g.p
	p.id++
	p.planner = popBetween(r, 1, 10)
	if p.id <= g.pop.Assemblies {
		p.typ = popTypeAssembly
		p.price = g.itemPrices[p.id-1]
		p.cost = p.price * 70 / 100
		p.lomark, p.himark = popAssemblyLomark, popAssemblyHimark
		return true
	}
	p.typ = popTypeComponent
	p.cost = popBetween(r, popMinCompCost, popMaxCompCost)
	p.price = p.cost * 110 / 100
	p.lomark = popBetween(r, 100, 200)
	p.himark = p.lomark + popBetween(r, 300, 500)
	return true
}

// popOrder is order id with its lines.
type popOrder struct {
	id          int64
	customer    int64
	lines       int
	item, qty   [popMaxOrderLines]int64
	total       int64
	status      int64
	entry, ship time.Time
}

// popOrderGen gives orders 1..75·C; o_orders and o_orderline each run a
// copy.
type popOrderGen struct {
	rng        *rand.Rand
	pop        population
	itemPrices []int64
	open       popSample
	o          popOrder
}

func newPopOrderGen(seed uint64, pop population, itemPrices []int64) *popOrderGen {
	return &popOrderGen{
		rng: popRand(seed, popStreamOrders), pop: pop, itemPrices: itemPrices,
		open: popSample{left: pop.Orders, want: pop.Orders * popOpenOrderPercent / 100},
	}
}

func (g *popOrderGen) next() bool {
	if g.o.id == g.pop.Orders {
		return false
	}
	r, o := g.rng, &g.o
	o.id++
	o.customer = popBetween(r, 1, g.pop.Customers)
	o.lines = 1 + r.IntN(popMaxOrderLines)
	o.total = 0
	for i := range o.lines {
		o.item[i] = popBetween(r, 1, g.pop.Items)
		o.qty[i] = popBetween(r, 1, popMaxLineQty)
		o.total += g.itemPrices[o.item[i]-1] * o.qty[i]
	}
	o.status = popOrderShipped
	if g.open.pick(r) {
		o.status = popOrderOpen
	}
	// Entered 8 to 90 days before the epoch, shipped (or due) 1 to 7 days
	// later: before the epoch either way.
	o.entry = popEpoch.Add(-time.Duration(popBetween(r, 8*popDay, 90*popDay)) * time.Second)
	o.ship = o.entry.Add(time.Duration(popBetween(r, popDay, 7*popDay)) * time.Second)
	return true
}

// Names and places: constant tables the generators pick from.
var (
	popFirstNames = [...]string{
		"Alice", "Bruno", "Chen", "Dana", "Emeka", "Fatima", "Gustav", "Hana", "Ivan", "Jun",
		"Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara",
	}
	popSyllables = [...]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}
	popStreets   = [...]string{"Main St", "Oak Ave", "Pine Rd", "Maple St", "Cedar Ln", "Elm St", "Lake Dr", "Hill Rd", "Park Ave", "Bay St"}
	popCities    = [...]struct{ name, state string }{
		{"Springfield", "IL"}, {"Portland", "OR"}, {"Austin", "TX"}, {"Boston", "MA"}, {"Denver", "CO"},
		{"Madison", "WI"}, {"Raleigh", "NC"}, {"Tucson", "AZ"}, {"Albany", "NY"}, {"Fresno", "CA"},
	}
)

// popLastName is TPC-C's last name of n in 0..999: three syllables, at
// most 15 letters.
func popLastName(n int) string {
	return popSyllables[n/100] + popSyllables[n/10%10] + popSyllables[n%10]
}

func popItoa(n int64) string { return strconv.FormatInt(n, 10) }
