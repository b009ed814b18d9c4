package tpcapp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// Direct is Data in SQL written by hand: the baseline the entity
// container's persistence is compared with. Statements are prepared once
// and run on the server thread's database session.
type Direct struct {
	db *store.DB
	st directStmts
	// zones are the countries' shipping zones, read at the start: the
	// country table never changes during a run.
	zones map[int64]int64
}

var _ Data = (*Direct)(nil)

type directStmts struct {
	findAddress, insertAddress, insertCustomer, setPayment, customerPayment, itemForOrder,
	insertOrder, insertLine, insertShipOutbox, customerAuth, customerOrders, orderLines,
	newProducts, productDetail, setPubDate *store.Stmt
}

const productCols = "i.i_id, i.i_title, a.a_fname, a.a_lname, i.i_pub_date, i.i_cost"

// stmtEntry is a statement and where its prepared form goes.
type stmtEntry struct {
	dst **store.Stmt
	s   store.Statement
}

// prepareAll prepares each entry's statement into its destination.
func prepareAll(ctx context.Context, db *store.DB, entries []stmtEntry) error {
	for _, e := range entries {
		s, err := db.Prepare(ctx, e.s)
		if err != nil {
			return err
		}
		*e.dst = s
	}
	return nil
}

func directStatements(d *directStmts) []stmtEntry {
	return []stmtEntry{
		{&d.findAddress, store.Statement{Name: "tpcapp-find-address", SQL: "SELECT addr_id FROM address WHERE addr_zip = ? AND addr_street1 = ? " +
			"AND addr_street2 = ? AND addr_city = ? AND addr_state = ? AND addr_co_id = ? ORDER BY addr_id LIMIT 1"}},
		{&d.insertAddress, store.InsertReturning("tpcapp-insert-address", "INSERT INTO address (addr_street1, addr_street2, addr_city, addr_state, addr_zip, addr_co_id) "+
			"VALUES (?, ?, ?, ?, ?, ?)", "addr_id")},
		{&d.insertCustomer, store.InsertReturning("tpcapp-insert-customer", "INSERT INTO customer (c_uname, c_passwd, c_business_name, c_business_info, "+
			"c_contact_fname, c_contact_lname, c_contact_phone, c_contact_email, c_addr_id, c_payment_method, c_cc_number, c_cc_name, "+
			"c_cc_expiry, c_po_id, c_discount, c_since) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "c_id")},
		{&d.setPayment, store.Statement{Name: "tpcapp-set-payment", SQL: "UPDATE customer SET c_payment_method = ?, c_cc_number = ?, " +
			"c_cc_name = ?, c_cc_expiry = ?, c_po_id = ? WHERE c_id = ?"}},
		{&d.customerPayment, store.Statement{Name: "tpcapp-customer-payment", SQL: "SELECT c_payment_method, c_cc_number, c_cc_name, " +
			"c_cc_expiry, c_po_id, c_discount FROM customer WHERE c_id = ?"}},
		{&d.itemForOrder, store.Statement{Name: "tpcapp-item-for-order", SQL: "SELECT i.i_cost, i.i_volume, s.s_qty FROM item i " +
			"JOIN stock s ON s.s_i_id = i.i_id WHERE i.i_id = ?"}},
		{&d.insertOrder, store.InsertReturning("tpcapp-insert-order", "INSERT INTO orders (o_c_id, o_date, o_sub_total, o_discount, o_tax, "+
			"o_ship_cost, o_total, o_ship_type, o_ship_addr_id, o_status, o_payment_method, o_auth_code) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "o_id")},
		{&d.insertLine, store.Statement{Name: "tpcapp-insert-line", SQL: "INSERT INTO order_line (ol_o_id, ol_i_id, ol_qty, ol_price, ol_status) " +
			"VALUES (?, ?, ?, ?, ?)"}},
		{&d.insertShipOutbox, store.Statement{Name: "tpcapp-insert-ship-outbox", SQL: "INSERT INTO ship_outbox (so_o_id, so_created) VALUES (?, ?)"}},
		{&d.customerAuth, store.Statement{Name: "tpcapp-customer-auth", SQL: "SELECT c_business_name, c_passwd FROM customer WHERE c_id = ?"}},
		{&d.customerOrders, store.Statement{Name: "tpcapp-customer-orders", SQL: "SELECT o_id, o_date, o_status, o_sub_total, o_discount, " +
			"o_tax, o_ship_cost, o_total, o_ship_type FROM orders WHERE o_c_id = ? ORDER BY o_id DESC LIMIT ?"}},
		{&d.orderLines, store.Statement{Name: "tpcapp-order-lines", SQL: "SELECT ol.ol_i_id, ol.ol_qty, ol.ol_price, ol.ol_status, i.i_title " +
			"FROM order_line ol JOIN item i ON i.i_id = ol.ol_i_id WHERE ol.ol_o_id = ? ORDER BY ol.ol_id"}},
		{&d.newProducts, store.Statement{Name: "tpcapp-new-products", SQL: "SELECT " + productCols + " FROM item i JOIN author a ON a.a_id = i.i_a_id " +
			"WHERE i.i_subject = ? AND i.i_pub_date >= ? ORDER BY i.i_pub_date DESC, i.i_id LIMIT ?"}},
		{&d.productDetail, store.Statement{Name: "tpcapp-product-detail", SQL: "SELECT " + productCols + ", i.i_publisher, i.i_subject, i.i_desc, " +
			"i.i_srp, i.i_isbn, i.i_page, i.i_backing, i.i_dimensions, s.s_qty, i.i_image, i.i_image_path FROM item i " +
			"JOIN author a ON a.a_id = i.i_a_id JOIN stock s ON s.s_i_id = i.i_id WHERE i.i_id = ?"}},
		{&d.setPubDate, store.Statement{Name: "tpcapp-set-pub-date", SQL: "UPDATE item SET i_pub_date = ? WHERE i_id = ?"}},
	}
}

// NewDirect prepares the statements and reads the countries' zones.
func NewDirect(ctx context.Context, db *store.DB) (*Direct, error) {
	d := &Direct{db: db}
	if err := prepareAll(ctx, db, directStatements(&d.st)); err != nil {
		return nil, err
	}
	var err error
	d.zones, err = readZones(ctx, db)
	return d, err
}

func readZones(ctx context.Context, db *store.DB) (map[int64]int64, error) {
	s, err := db.Prepare(ctx, store.Statement{Name: "tpcapp-zones", SQL: "SELECT co_id, co_zone FROM country"})
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("read country: %w", err)
	}
	defer rows.Close()
	zones := make(map[int64]int64)
	for rows.Next() {
		var id, zone int64
		if err := rows.Scan(&id, &zone); err != nil {
			return nil, err
		}
		zones[id] = zone
	}
	return zones, rows.Err()
}

func (d *Direct) session(thread int) *store.Session { return d.db.Thread(thread) }

// writeAttempts bounds the runs of a transaction that keeps losing to
// concurrent ones: a web-service request cannot ask its caller to retry.
const writeAttempts = 5

// inTx runs fn as one transaction on thread's session, again when the
// database chose it as a victim (fn must start from scratch each run).
func (d *Direct) inTx(ctx context.Context, thread int, fn func(*store.Tx) error) error {
	return store.Retry(ctx, writeAttempts, func() error { return d.session(thread).InTx(ctx, fn) })
}

// address finds the address, or stores it.
func (d *Direct) address(ctx context.Context, tx *store.Tx, a Address) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, d.st.findAddress, a.Zip, a.Street1, a.Street2, a.City, a.State, a.Country).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	return store.InsertID(ctx, tx, d.st.insertAddress, a.Street1, a.Street2, a.City, a.State, a.Zip, a.Country)
}

func (d *Direct) InsertCustomer(ctx context.Context, thread int, r NewCustomerRequest) (int64, error) {
	var id int64
	err := d.inTx(ctx, thread, func(tx *store.Tx) error {
		addr, err := d.address(ctx, tx, r.Address)
		if err != nil {
			return err
		}
		p := r.Payment
		id, err = store.InsertID(ctx, tx, d.st.insertCustomer, r.Uname, r.Passwd, r.BusinessName, r.BusinessInfo, r.FirstName, r.LastName,
			r.Phone, r.Email, addr, p.Method, p.CardNumber, p.CardName, p.CardExpiry, p.POID, r.Discount, time.Now().UTC().Truncate(time.Second))
		return err
	})
	return id, err
}

func (d *Direct) SetPayment(ctx context.Context, thread int, customer int64, p Payment) error {
	res, err := d.session(thread).Exec(ctx, d.st.setPayment, p.Method, p.CardNumber, p.CardName, p.CardExpiry, p.POID, customer)
	if err == nil && res.RowsAffected == 0 {
		err = fmt.Errorf("customer %d: %w", customer, ErrNoCustomer)
	}
	return err
}

func (d *Direct) CustomerPayment(ctx context.Context, thread int, customer int64) (Payment, int64, error) {
	var p Payment
	var discount int64
	err := d.session(thread).QueryRow(ctx, d.st.customerPayment, customer).Scan(&p.Method, &p.CardNumber, &p.CardName, &p.CardExpiry, &p.POID, &discount)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("customer %d: %w", customer, ErrNoCustomer)
	}
	return p, discount, err
}

// ErrNoItem: an order names an item that does not exist.
var ErrNoItem = errors.New("no such item")

func (d *Direct) PlaceOrder(ctx context.Context, thread int, o OrderDraft) (Order, error) {
	zone, ok := d.zones[o.ShipAddress.Country]
	if !ok {
		return Order{}, badRequest("ship address country %d: no such country", o.ShipAddress.Country)
	}
	var out Order
	err := d.inTx(ctx, thread, func(tx *store.Tx) error {
		addr, err := d.address(ctx, tx, o.ShipAddress)
		if err != nil {
			return err
		}
		out, err = priceOrder(o, zone, func(id int64) (it stockedItem, err error) {
			err = tx.QueryRow(ctx, d.st.itemForOrder, id).Scan(&it.cost, &it.volume, &it.stock)
			if errors.Is(err, store.ErrNotFound) {
				err = fmt.Errorf("item %d: %w", id, ErrNoItem)
			}
			return it, err
		})
		if err != nil {
			return err
		}
		out.ID, err = store.InsertID(ctx, tx, d.st.insertOrder, o.CustomerID, o.Date, out.SubTotal, out.Discount, out.Tax, out.ShipCost,
			out.Total, o.ShipType, addr, out.Status, o.Payment, o.AuthCode)
		if err != nil {
			return err
		}
		for _, l := range out.Lines {
			tx.Queue(d.st.insertLine, out.ID, l.ItemID, l.Qty, l.Price, l.Status)
		}
		// The order goes on the shipping queue iff this commits: the
		// outbox's relay publishes it afterwards.
		tx.Queue(d.st.insertShipOutbox, out.ID, o.Date)
		return nil
	})
	return out, err
}

func (d *Direct) CustomerOrders(ctx context.Context, thread int, customer int64, count int) (string, string, []Order, error) {
	s := d.session(thread)
	var name, passwd string
	err := s.QueryRow(ctx, d.st.customerAuth, customer).Scan(&name, &passwd)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", nil, fmt.Errorf("customer %d: %w", customer, ErrNoCustomer)
	}
	if err != nil {
		return "", "", nil, err
	}
	orders, err := store.Collect(ctx, s, d.st.customerOrders, func(o *Order) []any {
		return []any{&o.ID, &o.Date, &o.Status, &o.SubTotal, &o.Discount, &o.Tax, &o.ShipCost, &o.Total, &o.ShipType}
	}, customer, count)
	if err != nil {
		return "", "", nil, err
	}
	for i := range orders {
		orders[i].Lines, err = store.Collect(ctx, s, d.st.orderLines, func(l *Line) []any {
			return []any{&l.ItemID, &l.Qty, &l.Price, &l.Status, &l.Title}
		}, orders[i].ID)
		if err != nil {
			return "", "", nil, err
		}
	}
	return name, passwd, orders, nil
}

func productDest(p *Product) []any {
	return []any{&p.ID, &p.Title, &p.authorFirst, &p.Author, &p.PubDate, &p.Cost}
}

func (d *Direct) NewProducts(ctx context.Context, thread int, subject string, since time.Time, limit int) ([]Product, error) {
	ps, err := store.Collect(ctx, d.session(thread), d.st.newProducts, productDest, subject, since, limit)
	for i := range ps {
		ps[i].joinAuthor()
	}
	return ps, err
}

func (d *Direct) ProductDetails(ctx context.Context, thread int, ids []int64) ([]Detail, error) {
	s := d.session(thread)
	out := make([]Detail, 0, len(ids))
	for _, id := range ids {
		var x Detail
		var path *string
		var image []byte
		dest := append(productDest(&x.Product), &x.Publisher, &x.Subject, &x.Desc, &x.SRP, &x.ISBN, &x.Pages, &x.Backing,
			&x.Dimensions, &x.Stock, &image, &path)
		err := s.QueryRow(ctx, d.st.productDetail, id).Scan(dest...)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("item %d: %w", id, ErrNoItem)
		}
		if err != nil {
			return nil, err
		}
		x.joinAuthor()
		x.Image = image
		if path != nil && *path != "" {
			// --item-images file: the row names the image's file, read only
			// by the method that needs the image.
			if x.Image, err = os.ReadFile(*path); err != nil {
				return nil, fmt.Errorf("item %d's image: %w", id, err)
			}
		}
		out = append(out, x)
	}
	return out, nil
}

func (d *Direct) SetPubDates(ctx context.Context, thread int, ids []int64, at time.Time) error {
	return d.inTx(ctx, thread, func(tx *store.Tx) error {
		for _, id := range ids {
			res, err := tx.Exec(ctx, d.st.setPubDate, at, id)
			if err != nil {
				return err
			}
			if res.RowsAffected == 0 {
				return fmt.Errorf("item %d: %w", id, ErrNoItem)
			}
		}
		return nil
	})
}
