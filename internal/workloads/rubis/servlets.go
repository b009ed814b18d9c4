package rubis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// Servlets is the RUBiS business tier in direct SQL: the PHP pages' queries,
// every value bound, statements prepared once and run on the server
// thread's session. It serves two styles: servlets (the SQL in the web
// tier's process, --persistence direct) and session (the same SQL in a
// stateless session bean on a business tier, served by ServeAuction).
//
// Reads run outside explicit transactions, each statement on its own (as
// the PHP pages' begin/commit around reads on MyISAM amounted to); on
// SQLite an explicit transaction would also take the single writer's lock.
//
// Writes are atomic under concurrency on every backend at any isolation
// level, without table locks (the PHP's LOCK TABLES): each takes its row
// with a single guarded UPDATE, so a concurrent writer waits for the row
// and its increment is never lost, and the inserts go in the same
// transaction. New rows take their keys from the tables' own generators
// (SERIAL, AUTO_INCREMENT, SQLite's rowid), which are atomic without a
// transaction; the ids table would make every insert of a kind queue on
// one row. A transaction chosen as the victim of a deadlock or a
// serialization failure is run again up to writeAttempts times, then its
// classified error is returned.
type Servlets struct {
	db  *store.DB
	st  directStmts
	now func() time.Time
}

var _ Auction = (*Servlets)(nil)

// writeAttempts bounds the runs of a write transaction that keeps losing
// to concurrent ones: a page cannot ask its browser to retry.
const writeAttempts = 5

// recentDays is AboutMe's window for items won, bought and sold.
const recentDays = 30

// itemColumns of items and old_items, in Item's order (scanItem).
func itemCols(alias string) string {
	cols := []string{"id", "name", "description", "initial_price", "quantity", "reserve_price", "buy_now",
		"nb_of_bids", "max_bid", "start_date", "end_date", "seller", "category"}
	for i, c := range cols {
		cols[i] = alias + c
	}
	return strings.Join(cols, ", ")
}

const userCols = "id, firstname, lastname, nickname, email, rating, balance, creation_date, region"

type directStmts struct {
	authenticate, categories, regions, regionByName, regionByID, searchCategory, searchRegion,
	item, oldItem, bidStats, topBids, user, commentsAbout, bidHistory, buyNowTake, itemQuantity,
	insertBuyNow, bidRaise, insertBid, rateUser, insertComment, insertUser, insertItem,
	aboutBidding, aboutWon, aboutWonOld, aboutBought, aboutSelling, aboutSold, aboutSoldOld *store.Stmt
}

func directStatements() []struct {
	dst func(*directStmts) **store.Stmt
	s   store.Statement
} {
	ic, iic := itemCols(""), itemCols("i.")
	type entry = struct {
		dst func(*directStmts) **store.Stmt
		s   store.Statement
	}
	return []entry{
		{func(d *directStmts) **store.Stmt { return &d.authenticate },
			store.Statement{Name: "rubis-authenticate", SQL: "SELECT id FROM users WHERE nickname = ? AND password = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.categories },
			store.Statement{Name: "rubis-categories", SQL: "SELECT id, name FROM categories ORDER BY id"}},
		{func(d *directStmts) **store.Stmt { return &d.regions },
			store.Statement{Name: "rubis-regions", SQL: "SELECT id, name FROM regions ORDER BY id"}},
		{func(d *directStmts) **store.Stmt { return &d.regionByName },
			store.Statement{Name: "rubis-region-by-name", SQL: "SELECT id, name FROM regions WHERE name = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.regionByID },
			store.Statement{Name: "rubis-region-by-id", SQL: "SELECT id, name FROM regions WHERE id = ?"}},
		// The PHP pages have no ORDER BY; paging needs one to be stable.
		{func(d *directStmts) **store.Stmt { return &d.searchCategory },
			store.Statement{Name: "rubis-search-category", SQL: "SELECT id, name, initial_price, max_bid, nb_of_bids, end_date FROM items " +
				"WHERE category = ? AND end_date >= ? ORDER BY id LIMIT ? OFFSET ?"}},
		{func(d *directStmts) **store.Stmt { return &d.searchRegion },
			store.Statement{Name: "rubis-search-region", SQL: "SELECT i.id, i.name, i.initial_price, i.max_bid, i.nb_of_bids, i.end_date " +
				"FROM items i JOIN users u ON u.id = i.seller WHERE i.category = ? AND u.region = ? AND i.end_date >= ? ORDER BY i.id LIMIT ? OFFSET ?"}},
		{func(d *directStmts) **store.Stmt { return &d.item },
			store.Statement{Name: "rubis-item", SQL: "SELECT " + iic + ", COALESCE(u.nickname, '') FROM items i LEFT JOIN users u ON u.id = i.seller WHERE i.id = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.oldItem },
			store.Statement{Name: "rubis-old-item", SQL: "SELECT " + iic + ", COALESCE(u.nickname, '') FROM old_items i LEFT JOIN users u ON u.id = i.seller WHERE i.id = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.bidStats },
			store.Statement{Name: "rubis-bid-stats", SQL: "SELECT COALESCE(MAX(bid), 0), COUNT(*) FROM bids WHERE item_id = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.topBids },
			store.Statement{Name: "rubis-top-bids", SQL: "SELECT bid, qty FROM bids WHERE item_id = ? ORDER BY bid DESC LIMIT ?"}},
		{func(d *directStmts) **store.Stmt { return &d.user },
			store.Statement{Name: "rubis-user", SQL: "SELECT " + userCols + " FROM users WHERE id = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.commentsAbout },
			store.Statement{Name: "rubis-comments-about", SQL: "SELECT c.id, c.from_user_id, COALESCE(u.nickname, ''), c.item_id, c.rating, c.date, c.comment " +
				"FROM comments c LEFT JOIN users u ON u.id = c.from_user_id WHERE c.to_user_id = ? ORDER BY c.id"}},
		{func(d *directStmts) **store.Stmt { return &d.bidHistory },
			store.Statement{Name: "rubis-bid-history", SQL: "SELECT b.user_id, COALESCE(u.nickname, ''), b.qty, b.bid, b.max_bid, b.date " +
				"FROM bids b LEFT JOIN users u ON u.id = b.user_id WHERE b.item_id = ? ORDER BY b.date DESC, b.id DESC"}},
		// Take qty units only if that many remain, and end the auction when
		// they are the last. end_date comes first: MySQL evaluates SET from
		// left to right on the new values, the others on the old ones, and
		// in this order both read the old quantity.
		{func(d *directStmts) **store.Stmt { return &d.buyNowTake },
			store.Statement{Name: "rubis-buy-now-take", SQL: "UPDATE items SET end_date = CASE WHEN quantity = ? THEN ? ELSE end_date END, " +
				"quantity = quantity - ? WHERE id = ? AND quantity >= ?"}},
		{func(d *directStmts) **store.Stmt { return &d.itemQuantity },
			store.Statement{Name: "rubis-item-quantity", SQL: "SELECT quantity FROM items WHERE id = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.insertBuyNow },
			store.Statement{Name: "rubis-insert-buy-now", SQL: "INSERT INTO buy_now (buyer_id, item_id, qty, date) VALUES (?, ?, ?, ?)"}},
		// One statement counts the bid and raises the max bid, so two
		// concurrent bids cannot both read the old values.
		{func(d *directStmts) **store.Stmt { return &d.bidRaise },
			store.Statement{Name: "rubis-bid-raise", SQL: "UPDATE items SET nb_of_bids = nb_of_bids + 1, " +
				"max_bid = CASE WHEN max_bid < ? THEN ? ELSE max_bid END WHERE id = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.insertBid },
			store.Statement{Name: "rubis-insert-bid", SQL: "INSERT INTO bids (user_id, item_id, qty, bid, max_bid, date) VALUES (?, ?, ?, ?, ?, ?)"}},
		{func(d *directStmts) **store.Stmt { return &d.rateUser },
			store.Statement{Name: "rubis-rate-user", SQL: "UPDATE users SET rating = rating + ? WHERE id = ?"}},
		{func(d *directStmts) **store.Stmt { return &d.insertComment },
			store.Statement{Name: "rubis-insert-comment", SQL: "INSERT INTO comments (from_user_id, to_user_id, item_id, rating, date, comment) VALUES (?, ?, ?, ?, ?, ?)"}},
		{func(d *directStmts) **store.Stmt { return &d.insertUser },
			store.InsertReturning("rubis-insert-user", "INSERT INTO users (firstname, lastname, nickname, password, email, rating, balance, creation_date, region) "+
				"VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?)", "id")},
		{func(d *directStmts) **store.Stmt { return &d.insertItem },
			store.InsertReturning("rubis-insert-item", "INSERT INTO items (name, description, initial_price, quantity, reserve_price, buy_now, nb_of_bids, max_bid, "+
				"start_date, end_date, seller, category) VALUES (?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?)", "id")},
		// The PHP groups bids by item and shows an arbitrary max_bid of the
		// user's; the highest is what the user means.
		{func(d *directStmts) **store.Stmt { return &d.aboutBidding },
			store.Statement{Name: "rubis-about-bidding", SQL: "SELECT " + iic + ", m.max_bid, COALESCE(u.nickname, '') " +
				"FROM (SELECT item_id, MAX(max_bid) AS max_bid FROM bids WHERE user_id = ? GROUP BY item_id) m " +
				"JOIN items i ON i.id = m.item_id LEFT JOIN users u ON u.id = i.seller WHERE i.end_date >= ? ORDER BY i.id"}},
		{func(d *directStmts) **store.Stmt { return &d.aboutWon }, aboutWon("rubis-about-won", "items")},
		{func(d *directStmts) **store.Stmt { return &d.aboutWonOld }, aboutWon("rubis-about-won-old", "old_items")},
		{func(d *directStmts) **store.Stmt { return &d.aboutBought },
			store.Statement{Name: "rubis-about-bought", SQL: "SELECT " + iic + ", bn.qty, bn.date, COALESCE(u.nickname, '') " +
				"FROM buy_now bn JOIN items i ON i.id = bn.item_id LEFT JOIN users u ON u.id = i.seller " +
				"WHERE bn.buyer_id = ? AND bn.date >= ? ORDER BY bn.id"}},
		{func(d *directStmts) **store.Stmt { return &d.aboutSelling },
			store.Statement{Name: "rubis-about-selling", SQL: "SELECT " + ic + " FROM items WHERE seller = ? AND end_date >= ? ORDER BY id"}},
		{func(d *directStmts) **store.Stmt { return &d.aboutSold },
			store.Statement{Name: "rubis-about-sold", SQL: "SELECT " + ic + " FROM items WHERE seller = ? AND end_date < ? AND end_date >= ? ORDER BY id"}},
		{func(d *directStmts) **store.Stmt { return &d.aboutSoldOld },
			store.Statement{Name: "rubis-about-sold-old", SQL: "SELECT " + ic + " FROM old_items WHERE seller = ? AND end_date < ? AND end_date >= ? ORDER BY id"}},
	}
}

// aboutWon lists the items of table the user bid on that ended in the
// window (the PHP's "won": it does not ask whose bid was highest). table
// is one of two constants, never input.
func aboutWon(name, table string) store.Statement {
	return store.Statement{Name: name, SQL: "SELECT " + itemCols("i.") + ", COALESCE(u.nickname, '') " +
		"FROM (SELECT DISTINCT item_id FROM bids WHERE user_id = ?) b JOIN " + table + " i ON i.id = b.item_id " +
		"LEFT JOIN users u ON u.id = i.seller WHERE i.end_date < ? AND i.end_date >= ? ORDER BY i.id"}
}

// NewServlets prepares the statements on db, loaded with the RUBiS schema.
func NewServlets(ctx context.Context, db *store.DB) (*Servlets, error) {
	d := &Servlets{db: db, now: time.Now}
	for _, e := range directStatements() {
		s, err := db.Prepare(ctx, e.s)
		if err != nil {
			return nil, err
		}
		*e.dst(&d.st) = s
	}
	return d, nil
}

// clock is now as the database stores times: UTC, whole seconds (as the
// population), so that comparisons with stored text (SQLite) and
// timestamps without zone agree on every backend.
func (d *Servlets) clock() time.Time { return timeBase(d.now()) }

func (d *Servlets) session(thread int) *store.Session { return d.db.Thread(thread) }

// reader is the session of a browsing page's queries, which only read:
// the store may route them to a read replica (store.DB.ReadOnly).
func (d *Servlets) reader(ctx context.Context, thread int) *store.Session {
	return d.db.ReadOnly(ctx, thread)
}

// write runs fn in a transaction of thread's session, again after a short
// pause when the database chose it as a victim.
func (d *Servlets) write(ctx context.Context, thread int, fn func(tx *store.Tx) error) error {
	s := d.session(thread)
	return store.Retry(ctx, writeAttempts, func() error { return s.InTx(ctx, fn) })
}

// querier is a session or a transaction.
type querier interface {
	QueryRow(ctx context.Context, s *store.Stmt, args ...any) store.Row
	Query(ctx context.Context, s *store.Stmt, args ...any) (*store.Rows, error)
}

// authenticate is the user id of nickname and password, or the page error
// of title when there is none.
func (d *Servlets) authenticate(ctx context.Context, q querier, title, nickname, password string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, d.st.authenticate, nickname, password).Scan(&id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, errNoAccount(title)
	}
	if err != nil {
		return 0, fmt.Errorf("authenticate %q: %w", nickname, err)
	}
	return id, nil
}

func itemDest(it *Item) []any {
	return []any{&it.ID, &it.Name, &it.Description, &it.InitialPrice, &it.Quantity, &it.ReservePrice, &it.BuyNow,
		&it.NbOfBids, &it.MaxBid, &it.StartDate, &it.EndDate, &it.Seller, &it.Category}
}

// queryAll runs s and scans each row with scan into a fresh T.

func categoryDest(c *Category) []any { return []any{&c.ID, &c.Name} }
func regionDest(r *Region) []any     { return []any{&r.ID, &r.Name} }
func summaryDest(s *ItemSummary) []any {
	return []any{&s.ID, &s.Name, &s.InitialPrice, &s.MaxBid, &s.NbOfBids, &s.EndDate}
}
func userDest(u *User) []any {
	return []any{&u.ID, &u.Firstname, &u.Lastname, &u.Nickname, &u.Email, &u.Rating, &u.Balance, &u.CreationDate, &u.Region}
}
func commentDest(c *Comment) []any {
	return []any{&c.ID, &c.From, &c.FromNickname, &c.ItemID, &c.Rating, &c.Date, &c.Text}
}

func (d *Servlets) RegisterUser(ctx context.Context, thread int, r RegisterUserRequest) (RegisterUserResult, error) {
	const title = "Register user"
	s := d.session(thread)
	var reg Region
	err := s.QueryRow(ctx, d.st.regionByName, r.Region).Scan(regionDest(&reg)...)
	if errors.Is(err, store.ErrNotFound) {
		return RegisterUserResult{}, &PageError{Title: title, Message: "Region " + r.Region + " does not exist in the database!"}
	}
	if err != nil {
		return RegisterUserResult{}, fmt.Errorf("region %q: %w", r.Region, err)
	}
	now := d.clock()
	u := User{Firstname: r.Firstname, Lastname: r.Lastname, Nickname: r.Nickname, Email: r.Email, CreationDate: now, Region: reg.ID}
	// The unique index decides between concurrent registrations of one
	// nickname; a look-up first would only narrow the race.
	err = d.write(ctx, thread, func(tx *store.Tx) error {
		id, err := store.InsertID(ctx, tx, d.st.insertUser,
			r.Firstname, r.Lastname, r.Nickname, r.Password, r.Email, now, reg.ID)
		u.ID = id
		return err
	})
	if errors.Is(err, store.ErrUniqueViolation) {
		return RegisterUserResult{}, &PageError{Title: title,
			Message: "The nickname you have choosen is already taken by someone else. Please choose a new nickname."}
	}
	if err != nil {
		return RegisterUserResult{}, fmt.Errorf("register user %q: %w", r.Nickname, err)
	}
	return RegisterUserResult{User: u, Region: reg}, nil
}

func (d *Servlets) BrowseCategories(ctx context.Context, thread int, _ BrowseCategoriesRequest) (BrowseCategoriesResult, error) {
	cs, err := store.Collect(ctx, d.reader(ctx, thread), d.st.categories, categoryDest)
	return BrowseCategoriesResult{Categories: cs}, err
}

func (d *Servlets) BrowseRegions(ctx context.Context, thread int, _ BrowseRegionsRequest) (BrowseRegionsResult, error) {
	rs, err := store.Collect(ctx, d.reader(ctx, thread), d.st.regions, regionDest)
	return BrowseRegionsResult{Regions: rs}, err
}

func (d *Servlets) BrowseCategoriesInRegion(ctx context.Context, thread int, r BrowseCategoriesInRegionRequest) (BrowseCategoriesInRegionResult, error) {
	s := d.reader(ctx, thread)
	var reg Region
	var err error
	if id, perr := strconv.ParseInt(r.Region, 10, 32); perr == nil {
		err = s.QueryRow(ctx, d.st.regionByID, id).Scan(regionDest(&reg)...)
	} else {
		err = s.QueryRow(ctx, d.st.regionByName, r.Region).Scan(regionDest(&reg)...)
	}
	if errors.Is(err, store.ErrNotFound) {
		return BrowseCategoriesInRegionResult{}, &PageError{Title: "Browse categories", Message: "Sorry, but region " + r.Region + " does not exist."}
	}
	if err != nil {
		return BrowseCategoriesInRegionResult{}, fmt.Errorf("region %q: %w", r.Region, err)
	}
	cs, err := store.Collect(ctx, s, d.st.categories, categoryDest)
	return BrowseCategoriesInRegionResult{Region: reg, Categories: cs}, err
}

func (d *Servlets) SearchItemsByCategory(ctx context.Context, thread int, r SearchItemsByCategoryRequest) (SearchItemsResult, error) {
	n := pageSize(r.NbOfItems)
	items, err := store.Collect(ctx, d.reader(ctx, thread), d.st.searchCategory, summaryDest, r.Category, d.clock(), n, r.Page*n)
	return SearchItemsResult{Items: items}, err
}

func (d *Servlets) SearchItemsByRegion(ctx context.Context, thread int, r SearchItemsByRegionRequest) (SearchItemsResult, error) {
	n := pageSize(r.NbOfItems)
	items, err := store.Collect(ctx, d.reader(ctx, thread), d.st.searchRegion, summaryDest, r.Category, r.Region, d.clock(), n, r.Page*n)
	return SearchItemsResult{Items: items}, err
}

func pageSize(n int) int {
	if n <= 0 {
		return DefaultItemsPerPage
	}
	return min(n, MaxItemsPerPage)
}

// itemRow reads item id and its seller's nickname from items, or when
// old is allowed and items has none, from old_items.
func (d *Servlets) itemRow(ctx context.Context, q querier, title string, id int64, old bool) (Item, string, error) {
	var it Item
	var seller string
	dest := append(itemDest(&it), &seller)
	err := q.QueryRow(ctx, d.st.item, id).Scan(dest...)
	if errors.Is(err, store.ErrNotFound) && old {
		it.Old = true
		err = q.QueryRow(ctx, d.st.oldItem, id).Scan(dest...)
	}
	if errors.Is(err, store.ErrNotFound) {
		return it, "", errNoItem(title)
	}
	if err != nil {
		return it, "", fmt.Errorf("item %d: %w", id, err)
	}
	return it, seller, nil
}

// itemPrice reads item id (see itemRow) and the price its bids make.
func (d *Servlets) itemPrice(ctx context.Context, q querier, title string, id int64, old bool) (ItemPrice, error) {
	var p ItemPrice
	var err error
	if p.Item, p.SellerNickname, err = d.itemRow(ctx, q, title, id, old); err != nil {
		return p, err
	}
	var maxBid float64
	if err := q.QueryRow(ctx, d.st.bidStats, id).Scan(&maxBid, &p.Bids); err != nil {
		return p, fmt.Errorf("bids of item %d: %w", id, err)
	}
	if maxBid == 0 {
		p.CurrentPrice = p.InitialPrice
		p.BuyNowOffered = p.BuyNow > 0
		p.Bids = 0
		return p, nil
	}
	p.CurrentPrice = maxBid
	if p.Quantity > 1 {
		top, err := store.Collect(ctx, q, d.st.topBids, func(b *Bid) []any { return []any{&b.Bid, &b.Qty} }, id, p.Quantity)
		if err != nil {
			return p, err
		}
		p.CurrentPrice = multiUnitPrice(top, p.Quantity, maxBid)
	}
	return p, nil
}

func (d *Servlets) ViewItem(ctx context.Context, thread int, r ViewItemRequest) (ViewItemResult, error) {
	p, err := d.itemPrice(ctx, d.reader(ctx, thread), "Viewing item", r.ItemID, true)
	return ViewItemResult{ItemPrice: p}, err
}

func (d *Servlets) ViewUserInfo(ctx context.Context, thread int, r ViewUserInfoRequest) (ViewUserInfoResult, error) {
	s := d.reader(ctx, thread)
	var res ViewUserInfoResult
	err := s.QueryRow(ctx, d.st.user, r.UserID).Scan(userDest(&res.User)...)
	if errors.Is(err, store.ErrNotFound) {
		return res, errNoUser("Viewing user information")
	}
	if err != nil {
		return res, fmt.Errorf("user %d: %w", r.UserID, err)
	}
	res.Comments, err = store.Collect(ctx, s, d.st.commentsAbout, commentDest, r.UserID)
	return res, err
}

func (d *Servlets) ViewBidHistory(ctx context.Context, thread int, r ViewBidHistoryRequest) (ViewBidHistoryResult, error) {
	s := d.reader(ctx, thread)
	it, _, err := d.itemRow(ctx, s, "Bid history", r.ItemID, true)
	if err != nil {
		return ViewBidHistoryResult{}, err
	}
	res := ViewBidHistoryResult{ItemID: it.ID, ItemName: it.Name}
	res.Bids, err = store.Collect(ctx, s, d.st.bidHistory, func(b *Bid) []any {
		return []any{&b.UserID, &b.Nickname, &b.Qty, &b.Bid, &b.MaxBid, &b.Date}
	}, r.ItemID)
	return res, err
}

func (d *Servlets) BuyNow(ctx context.Context, thread int, r BuyNowRequest) (BuyNowResult, error) {
	const title = "BuyNow"
	s := d.session(thread)
	uid, err := d.authenticate(ctx, s, "Authentication", r.Nickname, r.Password)
	if err != nil {
		return BuyNowResult{}, err
	}
	var res BuyNowResult
	res.UserID = uid
	err = s.QueryRow(ctx, d.st.item, r.ItemID).Scan(append(itemDest(&res.Item), &res.SellerNickname)...)
	if errors.Is(err, store.ErrNotFound) {
		return res, errNoItem(title)
	}
	if err != nil {
		return res, fmt.Errorf("item %d: %w", r.ItemID, err)
	}
	return res, nil
}

func (d *Servlets) StoreBuyNow(ctx context.Context, thread int, r StoreBuyNowRequest) (StoreBuyNowResult, error) {
	const title = "StoreBuyNow"
	if err := r.check(); err != nil {
		return StoreBuyNowResult{}, err
	}
	res := StoreBuyNowResult{Qty: r.Qty}
	err := d.write(ctx, thread, func(tx *store.Tx) error {
		now := d.clock()
		got, err := tx.Exec(ctx, d.st.buyNowTake, r.Qty, now, r.Qty, r.ItemID, r.Qty)
		if err != nil {
			return fmt.Errorf("take %d of item %d: %w", r.Qty, r.ItemID, err)
		}
		if got.RowsAffected == 0 {
			// Tell an unknown item from one with too few units left.
			var left int64
			err := tx.QueryRow(ctx, d.st.itemQuantity, r.ItemID).Scan(&left)
			if errors.Is(err, store.ErrNotFound) {
				return errNoItem(title)
			}
			if err != nil {
				return fmt.Errorf("quantity of item %d: %w", r.ItemID, err)
			}
			return &PageError{Title: title, Message: fmt.Sprintf("Sorry, you cannot buy %d of this item: only %d left.", r.Qty, left)}
		}
		tx.Queue(d.st.insertBuyNow, r.UserID, r.ItemID, r.Qty, now)
		return nil
	})
	if err != nil {
		return StoreBuyNowResult{}, err
	}
	return res, nil
}

func (d *Servlets) PutBid(ctx context.Context, thread int, r PutBidRequest) (PutBidResult, error) {
	s := d.session(thread)
	uid, err := d.authenticate(ctx, s, "Authentication", r.Nickname, r.Password)
	if err != nil {
		return PutBidResult{}, err
	}
	p, err := d.itemPrice(ctx, s, "PutBid", r.ItemID, false)
	if err != nil {
		return PutBidResult{}, err
	}
	return PutBidResult{UserID: uid, ItemPrice: p, MinBid: p.CurrentPrice + 1}, nil
}

func (d *Servlets) StoreBid(ctx context.Context, thread int, r StoreBidRequest) (StoreBidResult, error) {
	const title = "StoreBid"
	if err := checkBid(r); err != nil {
		return StoreBidResult{}, err
	}
	err := d.write(ctx, thread, func(tx *store.Tx) error {
		got, err := tx.Exec(ctx, d.st.bidRaise, r.MaxBid, r.MaxBid, r.ItemID)
		if err != nil {
			return fmt.Errorf("bid on item %d: %w", r.ItemID, err)
		}
		if got.RowsAffected == 0 {
			return errNoItem(title)
		}
		tx.Queue(d.st.insertBid, r.UserID, r.ItemID, r.Qty, r.Bid, r.MaxBid, d.clock())
		return nil
	})
	return StoreBidResult{}, err
}

// checkBid applies StoreBid's rules, in the PHP's order and words.
func checkBid(r StoreBidRequest) error {
	const title = "StoreBid"
	p := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case r.Qty > r.MaxQty:
		return &PageError{Title: title, Message: fmt.Sprintf("You cannot request %d items because only %d are proposed!", r.Qty, r.MaxQty)}
	case r.Qty < 1:
		return &PageError{Title: title, Message: fmt.Sprintf("You cannot request %d items.", r.Qty)}
	case r.Bid < r.MinBid:
		return &PageError{Title: title, Message: "Your bid of $" + p(r.Bid) + " is not acceptable because it is below the $" + p(r.MinBid) + " minimum bid!"}
	case r.MaxBid < r.MinBid:
		return &PageError{Title: title, Message: "Your maximum bid of $" + p(r.MaxBid) + " is not acceptable because it is below the $" + p(r.MinBid) + " minimum bid!"}
	case r.MaxBid < r.Bid:
		return &PageError{Title: title, Message: "Your maximum bid of $" + p(r.MaxBid) + " is not acceptable because it is below your current bid of $" + p(r.Bid) + "!"}
	}
	return nil
}

func (d *Servlets) PutComment(ctx context.Context, thread int, r PutCommentRequest) (PutCommentResult, error) {
	const title = "PutComment"
	s := d.session(thread)
	uid, err := d.authenticate(ctx, s, title, r.Nickname, r.Password)
	if err != nil {
		return PutCommentResult{}, err
	}
	res := PutCommentResult{UserID: uid, Nickname: r.Nickname}
	var seller string
	err = s.QueryRow(ctx, d.st.item, r.ItemID).Scan(append(itemDest(&res.Item), &seller)...)
	if errors.Is(err, store.ErrNotFound) {
		return res, errNoItem(title)
	}
	if err != nil {
		return res, fmt.Errorf("item %d: %w", r.ItemID, err)
	}
	err = s.QueryRow(ctx, d.st.user, r.To).Scan(userDest(&res.To)...)
	if errors.Is(err, store.ErrNotFound) {
		return res, errNoUser(title)
	}
	if err != nil {
		return res, fmt.Errorf("user %d: %w", r.To, err)
	}
	return res, nil
}

// StoreComment records the comment with its own rating (the PHP records
// the user's new total instead, which would make users.rating differ
// from the sum of the ratings about them, the population's invariant).
func (d *Servlets) StoreComment(ctx context.Context, thread int, r StoreCommentRequest) (StoreCommentResult, error) {
	const title = "StoreComment"
	err := d.write(ctx, thread, func(tx *store.Tx) error {
		got, err := tx.Exec(ctx, d.st.rateUser, r.Rating, r.To)
		if err != nil {
			return fmt.Errorf("rate user %d: %w", r.To, err)
		}
		if got.RowsAffected == 0 {
			return errNoUser(title)
		}
		tx.Queue(d.st.insertComment, r.From, r.To, r.ItemID, r.Rating, d.clock(), r.Comment)
		return nil
	})
	return StoreCommentResult{}, err
}

func (d *Servlets) SelectCategoryToSellItem(ctx context.Context, thread int, r SelectCategoryToSellItemRequest) (SelectCategoryToSellItemResult, error) {
	s := d.session(thread)
	uid, err := d.authenticate(ctx, s, "Authentication", r.Nickname, r.Password)
	if err != nil {
		return SelectCategoryToSellItemResult{}, err
	}
	cs, err := store.Collect(ctx, s, d.st.categories, categoryDest)
	return SelectCategoryToSellItemResult{UserID: uid, Categories: cs}, err
}

func (d *Servlets) RegisterItem(ctx context.Context, thread int, r RegisterItemRequest) (RegisterItemResult, error) {
	start := d.clock()
	it := Item{Name: r.Name, Description: r.Description, InitialPrice: r.InitialPrice, Quantity: r.Quantity,
		ReservePrice: r.ReservePrice, BuyNow: r.BuyNow, StartDate: start, EndDate: start.AddDate(0, 0, int(r.Duration)),
		Seller: r.UserID, Category: r.CategoryID}
	err := d.write(ctx, thread, func(tx *store.Tx) error {
		id, err := store.InsertID(ctx, tx, d.st.insertItem, it.Name, it.Description, it.InitialPrice,
			it.Quantity, it.ReservePrice, it.BuyNow, it.StartDate, it.EndDate, it.Seller, it.Category)
		it.ID = id
		return err
	})
	if err != nil {
		return RegisterItemResult{}, fmt.Errorf("register item %q: %w", r.Name, err)
	}
	return RegisterItemResult{Item: it}, nil
}

func (d *Servlets) AboutMe(ctx context.Context, thread int, r AboutMeRequest) (AboutMeResult, error) {
	s := d.session(thread)
	uid, err := d.authenticate(ctx, s, "About me", r.Nickname, r.Password)
	if err != nil {
		return AboutMeResult{}, err
	}
	res := AboutMeResult{Password: r.Password}
	if err := s.QueryRow(ctx, d.st.user, uid).Scan(userDest(&res.User)...); err != nil {
		return res, fmt.Errorf("user %d: %w", uid, err)
	}
	now := d.clock()
	since := now.AddDate(0, 0, -recentDays)
	if res.Bidding, err = store.Collect(ctx, s, d.st.aboutBidding, func(b *AboutMeBid) []any {
		return append(itemDest(&b.Item), &b.YourMaxBid, &b.SellerNickname)
	}, uid, now); err != nil {
		return res, err
	}
	wonDest := func(w *AboutMeWon) []any { return append(itemDest(&w.Item), &w.SellerNickname) }
	if res.Won, err = store.Collect(ctx, s, d.st.aboutWon, wonDest, uid, now, since); err != nil {
		return res, err
	}
	wonOld, err := store.Collect(ctx, s, d.st.aboutWonOld, wonDest, uid, now, since)
	if err != nil {
		return res, err
	}
	for i := range wonOld {
		wonOld[i].Item.Old = true
	}
	res.Won = append(res.Won, wonOld...)
	if res.Bought, err = store.Collect(ctx, s, d.st.aboutBought, func(b *AboutMeBought) []any {
		return append(itemDest(&b.Item), &b.Qty, &b.Date, &b.SellerNickname)
	}, uid, since); err != nil {
		return res, err
	}
	for i := range res.Bought {
		res.Bought[i].Price = res.Bought[i].Item.BuyNow * float64(res.Bought[i].Qty)
	}
	if res.Selling, err = store.Collect(ctx, s, d.st.aboutSelling, itemDest, uid, now); err != nil {
		return res, err
	}
	if res.Sold, err = store.Collect(ctx, s, d.st.aboutSold, itemDest, uid, now, since); err != nil {
		return res, err
	}
	soldOld, err := store.Collect(ctx, s, d.st.aboutSoldOld, itemDest, uid, now, since)
	if err != nil {
		return res, err
	}
	for i := range soldOld {
		soldOld[i].Old = true
	}
	res.Sold = append(res.Sold, soldOld...)
	res.Comments, err = store.Collect(ctx, s, d.st.commentsAbout, commentDest, uid)
	return res, err
}
