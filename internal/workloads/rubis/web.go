package rubis

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// The web tier: the PHP version's pages, at their paths and with their
// parameters and links, rendered from an Auction's results. Every page
// answers GET and POST alike (PHP read $_POST, then $_GET; the RUBiS
// client sends GETs, the pages' forms POST).
//
// Status codes: a page renders 200, as do the original's error pages for
// business outcomes (a wrong password, an unknown item: the page says
// "ERROR", and "Sorry" for what does not exist, which the RUBiS client
// reads). A missing or malformed parameter gets the same error page with
// 400, which the original never sent (PHP spliced the value into its SQL
// and died); a failure of the business tier gets it with 500 and is
// logged. No page ever shows a stack.

//go:embed web/*.html
var webFiles embed.FS

// images are the original's, served at its paths (/PHP/NAME) and shown
// where its pages show them: the logo on every page, bid_now.jpg beside
// each item a search or AboutMe lists and on ViewItem, buy_it_now.jpg for
// an item offered to buy now. The original client fetches every
// <IMG SRC="…"> of a page, so a page's request stream is the original's
// only if the page carries the same images.
//
//go:embed original/RUBiS_logo.jpg original/bid_now.jpg original/buy_it_now.jpg
var images embed.FS

// maxFormBytes bounds a POSTed form: the largest fields (a description,
// a comment) are 64 KB.
const maxFormBytes = 1 << 20

// Site serves the RUBiS pages over an Auction.
type Site struct {
	auction Auction
	// threads are the server threads: a request takes one for its
	// Auction call, so at most --server-threads requests are in the
	// business tier at once, each on its own thread's store session, and
	// the others wait.
	threads *remote.Threads
	pages   map[string]*template.Template
	log     *slog.Logger
	mux     *http.ServeMux
	// calls counts, per script, the pages served and the remote calls
	// they made to the business tier (none when it is in-process). Filled
	// by routes, read-only after.
	calls map[string]*scriptCalls
	// remote: the Auction is a business tier's client (SiteOptions).
	remote bool
	// positions: pages carry the browser's commit position (SiteOptions).
	positions bool
}

// scriptCalls are one script's pages and their remote calls.
type scriptCalls struct {
	pages atomic.Int64
	remote.Meter
}

// RemoteCalls are the calls made so far, per script that served a page,
// in script order.
func (s *Site) RemoteCalls() []workload.RemoteCalls {
	var out []workload.RemoteCalls
	for script, c := range s.calls {
		if n := c.pages.Load(); n > 0 {
			out = append(out, workload.RemoteCalls{Name: script, Pages: n, Counts: c.Counts()})
		}
	}
	slices.SortFunc(out, func(a, b workload.RemoteCalls) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SiteOptions configure a Site.
type SiteOptions struct {
	// Threads is the number of server threads (at least 1).
	Threads int
	// Remote: the Auction calls a business tier over the remote layer,
	// whose calls the site counts per page.
	Remote bool
	// Log (nil: none) receives the failures of the business tier and
	// recovered panics.
	Log *slog.Logger
	// Positions: the database has read replicas, and each page's
	// transactions carry the browser's commit position, from and to its
	// PositionCookie, so that the store checks its reads for
	// read-your-writes (or, under causal reads, waits for them). Over a
	// remote Auction the page's calls carry the position to the business
	// tier and back (remote's metadata, decision 0045): a web tier that
	// does not know whether the business tier's database has replicas
	// sets Positions, and the cookie is set only when a call's writes
	// moved the position, which a tier without replicas never does.
	Positions bool
}

// PositionCookie is the cookie in which a browser carries the WAL position
// of its last committed write (PostgreSQL's LSN text, 16/B374D848) from
// one page to the next: a page whose transactions commit a write sets it,
// and the pages after it read the browser's own writes on a replica that
// has replayed that far. Only a site over read replicas sets it; the
// emulated browsers return it as a real browser does.
const PositionCookie = "tierbench_lsn"

// NewSite serves a's pages.
func NewSite(a Auction, o SiteOptions) *Site {
	logger := o.Log
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Site{auction: a, threads: remote.NewThreads(o.Threads), pages: mustParsePages(), log: logger, mux: http.NewServeMux(),
		calls: map[string]*scriptCalls{}, remote: o.Remote, positions: o.Positions}
	s.routes()
	return s
}

var pageFuncs = template.FuncMap{
	// Prices as PHP printed its floats: no trailing zeros.
	"price": func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) },
	// Dates as MySQL's DATETIME text.
	"date": func(t time.Time) string { return t.UTC().Format(time.DateTime) },
}

// mustParsePages parses each page on its own copy of the layout and the
// shared blocks; the templates are embedded, so a failure is a bug.
func mustParsePages() map[string]*template.Template {
	base := template.Must(template.New("layout").Funcs(pageFuncs).ParseFS(webFiles, "web/layout.html", "web/shared.html"))
	pages := make(map[string]*template.Template)
	entries, err := webFiles.ReadDir("web")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == "layout.html" || name == "shared.html" {
			continue
		}
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(webFiles, "web/"+name))
	}
	return pages
}

func (s *Site) routes() {
	// The static pages are rendered once; each request writes the bytes.
	static := func(path, page, title string) {
		var buf bytes.Buffer
		if err := s.pages[page].ExecuteTemplate(&buf, "layout", layoutData{Title: title, Script: path}); err != nil {
			panic(err) // the templates are embedded: a failure is a bug
		}
		body := buf.Bytes()
		calls := s.count(path)
		s.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			calls.pages.Add(1)
			writePage(w, http.StatusOK, body)
		})
	}
	static("/PHP/index.html", "index.html", "RUBiS: Rice University Bidding System")
	static("/PHP/register.html", "register.html", "RUBiS: Registration")
	static("/PHP/browse.html", "browse.html", "RUBiS: Browse")
	static("/PHP/sell.html", "sell.html", "RUBiS: Sell your item")
	static("/PHP/about_me.html", "about_me_auth.html", "RUBiS: About me")
	s.serveImages()
	s.mux.Handle("/{$}", http.RedirectHandler("/PHP/index.html", http.StatusFound))
	s.mux.Handle("/PHP/{$}", http.RedirectHandler("/PHP/index.html", http.StatusFound))
	for path, h := range map[string]func(*http.Request) (view, error){
		"/PHP/RegisterUser.php":             s.registerUser,
		"/PHP/BrowseCategories.php":         s.browseCategories,
		"/PHP/SelectCategoryToSellItem.php": s.browseCategories,
		"/PHP/SearchItemsByCategory.php":    s.searchItems(false),
		"/PHP/BrowseRegions.php":            s.browseRegions,
		"/PHP/SearchItemsByRegion.php":      s.searchItems(true),
		"/PHP/ViewItem.php":                 s.viewItem,
		"/PHP/ViewUserInfo.php":             s.viewUserInfo,
		"/PHP/ViewBidHistory.php":           s.viewBidHistory,
		"/PHP/BuyNowAuth.php":               s.itemAuth("/PHP/BuyNow.php", "buying an item"),
		"/PHP/BuyNow.php":                   s.buyNow,
		"/PHP/StoreBuyNow.php":              s.storeBuyNow,
		"/PHP/PutBidAuth.php":               s.itemAuth("/PHP/PutBid.php", "bidding"),
		"/PHP/PutBid.php":                   s.putBid,
		"/PHP/StoreBid.php":                 s.storeBid,
		"/PHP/PutCommentAuth.php":           s.putCommentAuth,
		"/PHP/PutComment.php":               s.putComment,
		"/PHP/StoreComment.php":             s.storeComment,
		"/PHP/SellItemForm.php":             s.sellItemForm,
		"/PHP/RegisterItem.php":             s.registerItem,
		"/PHP/AboutMe.php":                  s.aboutMe,
	} {
		s.mux.HandleFunc(path, s.page(path, h))
	}
}

// serveImages serves each image at /PHP/NAME, its bytes read once.
func (s *Site) serveImages() {
	entries, err := images.ReadDir("original")
	if err != nil {
		panic(err) // embedded: a failure is a bug
	}
	for _, e := range entries {
		body, err := images.ReadFile("original/" + e.Name())
		if err != nil {
			panic(err)
		}
		size := strconv.Itoa(len(body))
		s.mux.HandleFunc("/PHP/"+e.Name(), func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/jpeg")
			w.Header().Set("Content-Length", size)
			w.Write(body)
		})
	}
}

// ServeHTTP serves a page; a panic below is logged once and answered
// with the error page.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("rubis page panicked", "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			s.renderError(w, r.URL.Path, http.StatusInternalServerError, &PageError{Title: "Internal error",
				Message: "The server could not process your request."})
		}
	}()
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// view is a page to render: its template, its title, its data.
type view struct {
	page  string
	title string
	data  any
}

// page adapts a page's handler: forms parsed, the view rendered whole
// before anything is written (so a failure never leaves half a page), an
// error rendered as the error page with its status.
func (s *Site) page(script string, h func(*http.Request) (view, error)) http.HandlerFunc {
	calls := s.count(script)
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			s.renderError(w, script, http.StatusBadRequest, &PageError{Title: "Bad request", Message: "The form could not be read: " + err.Error()})
			return
		}
		calls.pages.Add(1)
		if s.remote {
			// The script's meter counts the page's calls; in-process
			// styles make none and skip the request's copy.
			r = r.WithContext(remote.WithMeter(r.Context(), &calls.Meter))
		}
		var t *store.Terminal
		var from uint64
		if s.positions {
			t, from = carriedPosition(r)
			r = r.WithContext(store.WithTerminal(r.Context(), t))
		}
		v, err := h(r)
		if t != nil {
			if at := t.Position(); at > from {
				http.SetCookie(w, &http.Cookie{Name: PositionCookie, Value: store.FormatLSN(at), Path: "/",
					HttpOnly: true, SameSite: http.SameSiteLaxMode})
			}
		}
		if err != nil {
			s.fail(w, r, script, err)
			return
		}
		s.render(w, script, http.StatusOK, v)
	}
}

// carriedPosition is a terminal at the position r's PositionCookie
// carries (none, or one that does not parse: 0), and that position.
func carriedPosition(r *http.Request) (*store.Terminal, uint64) {
	t := new(store.Terminal)
	c, err := r.Cookie(PositionCookie)
	if err != nil {
		return t, 0
	}
	at, err := store.ParseLSN(c.Value)
	if err != nil {
		return t, 0
	}
	t.Advance(at)
	return t, at
}

func (s *Site) fail(w http.ResponseWriter, r *http.Request, script string, err error) {
	var pe *PageError
	var param *ParamError
	switch {
	case errors.As(err, &pe):
		s.renderError(w, script, http.StatusOK, pe)
	case errors.As(err, &param):
		s.renderError(w, script, http.StatusBadRequest, &PageError{Title: "Bad request", Message: param.Error()})
	case r.Context().Err() != nil:
		// The browser left; nobody reads the answer.
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		s.log.Error("rubis page failed", "path", r.URL.Path, "err", err)
		s.renderError(w, script, http.StatusInternalServerError, &PageError{Title: "Internal error",
			Message: "The server could not process your request."})
	}
}

func (s *Site) renderError(w http.ResponseWriter, script string, status int, pe *PageError) {
	s.render(w, script, status, view{"error.html", "RUBiS ERROR: " + pe.Title, pe})
}

type layoutData struct {
	Title  string
	Script string
	D      any
}

// pageBuffers hold pages while they render: a page is written only once
// whole, and a buffer grown to a page's size is reused, not regrown.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (s *Site) render(w http.ResponseWriter, script string, status int, v view) {
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer pageBuffers.Put(buf)
	buf.Reset()
	if err := s.pages[v.page].ExecuteTemplate(buf, "layout", layoutData{Title: v.title, Script: script, D: v.data}); err != nil {
		s.log.Error("rubis page failed to render", "page", v.page, "err", err)
		http.Error(w, "ERROR: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	writePage(w, status, buf.Bytes())
}

func writePage(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// count is script's counters, made once when its route is.
func (s *Site) count(script string) *scriptCalls {
	c := &scriptCalls{}
	s.calls[script] = c
	return c
}

// call runs one Auction method on a free server thread, waiting for one
// while all are busy (or until the request is abandoned).
func call[Req, Res any](ctx context.Context, s *Site, m func(context.Context, int, Req) (Res, error), req Req) (Res, error) {
	thread, err := s.threads.Take(ctx)
	if err != nil {
		var zero Res
		return zero, err
	}
	defer s.threads.Give(thread)
	return m(ctx, thread, req)
}

func (s *Site) registerUser(r *http.Request) (view, error) {
	req, err := parseRegisterUser(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.RegisterUser, req)
	return view{"register_user.html", "RUBiS: Welcome to " + req.Nickname, res}, err
}

type browseCategoriesView struct {
	Categories []Category
	HasRegion  bool
	// Region is what the links to search in the region carry: the
	// region's id, or, for a region the site does not know, the name as
	// given (as the PHP prints it).
	Region string
	Sell   bool
	UserID int64
}

// browseCategories lists the categories to search, to search in a
// region, or, after the Sell page's login, to sell in.
func (s *Site) browseCategories(r *http.Request) (view, error) {
	p, err := parseBrowseCategories(r.Form)
	if err != nil {
		return view{}, err
	}
	ctx := r.Context()
	var v browseCategoriesView
	if p.Sell {
		res, err := call(ctx, s, s.auction.SelectCategoryToSellItem, SelectCategoryToSellItemRequest{Nickname: p.Nickname, Password: p.Password})
		if err != nil {
			return view{}, err
		}
		// As the PHP: the login is checked, but a region's links win.
		v.Categories, v.UserID, v.Sell = res.Categories, res.UserID, !p.HasRegion
	}
	if p.HasRegion {
		res, err := call(ctx, s, s.auction.BrowseCategoriesInRegion, BrowseCategoriesInRegionRequest{Region: p.Region})
		switch {
		case IsPageError(err):
			// The PHP never looks the region up: it lists the categories
			// whatever the region, and the original client counts any
			// error page as a failed interaction.
			all, err := call(ctx, s, s.auction.BrowseCategories, BrowseCategoriesRequest{})
			if err != nil {
				return view{}, err
			}
			v.Categories, v.HasRegion, v.Region = all.Categories, true, p.Region
		case err != nil:
			return view{}, err
		default:
			v.Categories, v.HasRegion, v.Region = res.Categories, true, strconv.FormatInt(res.Region.ID, 10)
		}
	}
	if !p.Sell && !p.HasRegion {
		res, err := call(ctx, s, s.auction.BrowseCategories, BrowseCategoriesRequest{})
		if err != nil {
			return view{}, err
		}
		v.Categories = res.Categories
	}
	return view{"browse_categories.html", "RUBiS available categories", v}, nil
}

func (s *Site) browseRegions(r *http.Request) (view, error) {
	res, err := call(r.Context(), s, s.auction.BrowseRegions, BrowseRegionsRequest{})
	return view{"browse_regions.html", "RUBiS available regions", res}, err
}

type searchView struct {
	searchParams
	ByRegion bool
	Items    []ItemSummary
}

// Prev and Next are the neighbouring pages' numbers.
func (v searchView) Prev() int { return max(v.Page-1, 0) }
func (v searchView) Next() int { return v.Page + 1 }

func (s *Site) searchItems(byRegion bool) func(*http.Request) (view, error) {
	return func(r *http.Request) (view, error) {
		p, err := parseSearch(r.Form, byRegion)
		if err != nil {
			return view{}, err
		}
		var res SearchItemsResult
		if byRegion {
			res, err = call(r.Context(), s, s.auction.SearchItemsByRegion,
				SearchItemsByRegionRequest{Region: p.Region, Category: p.Category, Page: p.Page, NbOfItems: p.NbOfItems})
		} else {
			res, err = call(r.Context(), s, s.auction.SearchItemsByCategory,
				SearchItemsByCategoryRequest{Category: p.Category, Page: p.Page, NbOfItems: p.NbOfItems})
		}
		title := "RUBiS: Items in category " + p.CategoryName
		if byRegion {
			title = "RUBiS: Search items by region"
		}
		return view{"search.html", title, searchView{searchParams: p, ByRegion: byRegion, Items: res.Items}}, err
	}
}

func (s *Site) viewItem(r *http.Request) (view, error) {
	id, err := parseItemID(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.ViewItem, ViewItemRequest{ItemID: id})
	return view{"view_item.html", "RUBiS: Viewing " + res.Name, res}, err
}

func (s *Site) viewUserInfo(r *http.Request) (view, error) {
	id, err := parseUserID(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.ViewUserInfo, ViewUserInfoRequest{UserID: id})
	return view{"view_user_info.html", "RUBiS: View user information", res}, err
}

func (s *Site) viewBidHistory(r *http.Request) (view, error) {
	id, err := parseItemID(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.ViewBidHistory, ViewBidHistoryRequest{ItemID: id})
	return view{"view_bid_history.html", "RUBiS: Bid history for " + res.ItemName, res}, err
}

type hiddenField struct{ Name, Value string }

type authView struct {
	Heading string
	Action  string
	Hidden  []hiddenField
}

// itemAuth is a login form for an item (BuyNowAuth, PutBidAuth) that
// posts to action.
func (s *Site) itemAuth(action, what string) func(*http.Request) (view, error) {
	return func(r *http.Request) (view, error) {
		id, err := parseItemID(r.Form)
		if err != nil {
			return view{}, err
		}
		return view{"auth.html", "RUBiS: User authentification for " + what, authView{
			Heading: "You must log in to continue", Action: action,
			Hidden: []hiddenField{{"itemId", strconv.FormatInt(id, 10)}}}}, nil
	}
}

func (s *Site) putCommentAuth(r *http.Request) (view, error) {
	item, to, err := parseCommentTarget(r.Form)
	if err != nil {
		return view{}, err
	}
	return view{"auth.html", "RUBiS: User authentification for comment", authView{
		Heading: "You must log in to leave a comment", Action: "/PHP/PutComment.php",
		Hidden: []hiddenField{{"to", strconv.FormatInt(to, 10)}, {"itemId", strconv.FormatInt(item, 10)}}}}, nil
}

func (s *Site) buyNow(r *http.Request) (view, error) {
	a, err := parseAuthItem(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.BuyNow, BuyNowRequest{Nickname: a.Nickname, Password: a.Password, ItemID: a.ItemID})
	return view{"buy_now.html", "RUBiS: Buy Now", res}, err
}

func (s *Site) storeBuyNow(r *http.Request) (view, error) {
	req, err := parseStoreBuyNow(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.StoreBuyNow, req)
	msg := "Your have successfully bought this item."
	if res.Qty > 1 {
		msg = "Your have successfully bought these items."
	}
	return view{"done.html", "RUBiS: BuyNow result", msg}, err
}

func (s *Site) putBid(r *http.Request) (view, error) {
	a, err := parseAuthItem(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.PutBid, PutBidRequest{Nickname: a.Nickname, Password: a.Password, ItemID: a.ItemID})
	return view{"put_bid.html", "RUBiS: Bidding", res}, err
}

func (s *Site) storeBid(r *http.Request) (view, error) {
	req, err := parseStoreBid(r.Form)
	if err != nil {
		return view{}, err
	}
	_, err = call(r.Context(), s, s.auction.StoreBid, req)
	return view{"done.html", "RUBiS: Bidding result", "Your bid has been successfully processed."}, err
}

func (s *Site) putComment(r *http.Request) (view, error) {
	req, err := parsePutComment(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.PutComment, req)
	return view{"put_comment.html", "RUBiS: Comment service", res}, err
}

func (s *Site) storeComment(r *http.Request) (view, error) {
	req, err := parseStoreComment(r.Form)
	if err != nil {
		return view{}, err
	}
	_, err = call(r.Context(), s, s.auction.StoreComment, req)
	return view{"done.html", "RUBiS: Comment posting", "Your comment has been successfully posted."}, err
}

func (s *Site) sellItemForm(r *http.Request) (view, error) {
	category, user, err := parseSellItemForm(r.Form)
	if err != nil {
		return view{}, err
	}
	return view{"sell_item_form.html", "RUBiS: Sell your item", struct{ Category, User int64 }{category, user}}, nil
}

func (s *Site) registerItem(r *http.Request) (view, error) {
	req, err := parseRegisterItem(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.RegisterItem, req)
	return view{"register_item.html", "RUBiS: Selling " + req.Name, res}, err
}

func (s *Site) aboutMe(r *http.Request) (view, error) {
	nick, pass, err := parseLogin(r.Form)
	if err != nil {
		return view{}, err
	}
	res, err := call(r.Context(), s, s.auction.AboutMe, AboutMeRequest{Nickname: nick, Password: pass})
	return view{"about_me.html", "RUBiS: About me", res}, err
}
