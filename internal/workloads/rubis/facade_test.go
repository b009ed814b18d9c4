package rubis

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/browser"
)

// runSettings are the container's switches of a run, as config.New's
// defaults fill in those a test leaves out.
func runSettings(p container.Persistence, o container.CommitOption, c container.Concurrency, cache string) container.Settings {
	size, err := container.ParseSize(cache)
	if err != nil {
		panic(err) // the tests' own constants
	}
	return container.Settings{Persistence: p, CommitOption: o, Concurrency: c, Cache: size,
		Pool: container.Size{Percent: 20, Relative: true}, Refresh: time.Hour, LockTimeout: 5 * time.Second}
}

// resolved are run's settings for every RUBiS type, as the runner
// resolves them.
func resolved(t *testing.T, run container.Settings) map[string]container.Settings {
	t.Helper()
	out := make(map[string]container.Settings)
	for _, ty := range entityTypes {
		s, err := container.Resolve(run, ty, nil)
		if err != nil {
			t.Fatalf("%s: %v", ty.Name, err)
		}
		out[ty.Name] = s
	}
	return out
}

// containerVariants are the container settings the tests run RUBiS under:
// each persistence strategy, and the commit options with a concurrency
// strategy that keeps them from losing updates.
var containerVariants = []struct {
	name string
	run  container.Settings
	warm bool
}{
	{"cmp-C-database", runSettings(container.CMP, container.OptionC, container.Database, "0"), false},
	{"bmp-C-database", runSettings(container.BMP, container.OptionC, container.Database, "0"), false},
	{"cmp-B-database", runSettings(container.CMP, container.OptionB, container.Database, "100%"), false},
	{"cmp-A-exclusive-warm", runSettings(container.CMP, container.OptionA, container.Exclusive, "100%"), true},
	{"bmp-D-exclusive", runSettings(container.BMP, container.OptionD, container.Exclusive, "50%"), false},
}

// beansBundle is a loaded database at scale 1 and the container tier over
// it, its clock stopped at the load's time base.
type beansBundle struct {
	db   *store.DB
	b    *Facade
	q    storetest.Querier
	pop  population
	base time.Time
}

// setupBeans loads dsn at base and starts the container tier on it
// through the workload's Site, as `tierbench run` does.
func setupBeans(t *testing.T, dsn string, run container.Settings, warm bool, base time.Time) beansBundle {
	t.Helper()
	ctx := context.Background()
	populate(t, dsn, testSeed, base)
	db := storetest.Open(t, dsn, store.Options{Threads: testThreads})
	s, err := Workload{}.Site(ctx, db, workload.RunParams{Scale: 1, Persistence: run.Persistence, Entities: resolved(t, run),
		Options: func() Options { o := DefaultOptions; o.warm = warm; return o }(), Threads: testThreads})
	if err != nil {
		t.Fatal(err)
	}
	es, ok := s.(entitySite)
	if !ok {
		t.Fatalf("Site with persistence %s is a %T, want an entitySite", run.Persistence, s)
	}
	es.beans.now = func() time.Time { return base }
	return beansBundle{db: db, b: es.beans, q: storetest.Querier{T: t, DB: db}, pop: mustPopulation(t, 1), base: base}
}

// freshDSN is a new, empty database on the backend of db.
func freshDSN(t *testing.T, d store.Dialect) string {
	switch d {
	case store.Postgres:
		return storetest.Postgres(t)
	case store.MySQL:
		return storetest.MySQL(t)
	}
	return storetest.SQLite(t)
}

// tier is an Auction under test and the hand on its clock.
type tier struct {
	a      Auction
	setNow func(time.Time)
}

// fixture are the ids the script uses, read from the population (the same
// in every database loaded with testSeed at the same base).
type fixture struct {
	pop   population
	base  time.Time
	bid   int64 // an open auction with bids
	multi int64 // an open auction of several units
	qty   int64 // its quantity
	owner int64 // its seller
	// oldSeller sold an item of old_items in AboutMe's window.
	oldSeller int64
}

func newFixture(q storetest.Querier, pop population, base time.Time) fixture {
	f := fixture{pop: pop, base: base}
	f.bid = q.Int("SELECT MIN(id) FROM items WHERE nb_of_bids > 2")
	f.multi = q.Int("SELECT MIN(id) FROM items WHERE quantity > 2")
	f.qty = q.Int("SELECT quantity FROM items WHERE id = ?", f.multi)
	f.owner = q.Int("SELECT seller FROM items WHERE id = ?", f.multi)
	f.oldSeller = q.Int("SELECT seller FROM old_items WHERE end_date >= ? ORDER BY id LIMIT 1", base.AddDate(0, 0, -20))
	return f
}

// step is one interaction of the script.
type step struct {
	name string
	do   func(ctx context.Context, x tier) (any, error)
}

func interact[Req, Res any](m func(Auction) func(context.Context, int, Req) (Res, error), thread int, r Req) func(context.Context, tier) (any, error) {
	return func(ctx context.Context, x tier) (any, error) { return m(x.a)(ctx, thread, r) }
}

// script is a sequence of every interaction, reads before and after the
// writes they should see, and the page errors of each. Registrations that
// succeed come before those refused: a refused INSERT of the direct tier
// consumes a sequence value (PostgreSQL, InnoDB) where the container's
// look-up does not, so later keys would differ.
func script(f fixture) []step {
	active := f.pop.FirstActiveItem()
	unknownItem, unknownUser := f.pop.Items()+100, f.pop.Users+100
	later := f.base.Add(time.Hour)
	auth := func(id int64) (string, string) { return nickname(id), password(id) }
	n5, p5 := auth(5)
	n11, p11 := auth(11)
	n21, p21 := auth(21)
	n9, p9 := auth(9)
	nOwner, pOwner := auth(f.owner)
	nOld, pOld := auth(f.oldSeller)
	var (
		registerUser = func(a Auction) func(context.Context, int, RegisterUserRequest) (RegisterUserResult, error) {
			return a.RegisterUser
		}
		browseCats = func(a Auction) func(context.Context, int, BrowseCategoriesRequest) (BrowseCategoriesResult, error) {
			return a.BrowseCategories
		}
		searchCat = func(a Auction) func(context.Context, int, SearchItemsByCategoryRequest) (SearchItemsResult, error) {
			return a.SearchItemsByCategory
		}
		browseRegions = func(a Auction) func(context.Context, int, BrowseRegionsRequest) (BrowseRegionsResult, error) {
			return a.BrowseRegions
		}
		catsInRegion = func(a Auction) func(context.Context, int, BrowseCategoriesInRegionRequest) (BrowseCategoriesInRegionResult, error) {
			return a.BrowseCategoriesInRegion
		}
		searchRegion = func(a Auction) func(context.Context, int, SearchItemsByRegionRequest) (SearchItemsResult, error) {
			return a.SearchItemsByRegion
		}
		viewItem = func(a Auction) func(context.Context, int, ViewItemRequest) (ViewItemResult, error) { return a.ViewItem }
		viewUser = func(a Auction) func(context.Context, int, ViewUserInfoRequest) (ViewUserInfoResult, error) {
			return a.ViewUserInfo
		}
		bidHistory = func(a Auction) func(context.Context, int, ViewBidHistoryRequest) (ViewBidHistoryResult, error) {
			return a.ViewBidHistory
		}
		buyNow      = func(a Auction) func(context.Context, int, BuyNowRequest) (BuyNowResult, error) { return a.BuyNow }
		storeBuyNow = func(a Auction) func(context.Context, int, StoreBuyNowRequest) (StoreBuyNowResult, error) {
			return a.StoreBuyNow
		}
		putBid     = func(a Auction) func(context.Context, int, PutBidRequest) (PutBidResult, error) { return a.PutBid }
		storeBid   = func(a Auction) func(context.Context, int, StoreBidRequest) (StoreBidResult, error) { return a.StoreBid }
		putComment = func(a Auction) func(context.Context, int, PutCommentRequest) (PutCommentResult, error) {
			return a.PutComment
		}
		storeComment = func(a Auction) func(context.Context, int, StoreCommentRequest) (StoreCommentResult, error) {
			return a.StoreComment
		}
		selectCategory = func(a Auction) func(context.Context, int, SelectCategoryToSellItemRequest) (SelectCategoryToSellItemResult, error) {
			return a.SelectCategoryToSellItem
		}
		registerItem = func(a Auction) func(context.Context, int, RegisterItemRequest) (RegisterItemResult, error) {
			return a.RegisterItem
		}
		aboutMe = func(a Auction) func(context.Context, int, AboutMeRequest) (AboutMeResult, error) { return a.AboutMe }
	)
	ada := RegisterUserRequest{Firstname: "Ada", Lastname: "Lovelace", Nickname: "ada", Password: "secret", Email: "ada@example.com", Region: regionNames[4]}
	grace := RegisterUserRequest{Firstname: "Grace", Lastname: "Hopper", Nickname: "grace", Password: "cobol", Email: "grace@example.com", Region: regionNames[9]}
	// Quantity+1 single-unit bids on top of the multi-unit auction: its
	// price is the bid at which the units asked for exceed those offered,
	// counted over its Quantity highest bids only.
	var topBids []step
	for k := range f.qty + 1 {
		price := float64(100_000 + 10*k)
		topBids = append(topBids, step{fmt.Sprintf("StoreBid on multi top %d", k),
			interact(storeBid, int(k%testThreads), StoreBidRequest{UserID: 30 + k, ItemID: f.multi, MinBid: 1, Bid: price, MaxBid: price, Qty: 1, MaxQty: f.qty})})
	}
	return slices.Concat([]step{
		{"BrowseCategories", interact(browseCats, 0, BrowseCategoriesRequest{})},
		{"BrowseRegions", interact(browseRegions, 1, BrowseRegionsRequest{})},
		{"BrowseCategoriesInRegion by id", interact(catsInRegion, 2, BrowseCategoriesInRegionRequest{Region: "5"})},
		{"BrowseCategoriesInRegion by name", interact(catsInRegion, 2, BrowseCategoriesInRegionRequest{Region: regionNames[3]})},
		{"BrowseCategoriesInRegion unknown name", interact(catsInRegion, 2, BrowseCategoriesInRegionRequest{Region: "Atlantis"})},
		{"BrowseCategoriesInRegion unknown id", interact(catsInRegion, 2, BrowseCategoriesInRegionRequest{Region: "999"})},
		{"SearchItemsByCategory 1", interact(searchCat, 3, SearchItemsByCategoryRequest{Category: 1, NbOfItems: DefaultItemsPerPage})},
		{"SearchItemsByCategory 20 page 1", interact(searchCat, 3, SearchItemsByCategoryRequest{Category: 20, Page: 1})},
		{"SearchItemsByCategory 7 page 2 by 5", interact(searchCat, 3, SearchItemsByCategoryRequest{Category: 7, Page: 2, NbOfItems: 5})},
		{"SearchItemsByCategory past the end", interact(searchCat, 3, SearchItemsByCategoryRequest{Category: 2, Page: 50})},
		{"SearchItemsByRegion", interact(searchRegion, 4, SearchItemsByRegionRequest{Region: 5, Category: 3})},
		{"SearchItemsByRegion page 1 by 3", interact(searchRegion, 4, SearchItemsByRegionRequest{Region: 12, Category: 8, Page: 1, NbOfItems: 3})},
		{"ViewItem active", interact(viewItem, 5, ViewItemRequest{ItemID: active})},
		{"ViewItem with bids", interact(viewItem, 5, ViewItemRequest{ItemID: f.bid})},
		{"ViewItem multi", interact(viewItem, 5, ViewItemRequest{ItemID: f.multi})},
		{"ViewItem old", interact(viewItem, 5, ViewItemRequest{ItemID: 1})},
		{"ViewItem unknown", interact(viewItem, 5, ViewItemRequest{ItemID: unknownItem})},
		{"ViewUserInfo", interact(viewUser, 6, ViewUserInfoRequest{UserID: 17})},
		{"ViewUserInfo unknown", interact(viewUser, 6, ViewUserInfoRequest{UserID: unknownUser})},
		{"ViewBidHistory", interact(bidHistory, 7, ViewBidHistoryRequest{ItemID: f.bid})},
		{"ViewBidHistory old", interact(bidHistory, 7, ViewBidHistoryRequest{ItemID: 1})},
		{"ViewBidHistory unknown", interact(bidHistory, 7, ViewBidHistoryRequest{ItemID: unknownItem})},
		{"BuyNow", interact(buyNow, 0, BuyNowRequest{Nickname: n5, Password: p5, ItemID: f.multi})},
		{"BuyNow wrong password", interact(buyNow, 0, BuyNowRequest{Nickname: n5, Password: "wrong", ItemID: f.multi})},
		{"BuyNow old item", interact(buyNow, 0, BuyNowRequest{Nickname: n5, Password: p5, ItemID: 1})},
		{"PutBid", interact(putBid, 1, PutBidRequest{Nickname: n11, Password: p11, ItemID: f.bid})},
		{"PutBid wrong password", interact(putBid, 1, PutBidRequest{Nickname: n11, Password: "x", ItemID: f.bid})},
		{"PutBid old item", interact(putBid, 1, PutBidRequest{Nickname: n11, Password: p11, ItemID: 1})},
		{"StoreBid", interact(storeBid, 2, StoreBidRequest{UserID: 11, ItemID: f.bid, MinBid: 1, Bid: 9000, MaxBid: 9500, Qty: 1, MaxQty: 1})},
		{"StoreBid lower", interact(storeBid, 3, StoreBidRequest{UserID: 12, ItemID: f.bid, MinBid: 1, Bid: 2, MaxBid: 3, Qty: 1, MaxQty: 1})},
		{"StoreBid below minimum", interact(storeBid, 2, StoreBidRequest{UserID: 11, ItemID: f.bid, MinBid: 10, Bid: 9, MaxBid: 20, Qty: 1, MaxQty: 1})},
		{"StoreBid max below bid", interact(storeBid, 2, StoreBidRequest{UserID: 11, ItemID: f.bid, MinBid: 10, Bid: 12, MaxBid: 11, Qty: 1, MaxQty: 1})},
		{"StoreBid too many", interact(storeBid, 2, StoreBidRequest{UserID: 11, ItemID: f.bid, MinBid: 10, Bid: 12, MaxBid: 20, Qty: 2, MaxQty: 1})},
		{"StoreBid unknown item", interact(storeBid, 2, StoreBidRequest{UserID: 11, ItemID: unknownItem, MinBid: 1, Bid: 2, MaxBid: 3, Qty: 1, MaxQty: 1})},
		{"StoreBid on multi", interact(storeBid, 4, StoreBidRequest{UserID: 11, ItemID: f.multi, MinBid: 1, Bid: 50, MaxBid: 70, Qty: 2, MaxQty: f.qty})},
		{"StoreBid on multi again", interact(storeBid, 4, StoreBidRequest{UserID: 11, ItemID: f.multi, MinBid: 1, Bid: 40, MaxBid: 80, Qty: 1, MaxQty: f.qty})},
	}, topBids, []step{
		{"ViewItem after bids", interact(viewItem, 5, ViewItemRequest{ItemID: f.bid})},
		{"ViewItem multi after bids", interact(viewItem, 5, ViewItemRequest{ItemID: f.multi})},
		{"PutBid after bids", interact(putBid, 6, PutBidRequest{Nickname: n11, Password: p11, ItemID: f.bid})},
		{"ViewBidHistory after bids", interact(bidHistory, 7, ViewBidHistoryRequest{ItemID: f.bid})},
		{"StoreBuyNow one", interact(storeBuyNow, 0, StoreBuyNowRequest{UserID: 21, ItemID: f.multi, Qty: 1, MaxQty: f.qty})},
		{"StoreBuyNow more than left", interact(storeBuyNow, 0, StoreBuyNowRequest{UserID: 21, ItemID: f.multi, Qty: f.qty, MaxQty: f.qty})},
		{"StoreBuyNow more than offered", interact(storeBuyNow, 0, StoreBuyNowRequest{UserID: 21, ItemID: f.multi, Qty: 3, MaxQty: 2})},
		{"StoreBuyNow none", interact(storeBuyNow, 0, StoreBuyNowRequest{UserID: 21, ItemID: f.multi, Qty: 0, MaxQty: 2})},
		{"StoreBuyNow unknown", interact(storeBuyNow, 0, StoreBuyNowRequest{UserID: 21, ItemID: -1, Qty: 1, MaxQty: 1})},
		{"StoreBuyNow the rest", interact(storeBuyNow, 1, StoreBuyNowRequest{UserID: 22, ItemID: f.multi, Qty: f.qty - 1, MaxQty: f.qty})},
		{"StoreBuyNow sold out", interact(storeBuyNow, 1, StoreBuyNowRequest{UserID: 22, ItemID: f.multi, Qty: 1, MaxQty: 1})},
		{"ViewItem sold out", interact(viewItem, 5, ViewItemRequest{ItemID: f.multi})},
		{"PutComment", interact(putComment, 2, PutCommentRequest{Nickname: n5, Password: p5, ItemID: active, To: 17})},
		{"PutComment wrong password", interact(putComment, 2, PutCommentRequest{Nickname: n5, Password: "x", ItemID: active, To: 17})},
		{"PutComment unknown item", interact(putComment, 2, PutCommentRequest{Nickname: n5, Password: p5, ItemID: unknownItem, To: 17})},
		{"PutComment unknown user", interact(putComment, 2, PutCommentRequest{Nickname: n5, Password: p5, ItemID: active, To: unknownUser})},
		{"StoreComment", interact(storeComment, 3, StoreCommentRequest{From: 5, To: 17, ItemID: active, Rating: -3, Comment: "late ' \" \\ shipping"})},
		{"StoreComment again", interact(storeComment, 4, StoreCommentRequest{From: 6, To: 17, ItemID: active, Rating: 5, Comment: "fine"})},
		{"StoreComment unknown user", interact(storeComment, 3, StoreCommentRequest{From: 5, To: -7, ItemID: active, Rating: 3, Comment: "x"})},
		{"ViewUserInfo after comments", interact(viewUser, 6, ViewUserInfoRequest{UserID: 17})},
		{"RegisterUser", interact(registerUser, 5, ada)},
		{"RegisterUser another", interact(registerUser, 6, grace)},
		{"RegisterUser taken", interact(registerUser, 5, ada)},
		{"RegisterUser a loaded nickname", interact(registerUser, 5, RegisterUserRequest{Nickname: "user3", Password: "p", Email: "e", Region: regionNames[0]})},
		{"RegisterUser unknown region", interact(registerUser, 5, RegisterUserRequest{Nickname: "ada2", Password: "p", Email: "e", Region: "Atlantis"})},
		{"SelectCategoryToSellItem", interact(selectCategory, 6, SelectCategoryToSellItemRequest{Nickname: "ada", Password: "secret"})},
		{"SelectCategoryToSellItem wrong password", interact(selectCategory, 6, SelectCategoryToSellItemRequest{Nickname: "ada", Password: "Secret"})},
		{"RegisterItem", interact(registerItem, 7, RegisterItemRequest{UserID: 9, CategoryID: 4, Name: "lamp", Description: "a lamp", InitialPrice: 10,
			ReservePrice: 20, BuyNow: 40, Duration: 3, Quantity: 2})},
		{"RegisterItem another", interact(registerItem, 7, RegisterItemRequest{UserID: 9, CategoryID: 4, Name: "desk", InitialPrice: 1, Duration: 1, Quantity: 1})},
		{"SearchItemsByCategory sees new items", interact(searchCat, 3, SearchItemsByCategoryRequest{Category: 4, NbOfItems: MaxItemsPerPage})},
		{"AboutMe seller", interact(aboutMe, 0, AboutMeRequest{Nickname: n9, Password: p9})},
		{"AboutMe wrong password", interact(aboutMe, 0, AboutMeRequest{Nickname: n9, Password: "x"})},
		{"AboutMe injected", interact(aboutMe, 0, AboutMeRequest{Nickname: "' OR '1'='1", Password: "' OR '1'='1"})},
		{"AboutMe bidder", interact(aboutMe, 1, AboutMeRequest{Nickname: n11, Password: p11})},
		{"AboutMe buyer", interact(aboutMe, 1, AboutMeRequest{Nickname: n21, Password: p21})},
		{"AboutMe rated", interact(aboutMe, 1, AboutMeRequest{Nickname: nickname(17), Password: password(17)})},
		{"AboutMe old seller", interact(aboutMe, 1, AboutMeRequest{Nickname: nOld, Password: pOld})},
		// An hour on, the auction sold out above has ended: won by its
		// bidder, sold by its owner.
		{"the clock moves on", func(_ context.Context, x tier) (any, error) { x.setNow(later); return nil, nil }},
		{"AboutMe bidder later", interact(aboutMe, 2, AboutMeRequest{Nickname: n11, Password: p11})},
		{"AboutMe owner later", interact(aboutMe, 2, AboutMeRequest{Nickname: nOwner, Password: pOwner})},
		{"SearchItemsByCategory later", interact(searchCat, 3, SearchItemsByCategoryRequest{Category: 4, NbOfItems: MaxItemsPerPage})},
		{"ViewItem new item", interact(viewItem, 4, ViewItemRequest{ItemID: f.pop.Items() + 1})},
		{"BuyNow new item", interact(buyNow, 5, BuyNowRequest{Nickname: "grace", Password: "cobol", ItemID: f.pop.Items() + 1})},
		{"ViewUserInfo new user", interact(viewUser, 6, ViewUserInfoRequest{UserID: f.pop.Users + 1})},
	})
}

// outcome is a step's result or page error in canonical text; any other
// error fails the test.
func outcome(t *testing.T, name string, res any, err error) string {
	t.Helper()
	if err != nil {
		if !IsPageError(err) {
			t.Fatalf("%s: %v", name, err)
		}
		return "page error: " + err.Error()
	}
	return canon(res)
}

// canon writes v with every time in UTC, so that results compare whatever
// location a driver or the container gives a time.
func canon(v any) string {
	var b strings.Builder
	canonValue(&b, reflect.ValueOf(v))
	return b.String()
}

var timeType = reflect.TypeFor[time.Time]()

func canonValue(b *strings.Builder, v reflect.Value) {
	if !v.IsValid() {
		b.WriteString("<nil>")
		return
	}
	if v.Type() == timeType {
		b.WriteString(v.Interface().(time.Time).UTC().Format(time.RFC3339Nano))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		b.WriteString("{")
		for i := range v.NumField() {
			fmt.Fprintf(b, "%s:", v.Type().Field(i).Name)
			canonValue(b, v.Field(i))
			b.WriteString(" ")
		}
		b.WriteString("}")
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("[")
		for i := range v.Len() {
			canonValue(b, v.Index(i))
			b.WriteString(" ")
		}
		b.WriteString("]")
	default:
		fmt.Fprintf(b, "%v", v.Interface())
	}
}

// tableRows are the rows of every RUBiS table an entity type maps, in
// canonical text, by table.
func tableRows(t *testing.T, db *store.DB) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := make(map[string][]string)
	for _, ty := range entityTypes {
		cols := append(append([]container.Column{}, ty.Key...), ty.Fields...)
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		s, err := db.Prepare(ctx, store.Statement{Name: "dump-" + ty.Table, SQL: "SELECT " + strings.Join(names, ", ") + " FROM " + ty.Table + " ORDER BY id"})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]container.Value, len(cols))
		dest := make([]any, len(cols))
		for i, c := range cols {
			switch c.Kind {
			case container.Float:
				dest[i] = &vals[i].F
			case container.String:
				dest[i] = &vals[i].S
			case container.Time:
				dest[i] = &vals[i].T
			default:
				dest[i] = &vals[i].I
			}
		}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				t.Fatalf("%s: %v", ty.Table, err)
			}
			var line []string
			for i, c := range cols {
				switch c.Kind {
				case container.Float:
					line = append(line, fmt.Sprint(vals[i].F))
				case container.String:
					line = append(line, fmt.Sprintf("%q", vals[i].S))
				case container.Time:
					line = append(line, vals[i].T.UTC().Format(time.RFC3339Nano))
				default:
					line = append(line, fmt.Sprint(vals[i].I))
				}
			}
			out[ty.Table] = append(out[ty.Table], strings.Join(line, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

// compareRows reports each table whose rows (tableRows) under the tier
// named who differ from the direct tier's, at its first differing row.
func compareRows(t *testing.T, who string, got, want map[string][]string) {
	t.Helper()
	for _, ty := range entityTypes {
		g, w := got[ty.Table], want[ty.Table]
		if len(g) != len(w) {
			t.Errorf("%s: %d rows, direct %d", ty.Table, len(g), len(w))
			continue
		}
		for i := range g {
			if g[i] != w[i] {
				t.Errorf("%s row %d:\n %9s %s\n    direct %s", ty.Table, i, who, g[i], w[i])
				break
			}
		}
	}
}

// TestContainerMatchesDirect runs one script of interactions through the
// direct tier and through the container tier under each variant, each on
// its own database loaded alike, and compares every result, every page
// error and, at the end, every row of every table.
func TestContainerMatchesDirect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		d := setupDirect(t, dsn)
		base := d.base
		f := newFixture(d.q, d.pop, base)
		if f.qty < 3 || f.bid == 0 || f.oldSeller == 0 {
			t.Fatalf("fixture: %+v", f)
		}
		steps := script(f)
		want := make([]string, len(steps))
		direct := tier{a: d.d, setNow: func(at time.Time) { d.d.now = func() time.Time { return at } }}
		for i, s := range steps {
			res, err := s.do(ctx, direct)
			want[i] = outcome(t, "direct: "+s.name, res, err)
		}
		wantRows := tableRows(t, d.db)
		if n := len(wantRows["buy_now"]); n != 2 {
			t.Fatalf("the script made %d purchases, want 2", n)
		}
		pages := 0
		for _, w := range want {
			if strings.HasPrefix(w, "page error") {
				pages++
			}
		}
		t.Logf("%d steps, %d of them page errors", len(steps), pages)

		for vi, v := range containerVariants {
			t.Run(v.name, func(t *testing.T) {
				storetest.ShareCell(t, dsn, vi)
				b := setupBeans(t, freshDSN(t, d.db.Dialect()), v.run, v.warm, base)
				if got := newFixture(b.q, b.pop, base); got != f {
					t.Fatalf("fixture %+v, direct's %+v: the loads differ", got, f)
				}
				x := tier{a: b.b, setNow: func(at time.Time) { b.b.now = func() time.Time { return at } }}
				for i, s := range steps {
					res, err := s.do(ctx, x)
					if got := outcome(t, "container: "+s.name, res, err); got != want[i] {
						t.Errorf("%s:\n container %s\n    direct %s", s.name, got, want[i])
					}
				}
				compareRows(t, "container", tableRows(t, b.db), wantRows)
			})
		}
	})
}

// counts are the counters of one type a mechanism determines.
type counts struct{ Finds, Hits, Loads, Stores, Creates, Activations int64 }

// delta is what the container counted between two snapshots, by type;
// types that counted nothing are left out.
func delta(before, after map[string]container.Stats) map[string]counts {
	out := make(map[string]counts)
	for name, a := range after {
		b := before[name]
		c := counts{a.Finds - b.Finds, a.CacheHits - b.CacheHits, a.Loads - b.Loads, a.Stores - b.Stores, a.Creates - b.Creates, a.Activations - b.Activations}
		if c != (counts{}) {
			out[name] = c
		}
	}
	return out
}

// TestContainerMechanism counts what the container does for one ViewItem
// and one StoreBid under each persistence and commit option: the
// statements sent and the instances found, loaded, stored and activated,
// exactly.
func TestContainerMechanism(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		base := popBase
		for i, v := range []struct {
			name string
			run  container.Settings
			warm bool
			// statements of the second ViewItem; n is the item's bids.
			statements func(n int64) int64
			view       func(n int64) map[string]counts
			bid        map[string]counts
		}{
			{"cmp-C", runSettings(container.CMP, container.OptionC, container.Database, "0"), false,
				// The item and its seller by key, the bids by finder: a query each.
				func(int64) int64 { return 3 },
				// Each of the finder's rows counts as a find of its bid, the
				// finder call itself as none.
				func(n int64) map[string]counts {
					return map[string]counts{"Items": {1, 0, 1, 0, 0, 1}, "Users": {1, 0, 1, 0, 0, 1}, "Bids": {n, 0, n, 0, 0, n}}
				},
				// The item loaded and stored (two columns); the bid created.
				map[string]counts{"Items": {1, 0, 1, 1, 0, 1}, "Bids": {0, 0, 0, 0, 1, 0}}},
			{"bmp-C", runSettings(container.BMP, container.OptionC, container.Database, "0"), false,
				// Find then load for the item and its seller; the bids' keys,
				// then each bid: N+1.
				func(n int64) int64 { return 2 + 2 + 1 + n },
				func(n int64) map[string]counts {
					return map[string]counts{"Items": {1, 0, 1, 0, 0, 1}, "Users": {1, 0, 1, 0, 0, 1}, "Bids": {n, 0, n, 0, 0, n}}
				},
				map[string]counts{"Items": {1, 0, 1, 1, 0, 1}, "Bids": {0, 0, 0, 0, 1, 0}}},
			{"cmp-A-warm", runSettings(container.CMP, container.OptionA, container.Exclusive, "100%"), true,
				// Item and seller from the warmed cache; the bids' finder
				// from the finder cache (the first view filled it), each bid
				// from the ready cache: no statement.
				func(int64) int64 { return 0 },
				func(n int64) map[string]counts {
					return map[string]counts{"Items": {1, 1, 0, 0, 0, 0}, "Users": {1, 1, 0, 0, 0, 0}, "Bids": {n, n, 0, 0, 0, 0}}
				},
				// The item from the cache, stored; the bid created.
				map[string]counts{"Items": {1, 1, 0, 1, 0, 0}, "Bids": {0, 0, 0, 0, 1, 0}}},
			{"bmp-A-warm", runSettings(container.BMP, container.OptionA, container.Exclusive, "100%"), true,
				// The bids' keys from the finder cache, each bid then served
				// from the ready cache: no statement.
				func(int64) int64 { return 0 },
				func(n int64) map[string]counts {
					return map[string]counts{"Items": {1, 1, 0, 0, 0, 0}, "Users": {1, 1, 0, 0, 0, 0}, "Bids": {n, n, 0, 0, 0, 0}}
				},
				map[string]counts{"Items": {1, 1, 0, 1, 0, 0}, "Bids": {0, 0, 0, 0, 1, 0}}},
		} {
			t.Run(v.name, func(t *testing.T) {
				storetest.ShareCell(t, dsn, i)
				d := dsn
				if i > 0 {
					d = freshDSN(t, store.MustParseDSN(dsn).Dialect)
				}
				b := setupBeans(t, d, v.run, v.warm, base)
				item := b.q.Int("SELECT MIN(id) FROM items WHERE nb_of_bids > 2")
				n := b.q.Int("SELECT COUNT(*) FROM bids WHERE item_id = ?", item)
				// The first view may fill the cache; the second is counted.
				if _, err := b.b.ViewItem(ctx, 0, ViewItemRequest{ItemID: item}); err != nil {
					t.Fatal(err)
				}
				st, before := b.db.Stats(), b.b.ctr.Stats()
				res, err := b.b.ViewItem(ctx, 0, ViewItemRequest{ItemID: item})
				if err != nil || res.Bids != n {
					t.Fatalf("ViewItem: %d bids, %v; want %d", res.Bids, err, n)
				}
				if got, want := b.db.Stats().Sub(st).Statements, v.statements(n); got != want {
					t.Errorf("ViewItem sent %d statements, want %d", got, want)
				}
				if got, want := delta(before, b.b.ctr.Stats()), v.view(n); !reflect.DeepEqual(got, want) {
					t.Errorf("ViewItem counted %+v, want %+v", got, want)
				}
				before = b.b.ctr.Stats()
				if _, err := b.b.StoreBid(ctx, 1, StoreBidRequest{UserID: 3, ItemID: item, MinBid: 1, Bid: 9000, MaxBid: 9000, Qty: 1, MaxQty: 1}); err != nil {
					t.Fatal(err)
				}
				if got := delta(before, b.b.ctr.Stats()); !reflect.DeepEqual(got, v.bid) {
					t.Errorf("StoreBid counted %+v, want %+v", got, v.bid)
				}
				// The item's data held by the cache (A) is the database's.
				after, err := b.b.ViewItem(ctx, 0, ViewItemRequest{ItemID: item})
				if err != nil || after.NbOfBids != res.NbOfBids+1 || after.MaxBid != max(res.MaxBid, 9000) || after.Bids != n+1 {
					t.Errorf("ViewItem after the bid: %d bids (%d counted), max %v; %v", after.NbOfBids, after.Bids, after.MaxBid, err)
				}
				if got := b.q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item); got != after.NbOfBids {
					t.Errorf("nb_of_bids %d in the database, %d in the cache", got, after.NbOfBids)
				}
			})
		}
	})
}

// TestContainerSettings: the combinations that would lose updates are
// refused for the types RUBiS writes, and optimistic concurrency needs a
// version column RUBiS's tables do not have.
func TestContainerSettings(t *testing.T) {
	for _, tt := range []struct {
		run     container.Settings
		refused []string
	}{
		{runSettings(container.CMP, container.OptionA, container.Database, "100%"), []string{"Users", "Items"}},
		{runSettings(container.BMP, container.OptionD, container.Database, "100%"), []string{"Users", "Items"}},
		{runSettings(container.CMP, container.OptionA, container.Exclusive, "100%"), nil},
		{runSettings(container.CMP, container.OptionB, container.Database, "100%"), nil},
		{runSettings(container.CMP, container.OptionC, container.Optimistic, "0"), []string{"Users", "Items"}},
		{runSettings(container.CMP, container.OptionC, container.ReadOnly, "0"), []string{"Users", "Items"}},
	} {
		var refused []string
		for _, ty := range entityTypes {
			if _, err := container.Resolve(tt.run, ty, nil); err != nil {
				refused = append(refused, ty.Name)
			}
		}
		if strings.Join(refused, ",") != strings.Join(tt.refused, ",") {
			t.Errorf("%s %s %s: refused %v, want %v", tt.run.Persistence, tt.run.CommitOption, tt.run.Concurrency, refused, tt.refused)
		}
	}
	info := Workload{}.Info()
	if info.Persistence[0] != container.Direct || len(info.Entities) != len(entityTypes) {
		t.Errorf("Info: persistence %v, %d entity types", info.Persistence, len(info.Entities))
	}
}

// TestContainerConcurrentWrites races every writing interaction, and
// readers of what they write, from every server thread through the
// container; then the checks of check.go must pass with the counts of the
// successful interactions, and under exclusive concurrency, where the
// container alone arbitrates, its counters must match those counts.
func TestContainerConcurrentWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		for i, v := range []struct {
			name      string
			run       container.Settings
			exclusive bool
			// entity: the entity style over this protocol, the beans on
			// a business tier, the interactions (and their retries) in
			// the web tier; "": the container's Facade in process.
			entity remote.Protocol
		}{
			{"cmp-C-database", runSettings(container.CMP, container.OptionC, container.Database, "0"), false, ""},
			{"bmp-A-exclusive", runSettings(container.BMP, container.OptionA, container.Exclusive, "100%"), true, ""},
			{"entity-grpc-cmp-C-database", runSettings(container.CMP, container.OptionC, container.Database, "0"), false, remote.GRPC},
			{"entity-http-bmp-A-exclusive", runSettings(container.BMP, container.OptionA, container.Exclusive, "100%"), true, remote.HTTP},
		} {
			t.Run(v.name, func(t *testing.T) {
				storetest.ShareCell(t, dsn, i)
				ctx := context.Background()
				d := dsn
				if i > 0 {
					d = freshDSN(t, store.MustParseDSN(dsn).Dialect)
				}
				b := setupBeans(t, d, v.run, false, popBase)
				hot := b.pop.FirstActiveItem() + 7
				const stock = 25
				b.q.Exec("UPDATE items SET quantity = ? WHERE id = ?", stock, hot)
				c, err := newChecker(ctx, b.db)
				if err != nil {
					t.Fatal(err)
				}
				var a Auction = b.b
				if v.entity != "" {
					bt, err := startBusinessTier("entity", b.b, testThreads, v.entity, container.Generated, nil, false)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { bt.close() })
					a = NewRemoteEntityFacade(bt.conn)
				}
				before := b.b.ctr.Stats()

				const writers, rounds = testThreads - 2, 8
				var mu sync.Mutex
				succeeded := map[int]int64{}
				bought := int64(0)
				ok := func(op int, err error) bool {
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						succeeded[op]++
						return true
					case IsPageError(err):
					default:
						t.Errorf("%s: %v", Interactions[op], err)
					}
					return false
				}
				var wg sync.WaitGroup
				for th := range writers {
					wg.Go(func() {
						for k := range rounds {
							price := float64(10_000 + th*100 + k)
							_, err := a.StoreBid(ctx, th, StoreBidRequest{UserID: int64(th + 1), ItemID: hot, MinBid: 1, Bid: price, MaxBid: price, Qty: 1, MaxQty: 1})
							ok(browser.StoreBid, err)
							qty := int64(1 + (th+k)%3)
							_, err = a.StoreBuyNow(ctx, th, StoreBuyNowRequest{UserID: int64(th + 1), ItemID: hot, Qty: qty, MaxQty: 3})
							if ok(browser.StoreBuyNow, err) {
								mu.Lock()
								bought += qty
								mu.Unlock()
							}
							_, err = a.StoreComment(ctx, th, StoreCommentRequest{From: int64(th + 1), To: 17, ItemID: hot, Rating: int64(k%3 - 1), Comment: "c"})
							ok(browser.StoreComment, err)
							_, err = a.RegisterUser(ctx, th, RegisterUserRequest{Nickname: fmt.Sprintf("racer%d-%d", th, k), Password: "p", Email: "e", Region: regionNames[th]})
							ok(browser.RegisterUser, err)
							_, err = a.RegisterItem(ctx, th, RegisterItemRequest{UserID: int64(th + 1), CategoryID: 2, Name: "x", InitialPrice: 1, Duration: 2, Quantity: 1})
							ok(browser.RegisterItem, err)
						}
					})
				}
				for th := writers; th < testThreads; th++ {
					wg.Go(func() {
						for range rounds * 3 {
							_, err := a.ViewItem(ctx, th, ViewItemRequest{ItemID: hot})
							ok(browser.ViewItem, err)
							_, err = a.ViewUserInfo(ctx, th, ViewUserInfoRequest{UserID: 17})
							ok(browser.ViewUserInfo, err)
						}
					})
				}
				wg.Wait()
				if t.Failed() {
					return
				}
				o := outcomes(succeeded, nil)
				checks, err := c.Check(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range checks {
					if !ch.Passed {
						t.Errorf("check %s failed: %s", ch.Name, ch.Detail)
					}
				}
				if left := b.q.Int("SELECT quantity FROM items WHERE id = ?", hot); left != stock-bought || bought == 0 || succeeded[browser.StoreBuyNow] == writers*rounds {
					t.Errorf("bought %d in %d purchases of %d asked, %d left of %d", bought, succeeded[browser.StoreBuyNow], writers*rounds, left, stock)
				}
				after := b.b.ctr.Stats()
				for _, w := range []struct {
					name    string
					creates int64
				}{{"Bids", succeeded[browser.StoreBid]}, {"BuyNow", succeeded[browser.StoreBuyNow]}, {"Comments", succeeded[browser.StoreComment]}, {"Users", succeeded[browser.RegisterUser]}, {"Items", succeeded[browser.RegisterItem]}} {
					if got := after[w.name].Creates - before[w.name].Creates; got < w.creates || (v.exclusive && got != w.creates) {
						t.Errorf("%s: %d created, %d successful", w.name, got, w.creates)
					}
				}
				stores := map[string]int64{"Items": succeeded[browser.StoreBid] + succeeded[browser.StoreBuyNow], "Users": succeeded[browser.StoreComment]}
				for name, want := range stores {
					if got := after[name].Stores - before[name].Stores; got < want || (v.exclusive && got != want) {
						t.Errorf("%s: %d stored, %d successful writes", name, got, want)
					}
				}
				if v.exclusive {
					for name, s := range after {
						if s.Conflicts != before[name].Conflicts || s.LockTimeouts != before[name].LockTimeouts {
							t.Errorf("%s: %d conflicts, %d lock timeouts under exclusive concurrency", name, s.Conflicts, s.LockTimeouts)
						}
					}
				}
			})
		}
	})
}
