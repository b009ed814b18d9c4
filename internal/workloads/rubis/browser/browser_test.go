package browser

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/tables"
)

var (
	testCategories = func() []string {
		var c []string
		for i := range 20 {
			c = append(c, fmt.Sprintf("Cat & %d", i))
		}
		return c
	}()
	testRegions = []string{"AZ--Phoenix", "CA--San Francisco", "NY--New York"}
)

func testConfig(t testing.TB, table, base string) *Config {
	t.Helper()
	tt, err := tables.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{BaseURL: base, Table: tt, Users: 1000, Categories: testCategories, Regions: testRegions,
		Items: 5000, Think: workload.ThinkTime{Scale: 0.001}}.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	return &cfg
}

type bundle struct {
	site *fakeSite
	srv  interface{ Close() }
	cfg  *Config
	b    *Browser
}

func setup(t *testing.T) *bundle {
	t.Helper()
	site := &fakeSite{keep: true, descLen: 200}
	srv := newSite(site)
	t.Cleanup(srv.Close)
	cfg := testConfig(t, tables.Bidding, srv.URL)
	b := New(cfg, 0, rand.New(rand.NewPCG(1, 2)))
	t.Cleanup(b.Close)
	b.user = 4 // user5
	return &bundle{site: site, srv: srv, cfg: cfg, b: b}
}

// received makes html the last page the browser got.
func (b *Browser) received(html string) {
	b.page.parse([]byte(html), true)
	b.hasPage = true
}

func (bu *bundle) do(t *testing.T, state int) (Outcome, *url.URL) {
	t.Helper()
	out, err := bu.b.Do(context.Background(), state)
	if err != nil {
		t.Fatalf("Do(%s): %v", StateName(state), err)
	}
	reqs := bu.site.requests()
	var last string
	for _, r := range slices.Backward(reqs) {
		if !strings.HasSuffix(r, ".jpg") {
			last = r
			break
		}
	}
	u, err := url.ParseRequestURI(last)
	if err != nil {
		t.Fatal(err)
	}
	return out, u
}

const (
	searchPage = `<TR><TD><a href="/PHP/ViewItem.php?itemId=42">item</a><TD><a href="/PHP/PutBidAuth.php?itemId=42"><IMG SRC="/PHP/bid_now.jpg"></a>` +
		`<a href="/PHP/ViewUserInfo.php?userId=31">user31</a> (<a href="/PHP/PutCommentAuth.php?to=31&itemId=42">comment</a>)`
	putBidPage = `<form action="/PHP/StoreBid.php" method=POST><input type=hidden name=minBid value=101>` +
		`<input type=hidden name=userId value=7><input type=hidden name=itemId value=42><input type=hidden name=maxQty value=1>` +
		`<a href="/PHP/ViewBidHistory.php?itemId=42">bid history</a>`
	buyNowPage   = `<input type=hidden name=userId value=7><input type=hidden name=itemId value=42><input type=hidden name=maxQty value=3><a href="/PHP/ViewItem.php?itemId=42">x</a>`
	commentPage  = `<form action="/PHP/StoreComment.php" method=POST><input type=hidden name=to value=31><input type=hidden name=from value=7><input type=hidden name=itemId value=42>`
	twoPagesPage = `<a href="/PHP/SearchItemsByCategory.php?category=3&categoryName=x&page=0&nbOfItems=20">Previous</a>` +
		`<a href="/PHP/SearchItemsByCategory.php?category=3&amp;categoryName=x&amp;page=2&amp;nbOfItems=20">Next</a>`
)

func TestExactURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state int
		page  string
		want  string
	}{
		{Home, searchPage, "/PHP/index.html"},
		{Register, searchPage, "/PHP/register.html"},
		{Browse, "", "/PHP/browse.html"},
		{BrowseCategories, searchPage, "/PHP/BrowseCategories.php"},
		{BrowseRegions, searchPage, "/PHP/BrowseRegions.php"},
		{ViewItem, searchPage, "/PHP/ViewItem.php?itemId=42"},
		{ViewUserInfo, searchPage, "/PHP/ViewUserInfo.php?userId=31"},
		{ViewBidHistory, searchPage, "/PHP/ViewBidHistory.php?itemId=42"},
		{BuyNowAuth, searchPage, "/PHP/BuyNowAuth.php?itemId=42"},
		{BuyNow, searchPage, "/PHP/BuyNow.php?itemId=42&nickname=user5&password=password5"},
		{PutBidAuth, searchPage, "/PHP/PutBidAuth.php?itemId=42"},
		{PutBid, searchPage, "/PHP/PutBid.php?itemId=42&nickname=user5&password=password5"},
		{PutCommentAuth, searchPage, "/PHP/PutCommentAuth.php?itemId=42&to=31"},
		{PutComment, searchPage, "/PHP/PutComment.php?itemId=42&to=31&nickname=user5&password=password5"},
		{Sell, searchPage, "/PHP/sell.html"},
		{SelectCategoryToSellItem, searchPage, "/PHP/BrowseCategories.php?nickname=user5&password=password5"},
		{AboutMeAuth, searchPage, "/PHP/about_me.html"},
		{AboutMe, searchPage, "/PHP/AboutMe.php?nickname=user5&password=password5"},
	}
	for _, tc := range tests {
		t.Run(StateName(tc.state), func(t *testing.T) {
			t.Parallel()
			bu := setup(t)
			if tc.page != "" {
				bu.b.received(tc.page)
			}
			out, u := bu.do(t, tc.state)
			if got := u.RequestURI(); got != tc.want || out.State != tc.state {
				t.Fatalf("%s: requested %s (state %d), want %s", StateName(tc.state), got, out.State, tc.want)
			}
		})
	}
}

// params checks a query's names in order and returns its values.
func params(t *testing.T, u *url.URL, path string, names ...string) url.Values {
	t.Helper()
	if u.Path != path {
		t.Fatalf("path %s, want %s", u.Path, path)
	}
	var got []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, _, _ := strings.Cut(kv, "=")
		got = append(got, k)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("%s: parameters %v, want %v", path, got, names)
	}
	return u.Query()
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

func TestDrawnParameters(t *testing.T) {
	t.Parallel()
	for seed := range uint64(50) { // many draws: the ranges must hold for every one
		bu := setup(t)
		b := bu.b
		b.rng = rand.New(rand.NewPCG(seed, 0))
		t.Logf("seed %d", seed) // shown with a failure, to reproduce it

		b.received(putBidPage)
		_, u := bu.do(t, StoreBid)
		q := params(t, u, "/PHP/StoreBid.php", "itemId", "userId", "minBid", "maxQty", "bid", "maxBid", "qty")
		if q.Get("itemId") != "42" || q.Get("userId") != "4" || q.Get("minBid") != "101.0" || q.Get("maxQty") != "1" || q.Get("qty") != "1" {
			t.Fatalf("StoreBid %s", u)
		}
		bid, _ := strconv.ParseFloat(q.Get("bid"), 64)
		maxBid, _ := strconv.ParseFloat(q.Get("maxBid"), 64)
		if add := bid - 101; add < 1 || add > 10 || add != math.Trunc(add) || maxBid != 101+2*add || !strings.HasSuffix(q.Get("bid"), ".0") {
			t.Fatalf("StoreBid bid %s max %s", q.Get("bid"), q.Get("maxBid"))
		}

		b.received(buyNowPage)
		_, u = bu.do(t, StoreBuyNow)
		q = params(t, u, "/PHP/StoreBuyNow.php", "itemId", "userId", "qty", "maxQty")
		if qty := atoi(t, q.Get("qty")); q.Get("itemId") != "42" || q.Get("maxQty") != "3" || qty < 1 || qty > 3 {
			t.Fatalf("StoreBuyNow %s", u)
		}

		// The comment form has no itemId= link: the last item id extracted
		// (42, from the buy-now page) is used, as the original does.
		b.received(commentPage)
		_, u = bu.do(t, StoreComment)
		q = params(t, u, "/PHP/StoreComment.php", "itemId", "to", "from", "rating", "comment")
		r := slices.Index(ratings[:], atoi(t, q.Get("rating")))
		if q.Get("itemId") != "42" || q.Get("to") != "31" || q.Get("from") != "4" || r < 0 ||
			q.Get("comment") == "" || !strings.HasPrefix(comments[r], q.Get("comment")) {
			t.Fatalf("StoreComment %s", u)
		}

		b.received(twoPagesPage)
		_, u = bu.do(t, SearchItemsInCategory)
		q = params(t, u, "/PHP/SearchItemsByCategory.php", "category", "categoryName", "page", "nbOfItems")
		c := atoi(t, q.Get("category"))
		if c < 0 || c >= 20 || q.Get("categoryName") != testCategories[c] || (q.Get("page") != "0" && q.Get("page") != "2") || q.Get("nbOfItems") != "20" {
			t.Fatalf("SearchItemsByCategory %s", u)
		}
		if !strings.Contains(u.RawQuery, "categoryName=Cat+%26+"+strconv.Itoa(c)+"&") {
			t.Fatalf("category name not form-encoded as the original's: %s", u.RawQuery)
		}

		b.received(searchPage) // no &page=: page 0
		_, u = bu.do(t, SearchItemsInRegion)
		q = params(t, u, "/PHP/SearchItemsByRegion.php", "region", "category", "categoryName", "page", "nbOfItems")
		reg, c := atoi(t, q.Get("region")), atoi(t, q.Get("category"))
		if reg < 0 || reg >= len(testRegions) || q.Get("categoryName") != testCategories[c] || q.Get("page") != "0" {
			t.Fatalf("SearchItemsByRegion %s", u)
		}

		_, u = bu.do(t, BrowseCategoriesInRegion)
		q = params(t, u, "/PHP/BrowseCategories.php", "region")
		if !slices.Contains(testRegions, q.Get("region")) {
			t.Fatalf("BrowseCategories in region %s", u)
		}

		_, u = bu.do(t, RegisterUser)
		q = params(t, u, "/PHP/RegisterUser.php", "firstname", "lastname", "nickname", "email", "password", "region")
		i := atoi(t, strings.TrimPrefix(q.Get("nickname"), "user"))
		n := strconv.Itoa(i)
		if i < 1001 || i > 1001000 || q.Get("firstname") != "Great"+n || q.Get("lastname") != "User"+n ||
			q.Get("email") != "Great"+n+".User"+n+"@rubis.com" || q.Get("password") != "password"+n ||
			q.Get("region") != testRegions[i%len(testRegions)] || !strings.Contains(u.RawQuery, "%40rubis.com") {
			t.Fatalf("RegisterUser %s", u)
		}

		_, u = bu.do(t, SellItemForm)
		q = params(t, u, "/PHP/SellItemForm.php", "user", "category")
		if c := atoi(t, q.Get("category")); q.Get("user") != "4" || c < 0 || c >= 20 {
			t.Fatalf("SellItemForm %s", u)
		}

		_, u = bu.do(t, RegisterItem)
		q = params(t, u, "/PHP/RegisterItem.php", "name", "description", "initialPrice", "reservePrice", "buyNow", "duration", "quantity", "userId", "categoryId")
		f := func(k string) float64 { v, _ := strconv.ParseFloat(q.Get(k), 64); return v }
		initial, reserve, buyNow := f("initialPrice"), f("reservePrice"), f("buyNow")
		item := atoi(t, strings.TrimPrefix(q.Get("name"), "RUBiS automatically generated item #"))
		if item < 5001 || item > 1005000 || !strings.HasPrefix(description, q.Get("description")) ||
			initial < 1 || initial > 5000 || (reserve != 0 && (reserve < initial || reserve > initial+999)) ||
			(buyNow != 0 && (buyNow < initial+reserve || buyNow > initial+reserve+999)) ||
			f("duration") < 1 || f("duration") > 7 || f("quantity") < 1 || f("quantity") > 10 ||
			q.Get("userId") != "4" || f("categoryId") < 0 || f("categoryId") > 19 {
			t.Fatalf("RegisterItem %s", u)
		}
	}
}

func TestOneBasedAndUnique(t *testing.T) {
	t.Parallel()
	bu := setup(t)
	cfg := *bu.cfg
	cfg.OneBasedIDs, cfg.UniqueNicknames = true, true
	b := New(&cfg, 3, rand.New(rand.NewPCG(5, 5)))
	defer b.Close()
	bu.b = b
	b.user = 4
	seen := map[string]bool{}
	for range 30 {
		_, u := bu.do(t, SellItemForm)
		if c := atoi(t, u.Query().Get("category")); u.Query().Get("user") != "5" || c < 1 || c > 20 {
			t.Fatalf("one-based SellItemForm %s", u)
		}
		_, u = bu.do(t, RegisterUser)
		nick := u.Query().Get("nickname")
		if seen[nick] {
			t.Fatalf("nickname %s made twice", nick)
		}
		seen[nick] = true
	}
	if !seen["user"+strconv.Itoa(1001+3<<20)] {
		t.Fatalf("unique nicknames %v", seen)
	}
}

// TestIDsFromReceivedPage: the ids a browser sends are those of the page
// the site sent it last.
func TestIDsFromReceivedPage(t *testing.T) {
	t.Parallel()
	bu := setup(t)
	out, u := bu.do(t, SearchItemsInCategory)
	cat, page := atoi(t, u.Query().Get("category")), atoi(t, u.Query().Get("page"))
	if out.Images != 21 {
		t.Fatalf("%d images, want the logo and 20 bid-now buttons", out.Images)
	}
	for range 20 {
		_, u = bu.do(t, ViewItem)
		id := atoi(t, u.Query().Get("itemId"))
		if first := 1 + cat*100000 + page*20; id < first || id >= first+20 {
			t.Fatalf("item %d is not on page %d of category %d", id, page, cat)
		}
		_, u = bu.do(t, ViewUserInfo)
		if user := atoi(t, u.Query().Get("userId")); user != 1+id%1000 {
			t.Fatalf("seller %d, page had %d", user, 1+id%1000)
		}
		_, u = bu.do(t, PutBid) // from the user page: no itemId=, the last one
		if got := atoi(t, u.Query().Get("itemId")); got != id {
			t.Fatalf("PutBid item %d, want the last extracted %d", got, id)
		}
		_, u = bu.do(t, StoreBid)
		q := u.Query()
		if atoi(t, q.Get("itemId")) != id || q.Get("minBid") != strconv.Itoa(101+id%50)+".0" || q.Get("maxQty") != strconv.Itoa(1+id%3) {
			t.Fatalf("StoreBid %s after item %d", u, id)
		}
		bu.do(t, SearchItemsInCategory)
		_, u = bu.do(t, SearchItemsInCategory) // the page from the links
		cat, page = atoi(t, u.Query().Get("category")), atoi(t, u.Query().Get("page"))
	}
}

func TestErrorsAndBack(t *testing.T) {
	t.Parallel()
	t.Run("error page", func(t *testing.T) {
		t.Parallel()
		bu := setup(t)
		bu.site.override = func(r *http.Request) (string, bool) {
			return "<html><title>RUBiS ERROR: PutBid</title><h2>We cannot process your request due to the following error: </h2><br>You don't have an account on RUBiS!</html>",
				r.URL.Path == "/PHP/PutBid.php"
		}
		b := bu.b
		b.Next() // Home
		b.received(searchPage)
		out, err := b.Do(context.Background(), PutBid)
		if err != nil || !out.ErrorPage || out.Status != 200 {
			t.Fatalf("Do = %+v, %v; want an error page", out, err)
		}
		if m := b.Next(); m.State != Home || m.NewSession || m.Think != 0 {
			t.Fatalf("after an error page %+v, want Home at once", m)
		}
	})
	t.Run("HTTP error", func(t *testing.T) {
		t.Parallel()
		bu := setup(t)
		b := bu.b
		b.Next()
		out, err := b.Do(context.Background(), 99)
		if err == nil {
			t.Fatalf("state 99: %+v, no error", out)
		}
		b.received(searchPage)
		b.site = strings.TrimSuffix(b.site, "/PHP") + "/nowhere"
		out, err = b.Do(context.Background(), ViewItem)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != 404 || out.Status != 404 {
			t.Fatalf("Do = %+v, %v; want HTTP 404", out, err)
		}
		if m := b.Next(); m.State != Home || m.Think != 0 {
			t.Fatalf("after an HTTP error %+v, want Home at once", m)
		}
	})
	t.Run("no server", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cfg := testConfig(t, tables.Bidding, "http://"+addr)
		b := New(cfg, 0, rand.New(rand.NewPCG(1, 1)))
		b.Next()
		if _, err := b.Do(context.Background(), Home); err == nil {
			t.Fatal("no error from a closed port")
		}
	})
	t.Run("sorry goes back", func(t *testing.T) {
		t.Parallel()
		bu := setup(t)
		b := bu.b
		// Walk until the history holds something.
		for len(b.Walk().History()) == 0 {
			b.Next()
		}
		top := b.Walk().History()[len(b.Walk().History())-1]
		depth := len(b.Walk().History())
		b.received(searchPage + "<h2>Sorry, but there are no items available in this category !</h2>")
		out, _ := bu.do(t, ViewItem)
		if out.State != top || len(b.Walk().History()) != depth-1 || b.Walk().State() != top {
			t.Fatalf("after Sorry: requested %s, history %v; want %s", StateName(out.State), b.Walk().History(), StateName(top))
		}
	})
	t.Run("sorry with no history goes Home", func(t *testing.T) {
		t.Parallel()
		bu := setup(t)
		bu.b.received("<h2>Sorry, but this item does not exist.</h2>")
		out, u := bu.do(t, StoreBid)
		if out.State != Home || u.Path != "/PHP/index.html" {
			t.Fatalf("requested %s (%s), want Home", u, StateName(out.State))
		}
	})
	t.Run("no item id goes back", func(t *testing.T) {
		t.Parallel()
		bu := setup(t)
		bu.b.received("<p>nothing here</p>")
		out, u := bu.do(t, ViewItem)
		if out.State != Home || u.Path != "/PHP/index.html" {
			t.Fatalf("requested %s, want Home", u)
		}
	})
}

func TestMalformedPages(t *testing.T) {
	t.Parallel()
	pages := []string{
		"",
		"<a href=\"/PHP/ViewItem.php?itemId=12",
		"<<<>>><a href=>itemId=</a><input name=maxQty value=x><input name=minBid value=1e999>",
		"<a href=\"?itemId=-3&page=&page=zz&to=&userId=99999999999999999999999\">",
		"\x00\xff\xfe<IMG SRC=\"\"><IMG SRC=\"::bad url\"><form><input",
		strings.Repeat("<div>", 10000),
	}
	for i, p := range pages {
		bu := setup(t)
		for s := range NumStates {
			bu.b.received(p)
			if _, err := bu.b.Do(context.Background(), s); err != nil {
				t.Fatalf("page %d, %s: %v", i, StateName(s), err)
			}
		}
	}
}

// TestOneConnection: a browser keeps one persistent connection, images
// included.
func TestOneConnection(t *testing.T) {
	t.Parallel()
	site := &fakeSite{descLen: 100}
	srv := httptest.NewUnstartedServer(site)
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := testConfig(t, tables.Bidding, srv.URL)
	b := New(cfg, 0, rand.New(rand.NewPCG(3, 3)))
	defer b.Close()
	for range 300 {
		m := b.Next()
		if _, err := b.Do(context.Background(), m.State); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestConcurrentBrowsers runs browsers side by side (for -race).
func TestConcurrentBrowsers(t *testing.T) {
	t.Parallel()
	site := &fakeSite{descLen: 500}
	srv := newSite(site)
	defer srv.Close()
	cfg := testConfig(t, tables.Bidding, srv.URL)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for id := range 8 {
		wg.Go(func() {
			b := New(cfg, id, rand.New(rand.NewPCG(uint64(id), 9)))
			defer b.Close()
			for range 100 {
				m := b.Next()
				out, err := b.Do(context.Background(), m.State)
				if err == nil && out.ErrorPage {
					err = fmt.Errorf("error page at %s", StateName(out.State))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestLongRunShares: over a long seeded run through the browser, each
// state's share of the requests matches the table's exact long-run share
// (workload.Transitions.Stationary) within 1 percentage point, for both
// mixes. make test runs 100,000 interactions per mix (the largest
// differences are 0.0015 and 0.0043), make test-all 300,000, which made
// the package's run 55 s instead of 10 (21 s of CPU instead of 7).
func TestLongRunShares(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("sequential and long: run without -race")
	}
	for _, table := range tables.Names() {
		for i, n := range []int{100_000, 300_000} {
			t.Run(fmt.Sprintf("%s/%d", table, n), func(t *testing.T) {
				testsvc.KeepOne(t, i, "300,000 interactions per mix, 45 s")
				t.Parallel()
				site := &fakeSite{descLen: 50}
				cfg := testConfig(t, table, "http://rubis.test")
				cfg.SkipImages = true
				cfg.Transport = handlerTransport{site}
				st, err := cfg.Table.Stationary(cfg.MaxTransitions)
				if err != nil {
					t.Fatal(err)
				}
				b := New(cfg, 0, rand.New(rand.NewPCG(42, 7)))
				count := make([]float64, NumStates)
				for range n {
					m := b.Next()
					out, err := b.Do(context.Background(), m.State)
					if err != nil || out.ErrorPage {
						t.Fatalf("%s: %+v %v", StateName(m.State), out, err)
					}
					if out.State != m.State {
						t.Fatalf("the fake site sent the browser back from %s", StateName(m.State))
					}
					count[out.State]++
				}
				worst := 0.0
				for s := range count {
					got := count[s] / float64(n)
					d := math.Abs(got - st.Shares[s])
					worst = max(worst, d)
					if d > 0.01 && !testing.Short() {
						t.Errorf("%s: %.4f of requests, exact share %.4f", StateName(s), got, st.Shares[s])
					}
				}
				t.Logf("%s: %d interactions, largest difference from the exact shares %.4f", table, n, worst)
			})
		}
	}
}

// TestPageSpellings: what the original's raw search finds, written as the
// PHP site writes it and as a modern site may (quoted form fields,
// "&amp;" in links), reads the same; keys outside tags count, as the
// original's search finds them anywhere.
func TestPageSpellings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, html string
		want       page
	}{
		{"php", `<input type=hidden name=minBid value=12.5><input type=hidden name=maxQty value=3>` +
			`<input type=hidden name=to value=31><a href="/x?itemId=7&page=2">`,
			page{itemIDs: []int{7}, userID: -1, to: -1, pages: [2]int{2}, nPages: 1, maxQty: 3, formTo: 31, minBid: 12.5, hasMinBid: true}},
		{"quoted", `<input type="hidden" name="minBid" value="12.5"><input name='maxQty'  value='3'>` +
			`<input name="to" value="31"><a href="/x?itemId=7&amp;page=2&amp;to=4">`,
			page{itemIDs: []int{7}, userID: -1, to: 4, pages: [2]int{2}, nPages: 1, maxQty: 3, formTo: 31, minBid: 12.5, hasMinBid: true}},
		{"text", `itemId=5 and userId=6<br>itemId=x itemId=8>`,
			page{itemIDs: []int{5, -1, 8}, userID: 6, to: -1, maxQty: -1, formTo: -1}},
		{"not a page parameter", `<a href="/x?homepage=3&nbOfPage=4">`,
			page{userID: -1, to: -1, maxQty: -1, formTo: -1}},
		{"field without value", `<input name=maxQty><input name=maxQty value=2>`,
			page{userID: -1, to: -1, maxQty: 2, formTo: -1}},
		{"images and words", `<IMG SRC="/PHP/a.jpg"><img src="/PHP/b.jpg"><IMG SRC="/PHP/c.jpg">Sorry, ERROR`,
			page{userID: -1, to: -1, maxQty: -1, formTo: -1, images: []string{"/PHP/a.jpg", "/PHP/c.jpg"}, sorry: true, errorPage: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p page
			p.parse([]byte(tc.html), true)
			if p.size != len(tc.html) {
				t.Errorf("size %d, want %d", p.size, len(tc.html))
			}
			p.size = 0
			if !reflect.DeepEqual(p, tc.want) {
				t.Errorf("parsed %+v\nwant   %+v", p, tc.want)
			}
		})
	}
}

// TestDoSendsWhatPrepareResolved: a driver records the state Prepare
// returns and asks Do for it; asking for another is refused, not sent as
// the prepared request under the other's name.
func TestDoSendsWhatPrepareResolved(t *testing.T) {
	t.Parallel()
	bu := setup(t)
	bu.b.received(searchPage)
	if got := bu.b.Prepare(ViewItem); got != ViewItem {
		t.Fatalf("Prepare(ViewItem) = %s, want ViewItem (the page has items)", StateName(got))
	}
	if _, err := bu.b.Do(context.Background(), Home); err == nil || !strings.Contains(err.Error(), "after Prepare resolved ViewItem") {
		t.Errorf("Do(Home) after Prepare(ViewItem): %v, want a refusal", err)
	}
	if n := len(bu.site.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
	bu.b.Prepare(ViewItem)
	if out, u := bu.do(t, ViewItem); out.State != ViewItem || u.Path != "/PHP/ViewItem.php" {
		t.Errorf("Do(ViewItem) after Prepare: %+v %s", out, u)
	}
}

// TestCookies: a browser returns the cookies its site set in the session
// (the RUBiS site's commit position over replicas), the latest value of
// each, and starts each session without them.
func TestCookies(t *testing.T) {
	t.Parallel()
	site := &fakeSite{descLen: 100}
	type exchange struct{ sent, set string }
	var mu sync.Mutex
	var log []exchange // each page request's Cookie, and the value it set
	writes := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".jpg") {
			e := exchange{sent: r.Header.Get("Cookie")}
			switch path.Base(r.URL.Path) {
			case "StoreBid.php", "StoreComment.php", "StoreBuyNow.php", "RegisterUser.php", "RegisterItem.php":
				writes++
				e.set = "0/" + strconv.Itoa(writes)
				http.SetCookie(w, &http.Cookie{Name: "tierbench_lsn", Value: e.set, Path: "/", HttpOnly: true})
			}
			mu.Lock()
			log = append(log, e)
			mu.Unlock()
		}
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := testConfig(t, tables.Bidding, srv.URL)
	b := New(cfg, 0, rand.New(rand.NewPCG(5, 8)))
	defer b.Close()
	want, sessions, carried := "", 0, 0
	for i := range 600 {
		m := b.Next()
		if m.NewSession {
			want = ""
			sessions++
		}
		if _, err := b.Do(context.Background(), m.State); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		e := log[len(log)-1]
		mu.Unlock()
		if e.sent != want {
			t.Fatalf("request %d: Cookie %q, want %q", i, e.sent, want)
		}
		if e.sent != "" {
			carried++
		}
		if e.set != "" {
			want = "tierbench_lsn=" + e.set
		}
	}
	if sessions < 2 || carried == 0 || writes < 2 {
		t.Fatalf("%d sessions, %d writes, %d requests carried a cookie: the walk did not test it", sessions, writes, carried)
	}
	t.Logf("%d sessions, %d writes, %d of 600 requests carried the cookie", sessions, writes, carried)
}
