package tpcapp

// The order's money, in cents. The specification's shipping cost matrix
// and tax rule are not in the reference text; these are our choices
// (docs/tpcapp.md): a base cost per ship type plus a rate per started
// litre of volume that grows with the destination's zone, and TPC-W's
// 8.25% tax on the discounted sub-total. Every figure is an integer, so a
// check recomputes each order's total exactly on every database.
const (
	taxBasisPoints = 825
	// litre is the volume (cm³) the zone rate is charged per.
	litre = 1000
	// zones are the shipping zones countries fall in, 1..zones.
	zones = 5
)

// shipBase is each ship type's base cost, in the order of ShipTypes.
var shipBase = map[string]int64{"AIR": 1500, "UPS": 1000, "FEDEX": 1200, "SHIP": 500, "COURIER": 2000, "MAIL": 300}

// zoneRate is the cost per started litre to zone z.
func zoneRate(zone int64) int64 { return 100 * zone }

// shipCost is the cost of shipping volume cm³ by shipType to zone.
func shipCost(shipType string, zone, volume int64) int64 {
	return shipBase[shipType] + zoneRate(zone)*((volume+litre-1)/litre)
}

// totals are an order's sums: the lines' sub-total, the customer's
// discount (basis points) off it, the tax on the rest, and the total with
// shipping.
func totals(lines []Line, discountBP, ship int64) (sub, discount, tax, total int64) {
	for _, l := range lines {
		sub += l.Qty * l.Price
	}
	discount = sub * discountBP / 10000
	tax = (sub - discount) * taxBasisPoints / 10000
	return sub, discount, tax, sub - discount + tax + ship
}

// stockedItem is what pricing an order line needs of its item.
type stockedItem struct{ cost, volume, stock int64 }

// priceOrder is the order o makes: each line at its item's cost, PENDING
// or, short of stock, BACK_ORDERED (and the order with it), the shipping
// cost of the lines' volume to zone, and the totals. item reads a line's
// item; both Data implementations price through here, inside their
// transaction.
func priceOrder(o OrderDraft, zone int64, item func(id int64) (stockedItem, error)) (Order, error) {
	out := Order{Date: o.Date, ShipType: o.ShipType, Status: StatusPending, Lines: make([]Line, 0, len(o.Lines))}
	var volume int64
	for _, l := range o.Lines {
		it, err := item(l.ItemID)
		if err != nil {
			return out, err
		}
		status := StatusPending
		if it.stock < l.Qty {
			status, out.Status = StatusBackOrdered, StatusBackOrdered
		}
		volume += it.volume * l.Qty
		out.Lines = append(out.Lines, Line{ItemID: l.ItemID, Qty: l.Qty, Price: it.cost, Status: status})
	}
	out.ShipCost = shipCost(o.ShipType, zone, volume)
	out.SubTotal, out.Discount, out.Tax, out.Total = totals(out.Lines, o.DiscountBP, out.ShipCost)
	return out, nil
}
