package tpcapp

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// population is the database's size at a scale. The reference gives no
// cardinalities beyond the seed's 100,000 items; the rest follow TPC-W,
// TPC-App's predecessor, per 1,000 items: 250 authors, 2,000 customers
// with two addresses each, 1,800 past orders of 1..5 lines. Scale 100 is
// the seed's database. docs/tpcapp.md.
type population struct {
	Items, Authors, Customers, Addresses, Orders int64
}

func populationAt(scale int) population {
	s := int64(max(scale, 1))
	return population{Items: 1000 * s, Authors: 250 * s, Customers: 2000 * s, Addresses: 4000 * s, Orders: 1800 * s}
}

// Stock rules: an item's stock starts at 10..100; a shipment that leaves
// fewer than reorderThreshold reorders reorderQty from ICE.
const (
	minStock         = 10
	maxStock         = 100
	reorderThreshold = 10
	reorderQty       = 100
	countries        = 92 // TPC-W's
	maxPastLines     = 5
)

// Subjects are TPC-W's, the catalogue's sections that NewProducts asks by.
var Subjects = []string{"ARTS", "BIOGRAPHIES", "BUSINESS", "CHILDREN", "COMPUTERS", "COOKING", "HEALTH", "HISTORY",
	"HOME", "HUMOR", "LITERATURE", "MYSTERY", "NON-FICTION", "PARENTING", "POLITICS", "REFERENCE", "RELIGION",
	"ROMANCE", "SELF-HELP", "SCIENCE-NATURE", "SCIENCE-FICTION", "SPORTS", "YOUTH", "TRAVEL"}

var backings = []string{"HARDBACK", "PAPERBACK", "USED", "AUDIO", "LIMITED-EDITION"}

// gen derives every value of the population from the seed and the row's
// id by hashing, so a row never depends on the order rows are made in and
// the driver can recompute what it needs (a customer's password, an
// item's price) without reading it.
type gen struct {
	seed uint64
	now  time.Time
}

// Tags keep the fields' hashes apart.
const (
	tagStock = iota + 1
	tagCost
	tagVolume
	tagSubject
	tagAuthor
	tagPubDate
	tagPayment
	tagDiscount
	tagCountry
	tagLines
	tagLineItem
	tagLineQty
	tagOrderCustomer
	tagShipType
	tagPages
)

// n is a value in [0, n) for the row id's field tag: the first output of
// a PCG seeded with the seed and the (tag, id) pair, which mixes every bit
// of both.
func (g gen) n(tag int, id int64, n int64) int64 {
	pcg := rand.NewPCG(g.seed, uint64(tag)<<56^uint64(id))
	return int64(pcg.Uint64() % uint64(n))
}

func (g gen) itemCost(id int64) int64   { return 100 + g.n(tagCost, id, 9900) } // $1.00..$99.99
func (g gen) itemSRP(id int64) int64    { return g.itemCost(id) * 5 / 4 }
func (g gen) itemVolume(id int64) int64 { return 100 + g.n(tagVolume, id, 4900) }
func (g gen) itemStock(id int64) int64  { return minStock + g.n(tagStock, id, maxStock-minStock+1) }
func (g gen) itemSubject(id int64) string {
	return Subjects[g.n(tagSubject, id, int64(len(Subjects)))]
}

// itemPubDate lies in the ten years before the load: older than any
// NewProducts cutoff, so that only ChangeItem makes an item new.
func (g gen) itemPubDate(id int64) time.Time {
	return g.now.Add(-time.Hour - time.Duration(g.n(tagPubDate, id, 10*365*24))*time.Hour)
}

// Passwd is customer uname's password: the driver computes it to
// authenticate.
func Passwd(uname string) string { return "pw" + uname }

// Uname is a loaded customer's user name.
func Uname(id int64) string { return "C" + strconv.FormatInt(id, 10) }

func (g gen) customerPayment(id int64) Payment {
	if g.n(tagPayment, id, 10) < 7 {
		return Payment{Method: CreditCard, CardNumber: fmt.Sprintf("4%015d", id), CardName: "Contact " + strconv.FormatInt(id, 10), CardExpiry: "12/29"}
	}
	return Payment{Method: PurchaseOrder, POID: "PO" + strconv.FormatInt(id, 10)}
}

func (g gen) customerDiscount(id int64) int64 { return g.n(tagDiscount, id, 5001) }

// addressOf is address id's fields: addresses 2c−1 and 2c are customer
// c's own and a second one it ships to.
func (g gen) addressOf(id int64) Address {
	return Address{Street1: strconv.FormatInt(id, 10) + " Commerce Street", Street2: "Suite " + strconv.FormatInt(id%500, 10),
		City: "City " + strconv.FormatInt(id%997, 10), State: "ST" + strconv.FormatInt(id%50, 10),
		Zip: fmt.Sprintf("%05d", id%100000), Country: 1 + g.n(tagCountry, id, countries)}
}

func countryZone(id int64) int64 { return 1 + (id-1)%zones }

// pastOrder is a past order's customer, ship type and lines (all shipped).
func (g gen) pastOrder(pop population, id int64) (customer int64, shipType string, lines []Line) {
	customer = 1 + g.n(tagOrderCustomer, id, pop.Customers)
	shipType = ShipTypes[g.n(tagShipType, id, int64(len(ShipTypes)))]
	n := 1 + g.n(tagLines, id, maxPastLines)
	seen := make(map[int64]bool, n)
	for k := int64(0); k < n; k++ {
		item := 1 + g.n(tagLineItem, id*maxPastLines+k, pop.Items)
		if seen[item] {
			continue
		}
		seen[item] = true
		lines = append(lines, Line{ItemID: item, Qty: 1 + g.n(tagLineQty, id*maxPastLines+k, 10), Price: g.itemCost(item), Status: StatusShipped})
	}
	return customer, shipType, lines
}
