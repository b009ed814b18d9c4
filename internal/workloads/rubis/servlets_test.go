package rubis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

const testSeed = 7

// testThreads is the server threads of the tests' databases.
const testThreads = 8

// popBase is the time base of the tests' populations: one for the test
// binary, so that the tests copy one loaded population (populate) instead
// of each loading its own. The tests that run the direct tier or the
// container stop its clock there; those on the real clock see the
// population as a load a few seconds or minutes earlier would leave it,
// its auctions open for an hour at least (minTimeLeft).
var popBase = timeBase(time.Now())

// populate fills dsn, a fresh database, with a copy of the scale-1
// population of seed at base, loaded once per backend by the test binary
// (storetest.Populate).
func populate(t *testing.T, dsn string, seed uint64, base time.Time) {
	t.Helper()
	key := fmt.Sprintf("rubis scale 1 seed %d base %s", seed, base.Format(time.RFC3339Nano))
	storetest.Populate(t, dsn, key, func(ctx context.Context, db *store.DB) error {
		_, err := loadAt(ctx, db, workload.LoadParams{Scale: 1, Seed: seed}, base)
		return err
	})
}

// directBundle is a loaded database at scale 1 and the direct tier over
// it, its clock stopped at the load's time base.
type directBundle struct {
	db   *store.DB
	d    *Servlets
	q    storetest.Querier
	pop  population
	base time.Time
}

func setupDirect(t *testing.T, dsn string) directBundle {
	t.Helper()
	base := popBase
	d, db := directAt(t, dsn, base)
	return directBundle{db: db, d: d, q: storetest.Querier{T: t, DB: db}, pop: mustPopulation(t, 1), base: base}
}

func wantPageError(t *testing.T, err error, what string) {
	t.Helper()
	var pe *PageError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: %v, want a page error", what, err)
	}
}

func TestDirect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		b := setupDirect(t, dsn)
		ctx := context.Background()
		d, q := b.d, b.q
		active := b.pop.FirstActiveItem()

		t.Run("ViewItem falls back to old_items", func(t *testing.T) {
			v, err := d.ViewItem(ctx, 0, ViewItemRequest{ItemID: active})
			if err != nil || v.Old || v.ID != active || v.Name != itemName(active) {
				t.Fatalf("active item %d: %+v, %v", active, v.Item, err)
			}
			if n := q.Int("SELECT COUNT(*) FROM bids WHERE item_id = ?", active); v.Bids != n {
				t.Errorf("bids = %d, want %d", v.Bids, n)
			}
			old, err := d.ViewItem(ctx, 0, ViewItemRequest{ItemID: 1})
			if err != nil || !old.Old || old.ID != 1 || old.Name != itemName(1) {
				t.Fatalf("old item 1: %+v, %v", old.Item, err)
			}
			_, err = d.ViewItem(ctx, 0, ViewItemRequest{ItemID: b.pop.Items() + 1})
			wantPageError(t, err, "unknown item")
		})

		t.Run("searches page by 20 over open auctions", func(t *testing.T) {
			for _, cat := range []int64{1, 20} {
				want := q.Ints("SELECT id FROM items WHERE category = ? AND end_date >= ? ORDER BY id", cat, b.base)
				for page := 0; page*DefaultItemsPerPage <= len(want); page++ {
					res, err := d.SearchItemsByCategory(ctx, 1, SearchItemsByCategoryRequest{Category: cat, Page: page, NbOfItems: DefaultItemsPerPage})
					if err != nil {
						t.Fatal(err)
					}
					w := want[page*DefaultItemsPerPage : min((page+1)*DefaultItemsPerPage, len(want))]
					if got := summaryIDs(res.Items); fmt.Sprint(got) != fmt.Sprint(w) {
						t.Fatalf("category %d page %d: %v, want %v", cat, page, got, w)
					}
				}
			}
			want := q.Ints("SELECT i.id FROM items i JOIN users u ON u.id = i.seller WHERE i.category = 3 AND u.region = 5 AND i.end_date >= ? ORDER BY i.id", b.base)
			res, err := d.SearchItemsByRegion(ctx, 1, SearchItemsByRegionRequest{Region: 5, Category: 3, NbOfItems: DefaultItemsPerPage})
			if err != nil || fmt.Sprint(summaryIDs(res.Items)) != fmt.Sprint(want[:min(20, len(want))]) {
				t.Fatalf("region 5 category 3: %v, %v; want %v", summaryIDs(res.Items), err, want)
			}
		})

		t.Run("StoreBid writes the bid and raises the item", func(t *testing.T) {
			item := active + 3
			nb := q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item)
			maxBid := q.Float("SELECT max_bid FROM items WHERE id = ?", item)
			req := StoreBidRequest{UserID: 11, ItemID: item, MinBid: 1, Bid: maxBid + 100, MaxBid: maxBid + 200, Qty: 1, MaxQty: 1}
			if _, err := d.StoreBid(ctx, 2, req); err != nil {
				t.Fatal(err)
			}
			if got := q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item); got != nb+1 {
				t.Errorf("nb_of_bids = %d, want %d", got, nb+1)
			}
			if got := q.Float("SELECT max_bid FROM items WHERE id = ?", item); got != maxBid+200 {
				t.Errorf("max_bid = %v, want %v", got, maxBid+200)
			}
			var user, qty int64
			var bid, mb float64
			var at time.Time
			if err := q.Row("SELECT user_id, qty, bid, max_bid, date FROM bids WHERE item_id = ? ORDER BY id DESC LIMIT 1", item).
				Scan(&user, &qty, &bid, &mb, &at); err != nil || user != 11 || qty != 1 || bid != maxBid+100 || mb != maxBid+200 || !at.Equal(b.base) {
				t.Errorf("bid row = %d %d %v %v %v, %v", user, qty, bid, mb, at, err)
			}
			// A lower max bid counts but leaves max_bid.
			req.MaxBid, req.Bid = 1, 1
			if _, err := d.StoreBid(ctx, 2, req); err != nil {
				t.Fatal(err)
			}
			if got := q.Float("SELECT max_bid FROM items WHERE id = ?", item); got != maxBid+200 {
				t.Errorf("max_bid after a lower bid = %v, want %v", got, maxBid+200)
			}
			for _, bad := range []StoreBidRequest{
				{ItemID: item, MinBid: 10, Bid: 9, MaxBid: 20, Qty: 1, MaxQty: 1},
				{ItemID: item, MinBid: 10, Bid: 12, MaxBid: 11, Qty: 1, MaxQty: 1},
				{ItemID: item, MinBid: 10, Bid: 12, MaxBid: 20, Qty: 2, MaxQty: 1},
				{ItemID: b.pop.Items() + 5, MinBid: 1, Bid: 2, MaxBid: 3, Qty: 1, MaxQty: 1},
			} {
				_, err := d.StoreBid(ctx, 2, bad)
				wantPageError(t, err, fmt.Sprintf("bid %+v", bad))
			}
			if got := q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item); got != nb+2 {
				t.Errorf("nb_of_bids after refused bids = %d, want %d", got, nb+2)
			}
		})

		t.Run("StoreBuyNow takes units and closes the auction at 0", func(t *testing.T) {
			item := active + 5
			q.Exec("UPDATE items SET quantity = 3 WHERE id = ?", item)
			if _, err := d.StoreBuyNow(ctx, 3, StoreBuyNowRequest{UserID: 21, ItemID: item, Qty: 2, MaxQty: 3}); err != nil {
				t.Fatal(err)
			}
			if got := q.Int("SELECT quantity FROM items WHERE id = ?", item); got != 1 {
				t.Errorf("quantity = %d, want 1", got)
			}
			_, err := d.StoreBuyNow(ctx, 3, StoreBuyNowRequest{UserID: 21, ItemID: item, Qty: 2, MaxQty: 3})
			wantPageError(t, err, "more than is left")
			if _, err := d.StoreBuyNow(ctx, 3, StoreBuyNowRequest{UserID: 22, ItemID: item, Qty: 1, MaxQty: 1}); err != nil {
				t.Fatal(err)
			}
			var qty int64
			var end time.Time
			if err := q.Row("SELECT quantity, end_date FROM items WHERE id = ?", item).Scan(&qty, &end); err != nil || qty != 0 || !end.Equal(b.base) {
				t.Errorf("after the last unit: quantity %d, end %v (%v); want 0, %v", qty, end, err, b.base)
			}
			rows := q.Int("SELECT COUNT(*) FROM buy_now WHERE item_id = ?", item)
			sum := q.Int("SELECT SUM(qty) FROM buy_now WHERE item_id = ?", item)
			var buyer int64
			var at time.Time
			if err := q.Row("SELECT buyer_id, date FROM buy_now WHERE item_id = ? ORDER BY id DESC LIMIT 1", item).Scan(&buyer, &at); err != nil ||
				rows != 2 || sum != 3 || buyer != 22 || !at.Equal(b.base) {
				t.Errorf("buy_now: %d rows, %d units, last buyer %d at %v (%v); want 2, 3, 22 at %v", rows, sum, buyer, at, err, b.base)
			}
			_, err = d.StoreBuyNow(ctx, 3, StoreBuyNowRequest{UserID: 22, ItemID: -1, Qty: 1, MaxQty: 1})
			wantPageError(t, err, "unknown item")
		})

		t.Run("StoreComment rates the user and records the comment", func(t *testing.T) {
			to := int64(17)
			before := q.Int("SELECT rating FROM users WHERE id = ?", to)
			req := StoreCommentRequest{From: 3, To: to, ItemID: active, Rating: -3, Comment: "late ' \" \\ shipping"}
			if _, err := d.StoreComment(ctx, 4, req); err != nil {
				t.Fatal(err)
			}
			if got := q.Int("SELECT rating FROM users WHERE id = ?", to); got != before-3 {
				t.Errorf("rating = %d, want %d", got, before-3)
			}
			var from, item, rating int64
			var text string
			var at time.Time
			if err := q.Row("SELECT from_user_id, item_id, rating, comment, date FROM comments WHERE to_user_id = ? ORDER BY id DESC LIMIT 1", to).
				Scan(&from, &item, &rating, &text, &at); err != nil || from != 3 || item != active || rating != -3 || text != req.Comment || !at.Equal(b.base) {
				t.Errorf("comment row: %d %d %d %q %v, %v", from, item, rating, text, at, err)
			}
			_, err := d.StoreComment(ctx, 4, StoreCommentRequest{From: 3, To: -7, ItemID: active, Rating: 3, Comment: "x"})
			wantPageError(t, err, "unknown user")
		})

		t.Run("RegisterUser inserts once per nickname", func(t *testing.T) {
			req := RegisterUserRequest{Firstname: "Ada", Lastname: "Lovelace", Nickname: "ada", Password: "secret", Email: "ada@example.com", Region: regionNames[4]}
			res, err := d.RegisterUser(ctx, 5, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.User.ID <= b.pop.Users || res.Region.ID != 5 {
				t.Errorf("new user %d in region %d; want an id past %d, region 5", res.User.ID, res.Region.ID, b.pop.Users)
			}
			var first, last, nick, pass, email string
			var rating, region int64
			var balance float64
			var since time.Time
			if err := q.Row("SELECT firstname, lastname, nickname, password, email, rating, balance, creation_date, region FROM users WHERE id = ?", res.User.ID).
				Scan(&first, &last, &nick, &pass, &email, &rating, &balance, &since, &region); err != nil ||
				first != "Ada" || last != "Lovelace" || nick != "ada" || pass != "secret" || email != "ada@example.com" ||
				rating != 0 || balance != 0 || !since.Equal(b.base) || region != 5 {
				t.Errorf("user row: %s %s %s %s %s %d %v %v %d, %v", first, last, nick, pass, email, rating, balance, since, region, err)
			}
			_, err = d.RegisterUser(ctx, 5, req)
			wantPageError(t, err, "nickname taken")
			req.Nickname = "user3"
			_, err = d.RegisterUser(ctx, 5, req)
			wantPageError(t, err, "a loaded user's nickname")
			req.Nickname, req.Region = "ada2", "Atlantis"
			_, err = d.RegisterUser(ctx, 5, req)
			wantPageError(t, err, "unknown region")
			if n := q.Int("SELECT COUNT(*) FROM users"); n != b.pop.Users+1 {
				t.Errorf("%d users, want %d", n, b.pop.Users+1)
			}
		})

		t.Run("RegisterItem inserts the item", func(t *testing.T) {
			req := RegisterItemRequest{UserID: 9, CategoryID: 4, Name: "lamp", Description: "a lamp", InitialPrice: 10, ReservePrice: 20, BuyNow: 40, Duration: 3, Quantity: 2}
			res, err := d.RegisterItem(ctx, 6, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Item.ID <= b.pop.Items() {
				t.Errorf("new item id %d, want past %d", res.Item.ID, b.pop.Items())
			}
			var it Item
			if err := q.Row("SELECT "+itemCols("")+" FROM items WHERE id = ?", res.Item.ID).Scan(itemDest(&it)...); err != nil {
				t.Fatal(err)
			}
			want := Item{ID: res.Item.ID, Name: "lamp", Description: "a lamp", InitialPrice: 10, Quantity: 2, ReservePrice: 20, BuyNow: 40,
				StartDate: b.base, EndDate: b.base.AddDate(0, 0, 3), Seller: 9, Category: 4}
			if !it.StartDate.Equal(want.StartDate) || !it.EndDate.Equal(want.EndDate) {
				t.Errorf("dates %v..%v, want %v..%v", it.StartDate, it.EndDate, want.StartDate, want.EndDate)
			}
			it.StartDate, it.EndDate, want.StartDate, want.EndDate = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			if it != want {
				t.Errorf("item row %+v, want %+v", it, want)
			}
			me, err := d.AboutMe(ctx, 6, AboutMeRequest{Nickname: nickname(9), Password: password(9)})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, s := range me.Selling {
				found = found || s.ID == res.Item.ID
			}
			if !found || me.User.ID != 9 {
				t.Errorf("AboutMe of user 9 sells %d items, none %d", len(me.Selling), res.Item.ID)
			}
		})

		t.Run("authentication", func(t *testing.T) {
			_, err := d.PutBid(ctx, 7, PutBidRequest{Nickname: nickname(5), Password: "wrong", ItemID: active})
			wantPageError(t, err, "wrong password")
			res, err := d.PutBid(ctx, 7, PutBidRequest{Nickname: nickname(5), Password: password(5), ItemID: active})
			if err != nil || res.UserID != 5 || res.MinBid != res.CurrentPrice+1 {
				t.Errorf("PutBid: user %d, min bid %v, price %v, %v", res.UserID, res.MinBid, res.CurrentPrice, err)
			}
			_, err = d.AboutMe(ctx, 7, AboutMeRequest{Nickname: "' OR '1'='1", Password: "' OR '1'='1"})
			wantPageError(t, err, "injected login")
		})
	})
}

func summaryIDs(items []ItemSummary) []int64 {
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}

// TestDirectConcurrentWrites races bids and purchases on one item from
// every server thread: the counters must account for every row.
func TestDirectConcurrentWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		b := setupDirect(t, dsn)
		ctx := context.Background()
		item := b.pop.FirstActiveItem() + 7
		nb := b.q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item)
		const bidders, bidsEach = testThreads, 10
		var wg sync.WaitGroup
		for th := range bidders {
			wg.Go(func() {
				for k := range bidsEach {
					v := float64(10_000 + th*100 + k)
					if _, err := b.d.StoreBid(ctx, th, StoreBidRequest{UserID: int64(th + 1), ItemID: item, MinBid: 1, Bid: v, MaxBid: v, Qty: 1, MaxQty: 1}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if got, rows := b.q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item), b.q.Int("SELECT COUNT(*) FROM bids WHERE item_id = ?", item); got != nb+bidders*bidsEach || got != rows {
			t.Errorf("nb_of_bids = %d, bids rows %d; want %d", got, rows, nb+bidders*bidsEach)
		}
		if got, want := b.q.Float("SELECT max_bid FROM items WHERE id = ?", item), b.q.Float("SELECT MAX(max_bid) FROM bids WHERE item_id = ?", item); got != want {
			t.Errorf("max_bid = %v, the bids' largest %v", got, want)
		}

		const stock = 25
		b.q.Exec("UPDATE items SET quantity = ? WHERE id = ?", stock, item)
		var mu sync.Mutex
		bought, refused := int64(0), 0
		for th := range testThreads {
			wg.Go(func() {
				for k := range 6 {
					qty := int64(1 + (th+k)%3)
					_, err := b.d.StoreBuyNow(ctx, th, StoreBuyNowRequest{UserID: int64(th + 1), ItemID: item, Qty: qty, MaxQty: 3})
					mu.Lock()
					switch {
					case err == nil:
						bought += qty
					case IsPageError(err):
						refused++
					default:
						t.Error(err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		left := b.q.Int("SELECT quantity FROM items WHERE id = ?", item)
		recorded := b.q.Int("SELECT COALESCE(SUM(qty), 0) FROM buy_now WHERE item_id = ?", item)
		if recorded != bought || left != stock-bought || left < 0 || bought > stock {
			t.Errorf("bought %d (recorded %d), %d left of %d", bought, recorded, left, stock)
		}
		if refused == 0 {
			t.Errorf("no purchase was refused: %d units asked of %d", bought, stock)
		}
	})
}
