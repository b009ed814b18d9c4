package rubis

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/tierbench/tierbench/internal/store/storetest"
)

type webBundle struct {
	directBundle
	srv *httptest.Server
}

func setupWeb(t *testing.T, dsn string) webBundle {
	t.Helper()
	b := setupDirect(t, dsn)
	srv := httptest.NewServer(NewSite(b.d, SiteOptions{Threads: testThreads}))
	t.Cleanup(srv.Close)
	return webBundle{directBundle: b, srv: srv}
}

// get fetches path with the query or form v (POST when post) and
// returns the status and body.
func (w webBundle) fetch(t *testing.T, post bool, path string, v url.Values) (int, string) {
	t.Helper()
	var resp *http.Response
	var err error
	if post {
		resp, err = http.PostForm(w.srv.URL+path, v)
	} else {
		u := w.srv.URL + path
		if len(v) > 0 {
			u += "?" + v.Encode()
		}
		resp, err = http.Get(u)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func vals(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func TestWebPages(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(backend.name, func(t *testing.T) {
			w := setupWeb(t, backend.dsn(t))
			item := w.pop.FirstActiveItem() + 2
			seller := w.q.Int("SELECT seller FROM items WHERE id = ?", item)
			id := strconv.FormatInt(item, 10)
			sid := strconv.FormatInt(seller, 10)
			for _, c := range []struct {
				path  string
				v     url.Values
				wants []string
			}{
				{"/PHP/index.html", nil, []string{`href="/PHP/register.html"`, `href="/PHP/browse.html"`, `href="/PHP/sell.html"`, `href="/PHP/about_me.html"`}},
				{"/PHP/register.html", nil, []string{`action="/PHP/RegisterUser.php"`, "name=nickname", "name=region"}},
				{"/PHP/browse.html", nil, []string{`href="/PHP/BrowseCategories.php"`, `href="/PHP/BrowseRegions.php"`}},
				{"/PHP/BrowseCategories.php", nil, []string{`href="/PHP/SearchItemsByCategory.php?category=1&categoryName=Antiques%20%26%20Art"`}},
				{"/PHP/BrowseRegions.php", nil, []string{`href="/PHP/BrowseCategories.php?region=1"`}},
				{"/PHP/BrowseCategories.php", vals("region", "2"), []string{`href="/PHP/SearchItemsByRegion.php?category=1&categoryName=Antiques%20%26%20Art&region=2"`}},
				{"/PHP/BrowseCategories.php", vals("region", regionNames[1]), []string{`&region=2"`}},
				{"/PHP/SearchItemsByCategory.php", vals("category", "3", "categoryName", categoryNames[2], "page", "0", "nbOfItems", "10"),
					[]string{`href="/PHP/ViewItem.php?itemId=`, `href="/PHP/PutBidAuth.php?itemId=`, "Next page",
						`href="/PHP/SearchItemsByCategory.php?category=3&categoryName=Business%2c%20Office%20%26%20Industrial&nbOfItems=10&page=1"`}},
				{"/PHP/SearchItemsByRegion.php", vals("category", "3", "categoryName", categoryNames[2], "region", "3"), []string{"Items in category"}},
				{"/PHP/ViewItem.php", vals("itemId", id), []string{itemName(item), `href="/PHP/ViewBidHistory.php?itemId=` + id + `"`,
					`href="/PHP/ViewUserInfo.php?userId=` + sid + `"`, `href="/PHP/PutCommentAuth.php?to=` + sid + `&itemId=` + id + `"`, `href="/PHP/PutBidAuth.php?itemId=` + id + `"`}},
				{"/PHP/ViewItem.php", vals("itemId", "1"), []string{itemName(1)}},
				{"/PHP/ViewUserInfo.php", vals("userId", sid), []string{"Information about " + nickname(seller), `href="/PHP/ViewUserInfo.php?userId=`}},
				{"/PHP/ViewBidHistory.php", vals("itemId", id), []string{itemName(item)}},
				{"/PHP/BuyNowAuth.php", vals("itemId", id), []string{`action="/PHP/BuyNow.php"`, `name="itemId" value="` + id + `"`}},
				{"/PHP/BuyNow.php", vals("itemId", id, "nickname", "user4", "password", "password4"), []string{`action="/PHP/StoreBuyNow.php"`, "name=maxQty value=", "name=userId value=4>", "name=itemId value=" + id + ">"}},
				{"/PHP/PutBidAuth.php", vals("itemId", id), []string{`action="/PHP/PutBid.php"`}},
				{"/PHP/PutBid.php", vals("itemId", id, "nickname", "user4", "password", "password4"), []string{`action="/PHP/StoreBid.php"`, "name=minBid value=", "name=maxQty value="}},
				{"/PHP/PutCommentAuth.php", vals("itemId", id, "to", sid), []string{`action="/PHP/PutComment.php"`, `name="to" value="` + sid + `"`}},
				{"/PHP/PutComment.php", vals("itemId", id, "to", sid, "nickname", "user4", "password", "password4"), []string{`action="/PHP/StoreComment.php"`, "name=to value=" + sid + ">", "name=from value=4>"}},
				{"/PHP/sell.html", nil, []string{`action="/PHP/BrowseCategories.php"`}},
				{"/PHP/BrowseCategories.php", vals("nickname", "user4", "password", "password4"), []string{`href="/PHP/SellItemForm.php?category=1&user=4"`}},
				{"/PHP/SellItemForm.php", vals("category", "2", "user", "4"), []string{`action="/PHP/RegisterItem.php"`, `name="userId" value="4"`, `name="categoryId" value="2"`}},
				{"/PHP/about_me.html", nil, []string{`action="/PHP/AboutMe.php"`}},
				{"/PHP/AboutMe.php", vals("nickname", nickname(seller), "password", password(seller)), []string{"Information about " + nickname(seller), "Items you are selling."}},
			} {
				status, body := w.fetch(t, false, c.path, c.v)
				if status != http.StatusOK || strings.Contains(body, "ERROR") {
					t.Errorf("GET %s?%s: %d\n%s", c.path, c.v.Encode(), status, body)
					continue
				}
				for _, want := range c.wants {
					if !strings.Contains(body, want) {
						t.Errorf("GET %s?%s: no %q in\n%s", c.path, c.v.Encode(), want, body)
					}
				}
			}

			// Errors: unknown ids and wrong passwords are the original's
			// error page (200); missing or malformed parameters 400.
			for _, c := range []struct {
				path   string
				v      url.Values
				status int
			}{
				{"/PHP/ViewItem.php", vals("itemId", "999999"), http.StatusOK},
				{"/PHP/ViewItem.php", nil, http.StatusBadRequest},
				{"/PHP/ViewItem.php", vals("itemId", "abc"), http.StatusBadRequest},
				{"/PHP/ViewUserInfo.php", vals("userId", "-1"), http.StatusOK},
				{"/PHP/PutBid.php", vals("itemId", id, "nickname", "user4", "password", "nope"), http.StatusOK},
				{"/PHP/StoreBid.php", vals("itemId", id, "userId", "4", "minBid", "10", "bid", "5", "maxBid", "20", "qty", "1", "maxQty", "1"), http.StatusOK},
			} {
				status, body := w.fetch(t, false, c.path, c.v)
				if status != c.status || !strings.Contains(body, "ERROR") {
					t.Errorf("GET %s?%s: %d, want %d and the error page:\n%s", c.path, c.v.Encode(), status, c.status, body)
				}
			}

			// Forms post and the database changes.
			nb := w.q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item)
			if status, body := w.fetch(t, true, "/PHP/StoreBid.php", vals("itemId", id, "userId", "4", "minBid", "1", "bid", "90000", "maxBid", "95000", "qty", "1", "maxQty", "1")); status != 200 || !strings.Contains(body, "successfully") {
				t.Errorf("POST StoreBid: %d\n%s", status, body)
			}
			if got := w.q.Int("SELECT nb_of_bids FROM items WHERE id = ?", item); got != nb+1 || w.q.Float("SELECT max_bid FROM items WHERE id = ?", item) != 95000 {
				t.Errorf("after the posted bid: nb_of_bids %d (was %d)", got, nb)
			}
			status, body := w.fetch(t, true, "/PHP/RegisterUser.php", vals("firstname", "Grace", "lastname", "Hopper", "nickname", "grace", "password", "cobol", "email", "g@h", "region", regionNames[0]))
			if status != 200 || !strings.Contains(body, "Welcome grace") || w.q.Int("SELECT COUNT(*) FROM users WHERE nickname = 'grace'") != 1 {
				t.Errorf("POST RegisterUser: %d\n%s", status, body)
			}
			status, body = w.fetch(t, true, "/PHP/RegisterItem.php", vals("userId", "4", "categoryId", "2", "name", "<b>tea</b>", "description", "pot", "initialPrice", "5", "reservePrice", "0", "buyNow", "0", "duration", "2", "quantity", "1"))
			if status != 200 || !strings.Contains(body, "&lt;b&gt;tea&lt;/b&gt;") || w.q.Int("SELECT COUNT(*) FROM items WHERE name = '<b>tea</b>'") != 1 {
				t.Errorf("POST RegisterItem: %d (the name must be stored as is and shown escaped)\n%s", status, body)
			}
			before := w.q.Int("SELECT rating FROM users WHERE id = ?", seller)
			if status, _ := w.fetch(t, true, "/PHP/StoreComment.php", vals("to", sid, "from", "4", "itemId", id, "rating", "5", "comment", "fine")); status != 200 ||
				w.q.Int("SELECT rating FROM users WHERE id = ?", seller) != before+5 {
				t.Errorf("POST StoreComment: %d", status)
			}
			w.q.Exec("UPDATE items SET quantity = 2 WHERE id = ?", item)
			if status, _ := w.fetch(t, true, "/PHP/StoreBuyNow.php", vals("userId", "4", "itemId", id, "qty", "2", "maxQty", "2")); status != 200 ||
				w.q.Int("SELECT quantity FROM items WHERE id = ?", item) != 0 {
				t.Errorf("POST StoreBuyNow: %d", status)
			}
		})
	}
}

// injections are the classic SQL injection strings.
var injections = []string{
	"' OR '1'='1", "' OR 1=1 --", "\" OR \"\"=\"", "'; DROP TABLE users; --", "1; DROP TABLE items",
	"1 UNION SELECT id, password FROM users", "1 OR 1=1", "-1 UNION ALL SELECT NULL--", "1'; UPDATE items SET quantity=0; --",
	"admin'--", "%27%20OR%201%3D1", "\x00", "1e400", "NaN", "99999999999999999999",
}

// TestWebInjection sends each injection string in each parameter of each
// page, the other parameters being ones that write nothing: no request
// may change the database, fail the server, or find a user by it.
func TestWebInjection(t *testing.T) {
	t.Parallel()
	w := setupWeb(t, storetest.SQLite(t))
	sum := func() string {
		var b strings.Builder
		for _, table := range []string{"users", "items", "old_items", "bids", "comments", "buy_now", "categories", "regions", "ids"} {
			fmt.Fprintf(&b, "%s=%d ", table, w.q.Int("SELECT COUNT(*) FROM "+table))
		}
		fmt.Fprintf(&b, "bids=%d qty=%d rating=%d", w.q.Int("SELECT SUM(nb_of_bids) FROM items"), w.q.Int("SELECT SUM(quantity) FROM items"),
			w.q.Int("SELECT SUM(rating) FROM users"))
		return b.String()
	}
	want := sum()
	// Base parameters per page; the writes' fail as business outcomes
	// (no such item, user or region) or are refused (duration 0).
	pages := map[string]url.Values{
		"/PHP/RegisterUser.php":          vals("firstname", "a", "lastname", "b", "nickname", "n", "password", "p", "email", "e", "region", "Atlantis"),
		"/PHP/BrowseCategories.php":      vals("region", "1", "nickname", "user1", "password", "password1"),
		"/PHP/SearchItemsByCategory.php": vals("category", "1", "categoryName", "x", "page", "0", "nbOfItems", "20"),
		"/PHP/SearchItemsByRegion.php":   vals("category", "1", "categoryName", "x", "region", "1", "page", "0", "nbOfItems", "20"),
		"/PHP/BrowseRegions.php":         vals(),
		"/PHP/ViewItem.php":              vals("itemId", "1"),
		"/PHP/ViewUserInfo.php":          vals("userId", "1"),
		"/PHP/ViewBidHistory.php":        vals("itemId", "1"),
		"/PHP/BuyNowAuth.php":            vals("itemId", "1"),
		"/PHP/BuyNow.php":                vals("itemId", "1", "nickname", "user1", "password", "password1"),
		"/PHP/StoreBuyNow.php":           vals("itemId", "-1", "userId", "1", "qty", "1", "maxQty", "1"),
		"/PHP/PutBidAuth.php":            vals("itemId", "1"),
		"/PHP/PutBid.php":                vals("itemId", "1", "nickname", "user1", "password", "password1"),
		"/PHP/StoreBid.php":              vals("itemId", "-1", "userId", "1", "minBid", "1", "bid", "2", "maxBid", "3", "qty", "1", "maxQty", "1"),
		"/PHP/PutCommentAuth.php":        vals("itemId", "1", "to", "1"),
		"/PHP/PutComment.php":            vals("itemId", "1", "to", "1", "nickname", "user1", "password", "password1"),
		"/PHP/StoreComment.php":          vals("itemId", "1", "to", "-1", "from", "1", "rating", "3", "comment", "c"),
		"/PHP/SellItemForm.php":          vals("category", "1", "user", "1"),
		"/PHP/RegisterItem.php":          vals("userId", "1", "categoryId", "1", "name", "n", "description", "d", "initialPrice", "1", "reservePrice", "0", "buyNow", "0", "duration", "0", "quantity", "1"),
		"/PHP/AboutMe.php":               vals("nickname", "user1", "password", "password1"),
	}
	requests := 0
	for path, base := range pages {
		for param := range base {
			for _, inj := range injections {
				v := url.Values{}
				for k, vs := range base {
					v[k] = vs
				}
				v.Set(param, inj)
				for _, post := range []bool{false, true} {
					status, body := w.fetch(t, post, path, v)
					requests++
					if status >= 500 {
						t.Errorf("%s %s=%q: %d\n%s", path, param, inj, status, body)
					}
					if (param == "nickname" || param == "password") && !strings.Contains(body, "ERROR") && path != "/PHP/BrowseCategories.php" {
						t.Errorf("%s %s=%q logged in", path, param, inj)
					}
				}
			}
		}
	}
	if got := sum(); got != want {
		t.Errorf("after %d injected requests the database changed:\n got %s\nwant %s", requests, got, want)
	}
	// Stored as text, the strings come back verbatim.
	for _, inj := range injections[:10] {
		status, _ := w.fetch(t, true, "/PHP/StoreComment.php", vals("itemId", "1", "to", "2", "from", "3", "rating", "0", "comment", inj))
		var got string
		if err := w.q.Row("SELECT comment FROM comments WHERE to_user_id = 2 ORDER BY id DESC LIMIT 1").Scan(&got); status != 200 || err != nil || got != inj {
			t.Errorf("comment %q: %d, stored %q (%v)", inj, status, got, err)
		}
	}
}

// TestWebAdmission: no more requests than threads are ever in the
// business tier at once.
// TestWebAdmission: with every server thread busy, more requests wait
// for one outside the business tier. In a synctest bubble, Wait returns
// only when every request is blocked for good: held in the tier, or
// waiting for a thread, so the count in the tier is exact.
func TestWebAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threads, requests = 2, 5
		gate := &gatedAuction{entered: make(chan int, 16), release: make(chan struct{})}
		site := NewSite(gate, SiteOptions{Threads: threads})
		done := make(chan int, requests)
		for range requests {
			go func() {
				rec := httptest.NewRecorder()
				site.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/PHP/BrowseRegions.php", nil))
				done <- rec.Code
			}()
		}
		synctest.Wait()
		if n := len(gate.entered); n != threads {
			t.Fatalf("%d requests in the business tier at once, want %d (its server threads)", n, threads)
		}
		seen := map[int]bool{<-gate.entered: true, <-gate.entered: true}
		if !seen[0] || !seen[1] {
			t.Errorf("threads in use %v, want 0 and 1", seen)
		}
		close(gate.release)
		for range requests {
			if s := <-done; s != http.StatusOK {
				t.Errorf("status %d", s)
			}
		}
		if n := len(gate.entered); n != requests-threads {
			t.Errorf("%d more requests entered after the release, want %d", n, requests-threads)
		}
	})
}

// gatedAuction holds BrowseRegions until released, reporting the thread
// each call runs on; panics in ViewItem.
type gatedAuction struct {
	Auction
	entered chan int
	release chan struct{}
}

func (g *gatedAuction) BrowseRegions(ctx context.Context, thread int, _ BrowseRegionsRequest) (BrowseRegionsResult, error) {
	g.entered <- thread
	<-g.release
	return BrowseRegionsResult{Regions: []Region{{1, "r"}}}, nil
}

func (g *gatedAuction) ViewItem(context.Context, int, ViewItemRequest) (ViewItemResult, error) {
	panic("boom")
}

func TestWebPanicIsTheErrorPage(t *testing.T) {
	srv := httptest.NewServer(NewSite(&gatedAuction{}, SiteOptions{Threads: 1}))
	defer srv.Close()
	for range 2 { // the thread is given back despite the panic
		resp, err := http.Get(srv.URL + "/PHP/ViewItem.php?itemId=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || !strings.Contains(string(body), "ERROR") || strings.Contains(string(body), "goroutine") {
			t.Errorf("panic: %d\n%s", resp.StatusCode, body)
		}
	}
}

// BrowseCategories with a region the site does not know lists the
// categories, as the PHP does (it never looks the region up), where the
// site answered its error page, which the original client counts as a
// failed interaction. The links carry the region as given.
func TestBrowseCategoriesInAnUnknownRegion(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		w := setupWeb(t, dsn)
		for _, region := range []string{"Atlantis", "FL--Tampa", "0"} { // FL--Tampa: a name the site had, not the kit
			status, body := w.fetch(t, false, "/PHP/BrowseCategories.php", vals("region", region))
			if status != http.StatusOK || strings.Contains(body, "ERROR") || strings.Contains(body, "Sorry") {
				t.Errorf("region %q: %d\n%s", region, status, body)
				continue
			}
			if n := strings.Count(body, `href="/PHP/SearchItemsByRegion.php?`); n != numCategories {
				t.Errorf("region %q: %d links to search in the region, want %d", region, n, numCategories)
			}
			want := `href="/PHP/SearchItemsByRegion.php?category=11&categoryName=Jewelry%2c%20Gems%20%26%20Watches&region=` +
				url.QueryEscape(region) + `"`
			if !strings.Contains(body, want) {
				t.Errorf("region %q: no %s in\n%s", region, want, body)
			}
		}
		// A known region, by name (the kit's, its trailing blank kept) or
		// id, still links by id.
		for _, region := range []string{"MA--Boston ", "24"} {
			if _, body := w.fetch(t, false, "/PHP/BrowseCategories.php", vals("region", region)); !strings.Contains(body, `&region=24"`) {
				t.Errorf("region %q: no links to region 24 in\n%s", region, body)
			}
		}
	})
}

// Every region of the kit's file, as the original client sends it
// (RegisterUser's region, BrowseCategories' region), is one the site
// knows: 15 of them were error pages when the names were made up.
func TestEveryKitRegionIsKnown(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		w := setupWeb(t, dsn)
		for i, region := range readLines(ebayRegions) {
			id := strconv.Itoa(i + 1)
			nick := "kit" + id
			status, body := w.fetch(t, false, "/PHP/RegisterUser.php", vals("firstname", "K", "lastname", "It", "nickname", nick,
				"password", "p", "email", nick+"@rubis.com", "region", region))
			if status != http.StatusOK || strings.Contains(body, "ERROR") {
				t.Errorf("RegisterUser in region %q: %d\n%s", region, status, body)
				continue
			}
			if got := w.q.Int("SELECT region FROM users WHERE nickname = ?", nick); got != int64(i+1) {
				t.Errorf("%s registered in region %d, want %d (%q)", nick, got, i+1, region)
			}
			if _, body := w.fetch(t, false, "/PHP/BrowseCategories.php", vals("region", region)); !strings.Contains(body, "&region="+id+`"`) {
				t.Errorf("BrowseCategories in region %q: no links to region %s", region, id)
			}
		}
	})
}
