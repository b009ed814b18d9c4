package rubis

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A real browser on the site: headless Chromium, driven over the DevTools
// protocol, follows the pages' links and submits their forms as a person
// would, and the database shows what it did. What the HTTP tests cannot
// see is seen here: that a browser resolves the links, encodes the forms
// in the page's charset and posts them where they say.

const (
	// browserTimeout bounds the whole walk, the browser's start included.
	browserTimeout = 60 * time.Second
	// stepTimeout bounds one step of it, so a hung step names itself.
	stepTimeout = 15 * time.Second
)

// tab is a browser tab on the site; it records every HTTP response the
// browser receives.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu        sync.Mutex
	responses []*network.Response
}

// newTab starts Chromium (testsvc.Chromium) and opens a tab; the browser
// is killed and its profile removed when the test ends.
func newTab(t *testing.T) *tab {
	t.Helper()
	tabCtx := testsvc.Chromium(t, browserTimeout)
	tb := &tab{t: t, ctx: tabCtx}
	// Listen starts the browser in the tab's own context, which lives
	// until the test ends; a step's shorter context must not own it.
	if err := chromedp.Listen(tabCtx, tb.record); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tb
}

// record keeps a response; it runs on the tab's event loop, so it only
// appends.
func (tb *tab) record(ev any) {
	var r *network.Response
	switch ev := ev.(type) {
	case *network.EventResponseReceived:
		r = ev.Response
	case *network.EventRequestWillBeSent:
		r = ev.RedirectResponse // nil unless a redirect was followed
	}
	if r != nil {
		tb.mu.Lock()
		tb.responses = append(tb.responses, r)
		tb.mu.Unlock()
	}
}

// open runs actions that lead to a new page, waits until it has loaded,
// and checks it: 200, HTML in UTF-8 as the header says and the browser
// decoded it, not the error page. It returns the page's title.
func (tb *tab) open(what string, actions ...chromedp.Action[chromedp.Void]) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
	if resp == nil {
		tb.t.Fatalf("%s: no page was loaded", what)
	}
	if resp.Status != 200 || resp.MimeType != "text/html" || !strings.Contains(strings.ToLower(header(resp, "Content-Type")), "charset=utf-8") {
		tb.t.Fatalf("%s: %s answered %d, %s, Content-Type %q; want 200 and HTML in UTF-8", what, resp.URL, resp.Status, resp.MimeType, header(resp, "Content-Type"))
	}
	doc := value(tb, what, chromedp.Evaluate[struct{ Charset, ContentType, Title string }](
		`({Charset: document.characterSet, ContentType: document.contentType, Title: document.title})`))
	if doc.Charset != "UTF-8" || doc.ContentType != "text/html" || strings.HasPrefix(doc.Title, "RUBiS ERROR") {
		tb.t.Fatalf("%s: %s is %+v; want an HTML page in UTF-8 that is not the error page", what, resp.URL, doc)
	}
	return doc.Title
}

// do runs actions that stay on the page.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	value(tb, what, chromedp.Steps(actions...))
}

// value runs one action with the step's timeout and returns its value.
func value[T any](tb *tab, what string, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// text waits for the element that sel finds and returns its text.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	tb.do("wait for "+sel, chromedp.WaitVisible(sel))
	return value(tb, "read "+sel, chromedp.Text(sel))
}

// location is the page's URL.
func (tb *tab) location() *url.URL {
	tb.t.Helper()
	loc := value(tb, "location", chromedp.Location())
	u, err := url.Parse(loc)
	if err != nil {
		tb.t.Fatalf("location %q: %v", loc, err)
	}
	return u
}

// checkResponses fails the test for every response of the walk that was
// an HTTP error.
func (tb *tab) checkResponses() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.responses) == 0 {
		tb.t.Error("no response was recorded")
	}
	for _, r := range tb.responses {
		// The browser asks for an icon the site, like the original,
		// does not have; that is no page.
		if u, err := url.Parse(r.URL); err == nil && u.Path == "/favicon.ico" && r.Status == 404 {
			continue
		}
		if r.Status >= 400 {
			tb.t.Errorf("%s answered %d %s", r.URL, r.Status, r.StatusText)
		}
	}
}

func header(r *network.Response, name string) string {
	for k, v := range r.Headers {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// Selectors as a person finds things on the page: by the words on them.

// link is the link that reads text.
func link(text string) string { return xpathBy("a", "normalize-space()", text) }

// button is the submit button that reads text.
func button(text string) string { return xpathBy(`input[@type="submit"]`, "@value", text) }

// field is the text or password input named name.
func field(name string) chromedp.CSS { return chromedp.CSS(`input[name="` + name + `"]`) }

func xpathBy(elem, what, text string) string {
	if strings.Contains(text, `"`) {
		panic("xpathBy: a double quote in " + text)
	}
	return fmt.Sprintf(`//%s[%s="%s"]`, elem, what, text)
}

// TestARealBrowserUsesTheSite: from the home page, through the category
// and the item list, to a bid that the database stores; then a
// registration with non-ASCII text, stored as typed.
func TestARealBrowserUsesTheSite(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser in -short mode")
	}
	w := setupWeb(t, storetest.SQLite(t))
	tb := newTab(t)

	// The category to browse: one with an active item, so its first
	// page lists items.
	var category string
	if err := w.q.Row("SELECT c.name FROM categories c JOIN items i ON i.category = c.id WHERE i.id = ?",
		w.pop.FirstActiveItem()+2).Scan(&category); err != nil {
		t.Fatal(err)
	}

	// The start URL is the one typed; everything after is clicked.
	if title := tb.open("open the site", chromedp.Navigate(w.srv.URL+"/")); title != "RUBiS: Rice University Bidding System" {
		t.Errorf("home page title %q", title)
	}
	if got := tb.location().Path; got != "/PHP/index.html" {
		t.Errorf("/ led to %s, want /PHP/index.html", got)
	}
	if h := tb.text(`//h2[contains(., "home page")]`); h != "Welcome to RUBiS's home page !" {
		t.Errorf("home page heading %q", h)
	}

	tb.open("follow Browse", chromedp.Click(link("Browse")))
	tb.open("follow category", chromedp.Click(link("category")))
	if h := tb.text(`//h2[not(a)]`); h != "Currently available categories" {
		t.Errorf("categories heading %q", h)
	}
	if title := tb.open("click "+category, chromedp.Click(link(category))); title != "RUBiS: Items in category "+category {
		t.Errorf("item list title %q, want the category %q", title, category)
	}

	// The first item of the list, as a person would pick one.
	first := `(//table[@summary="List of items"]//td[1]/a)[1]`
	listed := tb.text(first)
	viewing := tb.open("click the item "+listed, chromedp.Click(first))
	itemID, err := strconv.ParseInt(tb.location().Query().Get("itemId"), 10, 64)
	if err != nil {
		t.Fatalf("item page %s: %v", tb.location(), err)
	}
	var name string
	var quantity, seller, nbBids int64
	var oldMax float64
	if err := w.q.Row("SELECT name, quantity, seller, nb_of_bids, max_bid FROM items WHERE id = ?", itemID).
		Scan(&name, &quantity, &seller, &nbBids, &oldMax); err != nil {
		t.Fatal(err)
	}
	if listed != name || viewing != "RUBiS: Viewing "+name {
		t.Errorf("item %d is %q in the database; the list showed %q and the page is %q", itemID, name, listed, viewing)
	}
	if got := tb.text(`//table[@bgcolor]//b`); got != name {
		t.Errorf("item page heading %q, want %q", got, name)
	}

	// Bid, as a registered user who is not the seller.
	user := int64(4)
	if user == seller {
		user++
	}
	// The link is the bid_now.jpg image, then the words.
	tb.open("follow the bid link", chromedp.Click(link("on this item")))
	tb.do("log in", chromedp.SendKeys(field("nickname"), nickname(user)), chromedp.SendKeys(field("password"), password(user)))
	if title := tb.open("submit the login", chromedp.Click(button("Log In!"))); title != "RUBiS: Bidding" {
		t.Errorf("after the login: %q, want the bidding page", title)
	}
	if got := tb.text(`//table[@bgcolor]//b`); got != "You are ready to bid on: "+name {
		t.Errorf("bidding page heading %q", got)
	}
	// The minimum as the page states it to the person.
	label := tb.text(`//td[starts-with(., "Your bid (minimum bid is ")]`)
	minBid, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(label, "Your bid (minimum bid is "), "):"), 64)
	if err != nil {
		t.Fatalf("minimum bid in %q: %v", label, err)
	}
	bid := math.Floor(minBid) + 7
	maxBid := bid + 5
	tb.do("enter the bid", chromedp.SendKeys(field("bid"), strconv.FormatFloat(bid, 'f', -1, 64)),
		chromedp.SendKeys(field("maxBid"), strconv.FormatFloat(maxBid, 'f', -1, 64)))
	if quantity > 1 {
		tb.do("enter the quantity", chromedp.SendKeys(field("qty"), "1"))
	}
	if title := tb.open("submit the bid", chromedp.Click(button("Bid now!"))); title != "RUBiS: Bidding result" {
		t.Errorf("after the bid: %q", title)
	}
	if got := tb.text(`//h2[not(a)]`); got != "Your bid has been successfully processed." {
		t.Errorf("bid confirmation %q", got)
	}
	if got := w.q.Int("SELECT COUNT(*) FROM bids WHERE user_id = ? AND item_id = ? AND bid = ? AND max_bid = ? AND qty = 1",
		user, itemID, bid, maxBid); got != 1 {
		t.Errorf("bids of user %d on item %d at %v (max %v): %d rows, want 1", user, itemID, bid, maxBid, got)
	}
	var gotBids int64
	var gotMax float64
	if err := w.q.Row("SELECT nb_of_bids, max_bid FROM items WHERE id = ?", itemID).Scan(&gotBids, &gotMax); err != nil {
		t.Fatal(err)
	}
	if gotBids != nbBids+1 || gotMax != math.Max(oldMax, maxBid) {
		t.Errorf("item %d after the bid: nb_of_bids %d, max_bid %v; want %d and %v", itemID, gotBids, gotMax, nbBids+1, math.Max(oldMax, maxBid))
	}

	// Register, with text a browser must encode as UTF-8 to keep.
	newUser := map[string]string{"firstname": "Grâce", "lastname": "Hopper–Murray", "nickname": "grâce",
		"password": "cöbol", "email": "grace@example.com", "region": regionNames[2]}
	tb.open("follow Register", chromedp.Click(link("Register")))
	for _, f := range []string{"firstname", "lastname", "nickname", "password", "email", "region"} {
		tb.do("type the "+f, chromedp.SendKeys(field(f), newUser[f]))
	}
	tb.open("submit the registration", chromedp.Click(button("Register now!")))
	if got := tb.text("//h3"); got != "Welcome "+newUser["nickname"] {
		t.Errorf("registration page says %q", got)
	}
	if got := w.q.Int(`SELECT COUNT(*) FROM users u JOIN regions r ON r.id = u.region
		WHERE u.nickname = ? AND u.firstname = ? AND u.lastname = ? AND u.password = ? AND u.email = ? AND r.name = ?`,
		newUser["nickname"], newUser["firstname"], newUser["lastname"], newUser["password"], newUser["email"], newUser["region"]); got != 1 {
		t.Errorf("users rows as registered %v: %d, want 1", newUser, got)
	}

	tb.checkResponses()
}
