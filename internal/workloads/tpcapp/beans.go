package tpcapp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Beans is Data on the entity container (--persistence cmp, bmp,
// bmp-checked), the way DBT4 ran TPC-App's methods on Hibernate entities:
// a method's work is one container transaction of finds by key or finder
// and field reads and writes, and the SQL those turn into is the
// container's (see entities.go). What it returns and writes equals
// Direct's, which TestMethodsEffects holds both to.
type Beans struct {
	ctr                                                                      *container.Container
	customer, address, country, author, item, stock, order, line, shipOutbox *container.Home
}

var _ Data = (*Beans)(nil)

// NewBeans is Data over ctr, a container of entityTypes.
func NewBeans(ctr *container.Container) *Beans {
	return &Beans{ctr: ctr,
		customer: ctr.Home(customerType.Name), address: ctr.Home(addressType.Name), country: ctr.Home(countryType.Name),
		author: ctr.Home(authorType.Name), item: ctr.Home(itemType.Name), stock: ctr.Home(stockType.Name),
		order: ctr.Home(orderType.Name), line: ctr.Home(orderLineType.Name), shipOutbox: ctr.Home(shipOutboxType.Name)}
}

// EntityStats are the container's counters by entity type.
func (b *Beans) EntityStats() []workload.EntityStats { return workload.ContainerStats(b.ctr) }

// inTx runs fn as one container transaction on thread, read-write when
// write is set, committed when fn returns nil; a run the container or the
// database chose as a victim runs again, up to writeAttempts runs.
func (b *Beans) inTx(ctx context.Context, thread int, write bool, fn func(*container.Tx) error) error {
	return store.Retry(ctx, writeAttempts, func() error {
		begin := b.ctr.BeginReadOnly
		if write {
			begin = b.ctr.Begin
		}
		tx, err := begin(ctx, thread)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

func key(id int64) container.Key { return container.Key{A: id} }

// findCustomer is the customer, or ErrNoCustomer.
func (b *Beans) findCustomer(tx *container.Tx, id int64) (*container.Instance, error) {
	c, err := tx.Find(b.customer, key(id))
	if errors.Is(err, container.ErrNotFound) {
		err = fmt.Errorf("customer %d: %w", id, ErrNoCustomer)
	}
	return c, err
}

// findItem is the item, or ErrNoItem.
func (b *Beans) findItem(tx *container.Tx, id int64) (*container.Instance, error) {
	i, err := tx.Find(b.item, key(id))
	if errors.Is(err, container.ErrNotFound) {
		err = fmt.Errorf("item %d: %w", id, ErrNoItem)
	}
	return i, err
}

// addressID finds the address, or creates it.
func (b *Beans) addressID(tx *container.Tx, a Address) (int64, error) {
	found, err := tx.FindOne(b.address, "same", a.Zip, a.Street1, a.Street2, a.City, a.State, a.Country)
	if err == nil {
		return found.Key().A, nil
	}
	if !errors.Is(err, container.ErrNotFound) {
		return 0, err
	}
	i, err := tx.Create(b.address, container.Key{})
	if err != nil {
		return 0, err
	}
	i.SetString(addrStreet1, a.Street1)
	i.SetString(addrStreet2, a.Street2)
	i.SetString(addrCity, a.City)
	i.SetString(addrState, a.State)
	i.SetString(addrZip, a.Zip)
	i.SetInt(addrCountry, a.Country)
	return i.Key().A, nil
}

func setPayment(c *container.Instance, p Payment) {
	c.SetString(cPaymentMethod, p.Method)
	c.SetString(cCardNumber, p.CardNumber)
	c.SetString(cCardName, p.CardName)
	c.SetString(cCardExpiry, p.CardExpiry)
	c.SetString(cPOID, p.POID)
}

func (b *Beans) InsertCustomer(ctx context.Context, thread int, r NewCustomerRequest) (int64, error) {
	var id int64
	err := b.inTx(ctx, thread, true, func(tx *container.Tx) error {
		addr, err := b.addressID(tx, r.Address)
		if err != nil {
			return err
		}
		c, err := tx.Create(b.customer, container.Key{})
		if err != nil {
			return err
		}
		c.SetString(cUname, r.Uname)
		c.SetString(cPasswd, r.Passwd)
		c.SetString(cBusinessName, r.BusinessName)
		c.SetString(cBusinessInfo, r.BusinessInfo)
		c.SetString(cFirstName, r.FirstName)
		c.SetString(cLastName, r.LastName)
		c.SetString(cPhone, r.Phone)
		c.SetString(cEmail, r.Email)
		c.SetInt(cAddrID, addr)
		setPayment(c, r.Payment)
		c.SetInt(cDiscount, r.Discount)
		c.SetTime(cSince, time.Now().UTC().Truncate(time.Second))
		id = c.Key().A
		return nil
	})
	return id, err
}

func (b *Beans) SetPayment(ctx context.Context, thread int, customer int64, p Payment) error {
	return b.inTx(ctx, thread, true, func(tx *container.Tx) error {
		c, err := b.findCustomer(tx, customer)
		if err != nil {
			return err
		}
		setPayment(c, p)
		return nil
	})
}

func (b *Beans) CustomerPayment(ctx context.Context, thread int, customer int64) (p Payment, discount int64, err error) {
	err = b.inTx(ctx, thread, false, func(tx *container.Tx) error {
		c, err := b.findCustomer(tx, customer)
		if err != nil {
			return err
		}
		p = Payment{Method: c.String(cPaymentMethod), CardNumber: c.String(cCardNumber), CardName: c.String(cCardName),
			CardExpiry: c.String(cCardExpiry), POID: c.String(cPOID)}
		discount = c.Int(cDiscount)
		return nil
	})
	return p, discount, err
}

func (b *Beans) PlaceOrder(ctx context.Context, thread int, o OrderDraft) (Order, error) {
	var out Order
	err := b.inTx(ctx, thread, true, func(tx *container.Tx) error {
		country, err := tx.Find(b.country, key(o.ShipAddress.Country))
		if errors.Is(err, container.ErrNotFound) {
			return badRequest("ship address country %d: no such country", o.ShipAddress.Country)
		} else if err != nil {
			return err
		}
		addr, err := b.addressID(tx, o.ShipAddress)
		if err != nil {
			return err
		}
		out, err = priceOrder(o, country.Int(coZone), func(id int64) (stockedItem, error) {
			item, err := b.findItem(tx, id)
			if err != nil {
				return stockedItem{}, err
			}
			stock, err := tx.Find(b.stock, key(id))
			if errors.Is(err, container.ErrNotFound) {
				return stockedItem{}, fmt.Errorf("item %d has no stock row: %w", id, ErrNoItem)
			} else if err != nil {
				return stockedItem{}, err
			}
			return stockedItem{cost: item.Int(iCost), volume: item.Int(iVolume), stock: stock.Int(sQty)}, nil
		})
		if err != nil {
			return err
		}
		ord, err := tx.Create(b.order, container.Key{})
		if err != nil {
			return err
		}
		out.ID = ord.Key().A
		ord.SetInt(oCustomer, o.CustomerID)
		ord.SetTime(oDate, o.Date)
		ord.SetInt(oSubTotal, out.SubTotal)
		ord.SetInt(oDiscount, out.Discount)
		ord.SetInt(oTax, out.Tax)
		ord.SetInt(oShipCost, out.ShipCost)
		ord.SetInt(oTotal, out.Total)
		ord.SetString(oShipType, o.ShipType)
		ord.SetInt(oShipAddr, addr)
		ord.SetString(oStatus, out.Status)
		ord.SetString(oPayment, o.Payment)
		ord.SetString(oAuthCode, o.AuthCode)
		for _, l := range out.Lines {
			ol, err := tx.Create(b.line, container.Key{})
			if err != nil {
				return err
			}
			ol.SetInt(olOrder, out.ID)
			ol.SetInt(olItem, l.ItemID)
			ol.SetInt(olQty, l.Qty)
			ol.SetInt(olPrice, l.Price)
			ol.SetString(olStatus, l.Status)
		}
		// The order goes on the shipping queue iff this commits: the
		// outbox's relay publishes it afterwards.
		so, err := tx.Create(b.shipOutbox, key(out.ID))
		if err != nil {
			return err
		}
		so.SetTime(0, o.Date)
		return nil
	})
	return out, err
}

func (b *Beans) CustomerOrders(ctx context.Context, thread int, customer int64, count int) (name, passwd string, orders []Order, err error) {
	err = b.inTx(ctx, thread, false, func(tx *container.Tx) error {
		c, err := b.findCustomer(tx, customer)
		if err != nil {
			return err
		}
		name, passwd, orders = c.String(cBusinessName), c.String(cPasswd), nil
		found, err := tx.FindMany(b.order, "lastOfCustomer", nil, customer, count)
		if err != nil {
			return err
		}
		var lines []*container.Instance
		for _, o := range found {
			ord := Order{ID: o.Key().A, Date: o.Time(oDate), Status: o.String(oStatus), SubTotal: o.Int(oSubTotal), Discount: o.Int(oDiscount),
				Tax: o.Int(oTax), ShipCost: o.Int(oShipCost), Total: o.Int(oTotal), ShipType: o.String(oShipType)}
			if lines, err = tx.FindMany(b.line, "ofOrder", lines[:0], ord.ID); err != nil {
				return err
			}
			for _, ol := range lines {
				// The line's title is its item's: the item is found, and
				// under CMP its whole row comes with it, image included.
				item, err := b.findItem(tx, ol.Int(olItem))
				if err != nil {
					return err
				}
				ord.Lines = append(ord.Lines, Line{ItemID: ol.Int(olItem), Qty: ol.Int(olQty), Price: ol.Int(olPrice), Status: ol.String(olStatus),
					Title: item.String(iTitle)})
			}
			orders = append(orders, ord)
		}
		return nil
	})
	return name, passwd, orders, err
}

// product is the item as the catalogue lists it, its author found.
func (b *Beans) product(tx *container.Tx, i *container.Instance) (Product, error) {
	p := Product{ID: i.Key().A, Title: i.String(iTitle), PubDate: i.Time(iPubDate), Cost: i.Int(iCost)}
	a, err := tx.Find(b.author, key(i.Int(iAuthor)))
	if err != nil {
		return p, fmt.Errorf("item %d's author %d: %w", p.ID, i.Int(iAuthor), err)
	}
	p.Author = a.String(aFirst) + " " + a.String(aLast)
	return p, nil
}

func (b *Beans) NewProducts(ctx context.Context, thread int, subject string, since time.Time, limit int) (ps []Product, err error) {
	err = b.inTx(ctx, thread, false, func(tx *container.Tx) error {
		items, err := tx.FindMany(b.item, "newProducts", nil, subject, since, limit)
		if err != nil {
			return err
		}
		ps = make([]Product, 0, len(items))
		for _, i := range items {
			p, err := b.product(tx, i)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
		return nil
	})
	return ps, err
}

func (b *Beans) ProductDetails(ctx context.Context, thread int, ids []int64) (out []Detail, err error) {
	err = b.inTx(ctx, thread, false, func(tx *container.Tx) error {
		out = make([]Detail, 0, len(ids))
		for _, id := range ids {
			i, err := b.findItem(tx, id)
			if err != nil {
				return err
			}
			p, err := b.product(tx, i)
			if err != nil {
				return err
			}
			s, err := tx.Find(b.stock, key(id))
			if err != nil {
				return fmt.Errorf("item %d's stock: %w", id, err)
			}
			x := Detail{Product: p, Publisher: i.String(iPublisher), Subject: i.String(iSubject), Desc: i.String(iDesc), SRP: i.Int(iSRP),
				ISBN: i.String(iISBN), Pages: i.Int(iPages), Backing: i.String(iBacking), Dimensions: i.String(iDimensions), Stock: s.Int(sQty),
				Image: i.Bytes(iImage)}
			if path := i.Bytes(iImagePath); len(path) > 0 {
				if x.Image, err = os.ReadFile(string(path)); err != nil {
					return fmt.Errorf("item %d's image: %w", id, err)
				}
			}
			out = append(out, x)
		}
		return nil
	})
	return out, err
}

func (b *Beans) SetPubDates(ctx context.Context, thread int, ids []int64, at time.Time) error {
	return b.inTx(ctx, thread, true, func(tx *container.Tx) error {
		for _, id := range ids {
			i, err := b.findItem(tx, id)
			if err != nil {
				return err
			}
			i.SetTime(iPubDate, at)
		}
		return nil
	})
}
