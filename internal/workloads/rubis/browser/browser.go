package browser

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/workload"
)

// Config of the emulated browsers of a run; one Config serves them all.
type Config struct {
	// BaseURL of the site, scheme and host (and port): http://host:8080.
	BaseURL string
	// Path under which the pages and scripts live; default "/PHP" (the
	// original's php_html_path and php_script_path).
	Path string
	// Table is the mix's transition table (see package tables).
	Table *workload.Transitions
	// Think before each request; zero fields take ThinkTime's defaults.
	Think workload.ThinkTime
	// MaxTransitions per session; default 1000.
	MaxTransitions int
	// Users is the population: a session's user is drawn uniformly,
	// nickname "user"+n and password "password"+n for n in 1..Users.
	Users int
	// Categories and Regions are the names, in id order, the browser
	// draws from where the original draws from its files rather than from
	// the page (search by category or region, sell, register).
	Categories, Regions []string
	// ItemsPerPage asked of the search pages; default 20.
	ItemsPerPage int
	// Items is the number of items (active and old) the site starts with:
	// RegisterItem names new items after it, as the original does.
	Items int
	// Policy of the items and comments the browser makes up; the zero
	// value is the original's rubis.properties (DefaultPolicy).
	Policy Policy
	// SkipImages: do not fetch the <IMG SRC="…"> of each page, which the
	// original does (every occurrence, no cache; errors ignored). The
	// images of a page are fetched after it, before the think time, as
	// the original does, but timed apart (Stats): an interaction's
	// latency is its page's alone.
	SkipImages bool
	// Tries of a page before it counts as failed, RetryPause apart: the
	// original's callHTTPServer opens the URL up to 5 times, sleeping
	// 1 s after each failure (no response, or a status Java's
	// URL.openStream throws for: 400 and above). 0: 5; 1: no retry.
	Tries      int
	RetryPause time.Duration
	// Ramps, when set, slow the think time down in the ramps as the
	// original's slow-down factors do; nil: the same think throughout.
	Ramps *Ramps
	// OneBasedIDs: send category and region ids, and the user's id in
	// forms, counting from 1 as the database does. The original sends the
	// 0-based index it drew (so category 0 finds nothing and the user id
	// in a bid is the previous user's).
	OneBasedIDs bool
	// UniqueNicknames: RegisterUser makes nicknames no other browser of the
	// run makes. The original draws n in Users+1..Users+1,000,000 and
	// accepts the error page a taken nickname gets.
	UniqueNicknames bool
	// Transport, when set, is shared by the browsers (it should allow a
	// keep-alive connection per browser). Nil: each browser has its own,
	// holding one persistent connection, as one emulated user would.
	Transport http.RoundTripper
}

// The original's retries of a page (UserSession.callHTTPServer).
const (
	DefaultTries      = 5
	DefaultRetryPause = time.Second
)

// Ramps are the run's phases as the original's ClientEmulator sets its
// slow-down factor: every think time drawn in the up-ramp is multiplied
// by UpFactor (rubis.properties: 2), in the down-ramp by DownFactor (3),
// in the session run by 1. Times are since the run's first request,
// which starts the clock; one Ramps serves all of a run's browsers.
type Ramps struct {
	Up, SteadyEnd        time.Duration
	UpFactor, DownFactor float64
	start                atomic.Int64 // UnixNano of the first request; 0: none yet
}

// factor is the slow-down factor at now.
func (r *Ramps) factor(now time.Time) float64 {
	if r == nil {
		return 1
	}
	t := now.UnixNano()
	start := r.start.Load()
	if start == 0 && !r.start.CompareAndSwap(0, t) {
		start = r.start.Load()
	}
	if start == 0 {
		start = t
	}
	switch since := time.Duration(t - start); {
	case since < r.Up:
		return r.UpFactor
	case since >= r.SteadyEnd:
		return r.DownFactor
	}
	return 1
}

// Stats are what a browser counts besides its interactions: the images
// it fetched, the original's retries and the moves its pages forced.
type Stats struct {
	// Images fetched (ImageErrors of them failed: no response or not
	// 200), their bytes, and the time spent on them (their sum, and the
	// longest one).
	Images, ImageErrors, ImageBytes int64
	ImageTime, ImageMax             time.Duration
	// Pages received (error pages included); Retries are pages sent
	// again after a failed try (Config.Tries).
	Pages, Retries int64
	// SorryBacks: a page said "Sorry" (nothing matched), so the next
	// request went back through the history instead of where the walk
	// drew; NoIDBacks: the page had no id for the drawn state (ViewItem,
	// ViewUserInfo, PutBid), likewise.
	SorryBacks, NoIDBacks int64
	// Resets: a back found the history empty and went to Home, the
	// session reset (UserSession's backToPreviousState() == -1).
	Resets int64
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Images += o.Images
	s.ImageErrors += o.ImageErrors
	s.ImageBytes += o.ImageBytes
	s.ImageTime += o.ImageTime
	s.ImageMax = max(s.ImageMax, o.ImageMax)
	s.Pages += o.Pages
	s.Retries += o.Retries
	s.SorryBacks += o.SorryBacks
	s.NoIDBacks += o.NoIDBacks
	s.Resets += o.Resets
}

// Policy is what the original's properties say of made-up data.
type Policy struct {
	PercentUniqueItems    float64 // items with quantity 1
	PercentReservePrice   float64
	PercentBuyNow         float64
	MaxItemQty            int
	ItemDescriptionLength int
	CommentMaxLength      int
}

// DefaultPolicy is the original's rubis.properties.
func DefaultPolicy() Policy {
	return Policy{PercentUniqueItems: 80, PercentReservePrice: 40, PercentBuyNow: 10,
		MaxItemQty: 10, ItemDescriptionLength: 8192, CommentMaxLength: 2048}
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	c.Path = cmp.Or(c.Path, "/PHP")
	c.Think = c.Think.WithDefaults()
	c.MaxTransitions = cmp.Or(c.MaxTransitions, workload.DefaultMaxTransitions)
	c.ItemsPerPage = cmp.Or(c.ItemsPerPage, 20)
	c.Tries = cmp.Or(c.Tries, DefaultTries)
	c.RetryPause = cmp.Or(c.RetryPause, DefaultRetryPause)
	if c.Policy == (Policy{}) {
		c.Policy = DefaultPolicy()
	}
	return c
}

// Validate reports every problem, naming the field.
func (c Config) Validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("BaseURL %q: want http://host[:port]", c.BaseURL)
	}
	if c.Path != "" && !strings.HasPrefix(c.Path, "/") {
		bad("Path %q: want an absolute path such as /PHP", c.Path)
	}
	if c.Table == nil {
		bad("Table: none (want a parsed transition table)")
	} else if c.Table.N() != NumStates {
		bad("Table %q has %d states, want RUBiS's %d", c.Table.Name, c.Table.N(), NumStates)
	}
	for _, e := range c.Think.Validate() {
		bad("Think: %v", e)
	}
	if c.MaxTransitions < 0 {
		bad("MaxTransitions %d: want ≥ 1 (0: 1000)", c.MaxTransitions)
	}
	if c.Users < 1 {
		bad("Users %d: want ≥ 1", c.Users)
	}
	if len(c.Categories) == 0 {
		bad("Categories: none")
	}
	if len(c.Regions) == 0 {
		bad("Regions: none")
	}
	if c.Tries < 0 || c.RetryPause < 0 {
		bad("Tries %d, RetryPause %v: want ≥ 1 and ≥ 0 (0: %d and %v, the original's)", c.Tries, c.RetryPause, DefaultTries, DefaultRetryPause)
	}
	if r := c.Ramps; r != nil && (r.Up < 0 || r.SteadyEnd < r.Up || !(r.UpFactor >= 0) || !(r.DownFactor >= 0)) {
		bad("Ramps up %v, steady end %v, factors %v and %v: want 0 ≤ Up ≤ SteadyEnd and factors ≥ 0", r.Up, r.SteadyEnd, r.UpFactor, r.DownFactor)
	}
	if c.ItemsPerPage < 0 {
		bad("ItemsPerPage %d: want ≥ 1 (0: 20)", c.ItemsPerPage)
	}
	if c.Items < 1 {
		bad("Items %d: want ≥ 1", c.Items)
	}
	p := c.Policy
	for _, f := range []struct {
		name string
		v    float64
	}{{"PercentUniqueItems", p.PercentUniqueItems}, {"PercentReservePrice", p.PercentReservePrice}, {"PercentBuyNow", p.PercentBuyNow}} {
		if f.v < 0 || f.v > 100 {
			bad("Policy.%s %v: want 0..100", f.name, f.v)
		}
	}
	if p != (Policy{}) && (p.MaxItemQty < 1 || p.ItemDescriptionLength < 1 || p.CommentMaxLength < 1) {
		bad("Policy: MaxItemQty %d, ItemDescriptionLength %d, CommentMaxLength %d: want each ≥ 1",
			p.MaxItemQty, p.ItemDescriptionLength, p.CommentMaxLength)
	}
	return errs
}

// The RUBiS states (the rows of the transition tables), which are the
// workload's interactions: a state's number is its operation id.
const (
	Home = iota
	Register
	RegisterUser
	Browse
	BrowseCategories
	SearchItemsInCategory
	BrowseRegions
	BrowseCategoriesInRegion
	SearchItemsInRegion
	ViewItem
	ViewUserInfo
	ViewBidHistory
	BuyNowAuth
	BuyNow
	StoreBuyNow
	PutBidAuth
	PutBid
	StoreBid
	PutCommentAuth
	PutComment
	StoreComment
	Sell
	SelectCategoryToSellItem
	SellItemForm
	RegisterItem
	AboutMeAuth
	AboutMe
	NumStates
)

// Outcome of one interaction.
type Outcome struct {
	// State whose page was requested: the one asked for, or the one the
	// original goes back to instead (after a "Sorry" page, or when the
	// page has no id to follow).
	State int
	// Status is the HTTP status (0 when no response came).
	Status int
	// ErrorPage: the page says "ERROR", the original's sign of a failed
	// interaction; the browser's session goes back to Home at once.
	ErrorPage bool
	// Bytes of the page.
	Bytes int
	// Images on the page: the browser fetches them before its next
	// request (see Config.SkipImages and Stats).
	Images int
	// Tries the page took (1 when the first got it).
	Tries int
}

// StatusError is a response other than 200 OK.
type StatusError struct{ Code int }

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
}

// HTTPStatus lets a result count the failure under its status (http_404).
func (e *StatusError) HTTPStatus() int { return e.Code }

// Browser is one emulated browser: its walk, its user, the last page it
// got and its connection. A browser is used by one goroutine.
type Browser struct {
	cfg       *Config
	id        int
	rng       *rand.Rand
	walk      *workload.MarkovWalk
	client    http.Client
	transport *http.Transport // own, nil when shared
	base      string          // BaseURL without a trailing slash
	site      string          // base + Path

	user int // 0-based index, the original's userId
	// registered counts this browser's RegisterUser requests (for
	// UniqueNicknames).
	registered int

	page    page
	hasPage bool // the original's lastHTMLReply != null
	// lastItemID, lastUserID: the original falls back on the last id it
	// extracted when a page has none (after a Back, say).
	lastItemID, lastUserID int

	stats Stats
	// pending, when set, is the context of the request that got a page
	// whose images are still to be fetched.
	pending context.Context

	// cookies the site set in this session, sent back with each page
	// request as a browser does (the RUBiS site sets one over read
	// replicas: the position of the session's last write). A new session
	// starts without.
	cookies []*http.Cookie

	url   []byte // scratch for the request URL
	query bool   // url has its '?'
	// prepared is the state whose request Prepare built, -1 when none.
	prepared int
}

// New makes browser id (ids distinct within a run) with its own random
// stream. cfg must have passed Validate after WithDefaults; New keeps a
// pointer to it, so it must not change while browsers use it.
func New(cfg *Config, id int, rng *rand.Rand) *Browser {
	base := strings.TrimRight(cfg.BaseURL, "/")
	b := &Browser{cfg: cfg, id: id, rng: rng, base: base, site: base + cfg.Path,
		walk: workload.NewMarkovWalk(cfg.Table, cfg.Think, cfg.MaxTransitions), lastItemID: -1, lastUserID: -1, prepared: -1}
	rt := cfg.Transport
	if rt == nil {
		// One keep-alive connection per browser. The original sends no
		// Accept-Encoding, so neither do we.
		b.transport = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1,
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
			DisableCompression:  true,
		}
		rt = b.transport
	}
	b.client = http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	return b
}

// Close releases the browser's connection.
func (b *Browser) Close() {
	if b.transport != nil {
		b.transport.CloseIdleConnections()
	}
}

// Next is the browser's next move: pause m.Think, then Do(ctx, m.State).
// At a new session it draws the session's user.
//
// The last page's images are fetched first, as the original fetches them
// after the page and before it thinks.
func (b *Browser) Next() workload.MarkovMove {
	if b.pending != nil {
		b.fetchImages()
	}
	m := b.walk.Next(b.rng)
	if m.NewSession {
		b.user = b.rng.IntN(b.cfg.Users)
		b.cookies = b.cookies[:0]
	}
	if m.EmptyBack {
		b.stats.Resets++
	}
	if m.Think > 0 && b.cfg.Ramps != nil {
		m.Think = time.Duration(float64(m.Think) * b.cfg.Ramps.factor(time.Now()))
	}
	return m
}

// Stats are the browser's counts so far; read them when it is idle.
func (b *Browser) Stats() Stats { return b.stats }

// Prepare builds the request of state, as Do would, and returns the state
// it ends up requesting (the original goes back instead after a "Sorry"
// page, or when the page has no id to follow); the next Do sends it. A
// driver that records what was requested asks here first.
func (b *Browser) Prepare(state int) int {
	if state < 0 || state >= NumStates {
		return state
	}
	b.prepared = b.request(state)
	return b.prepared
}

// Walk is the browser's walk (for its state and history).
func (b *Browser) Walk() *workload.MarkovWalk { return b.walk }

// bodies holds response buffers between requests, so that 10,000 idle
// browsers do not each hold their largest page.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Do performs the interaction of state (as Prepare resolved it, when it
// was asked) and reads the page. An error is a failed request (no response, or not 200 OK); an
// error page is a success with Outcome.ErrorPage set. Both send the
// session back to Home, as the original does.
func (b *Browser) Do(ctx context.Context, state int) (Outcome, error) {
	if state < 0 || state >= NumStates {
		return Outcome{State: state}, fmt.Errorf("rubis browser: no state %d (want 0..%d)", state, NumStates-1)
	}
	switch prepared := b.prepared; {
	case prepared < 0:
		state = b.request(state)
	case prepared != state:
		// Prepare built another request: sending it would record one
		// interaction and perform another.
		b.prepared = -1
		return Outcome{State: state}, fmt.Errorf("rubis browser: Do(%s) after Prepare resolved %s", StateNames[state], StateNames[prepared])
	default:
		b.prepared = -1
	}
	out := Outcome{State: state}
	b.pending = nil
	buf := bodies.Get().(*bytes.Buffer)
	defer bodies.Put(buf)
	var err error
	for {
		out.Tries++
		out.Status, err = b.get(ctx, buf)
		if err == nil || out.Tries >= b.cfg.Tries || ctx.Err() != nil || errors.As(err, new(*readError)) {
			break
		}
		// callHTTPServer: an URL that does not open is tried again, a
		// second later; one that breaks while read is not.
		b.stats.Retries++
		if !sleep(ctx, b.cfg.RetryPause) {
			break
		}
	}
	if err != nil {
		b.failed()
		if errors.As(err, new(*StatusError)) {
			// The request's path says which page failed (a wrong --target
			// fails them all); its query is cut, a form can be 8 KB.
			path := string(b.url[len(b.base):])
			if len(path) > maxErrorPath {
				path = path[:maxErrorPath] + "…"
			}
			return out, fmt.Errorf("rubis browser: %s: GET %s: %w", StateNames[state], path, err)
		}
		return out, fmt.Errorf("rubis browser: %s: %w", StateNames[state], err)
	}
	b.page.parse(buf.Bytes(), !b.cfg.SkipImages)
	b.hasPage = true
	b.stats.Pages++
	out.Bytes = b.page.size
	out.ErrorPage = b.page.errorPage
	out.Images = len(b.page.images)
	if out.ErrorPage {
		b.walk.Fail()
	}
	if out.Images > 0 {
		b.pending = ctx
	}
	return out, nil
}

// maxErrorPath is as much of a failed request's path and query as its
// error repeats.
const maxErrorPath = 120

// readError: the response broke while it was read.
type readError struct{ err error }

func (e *readError) Error() string { return "reading the page: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// get sends b.url once and reads a 200 OK's body into buf.
func (b *Browser) get(ctx context.Context, buf *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, string(b.url), nil)
	if err != nil {
		return 0, err
	}
	for _, c := range b.cookies {
		req.AddCookie(c)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	if len(resp.Header["Set-Cookie"]) > 0 {
		b.keep(resp.Cookies())
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return resp.StatusCode, &StatusError{resp.StatusCode}
	case err != nil:
		return resp.StatusCode, &readError{err}
	}
	return resp.StatusCode, nil
}

// keep stores the cookies a response set, each replacing the one of its
// name; one that expires at once removes it. Paths and domains are not
// kept apart: the browser talks to one site, so net/http/cookiejar's
// locking and URL matching on every request of every browser would buy
// nothing here.
func (b *Browser) keep(set []*http.Cookie) {
	for _, c := range set {
		i := slices.IndexFunc(b.cookies, func(k *http.Cookie) bool { return k.Name == c.Name })
		switch {
		case c.MaxAge < 0 && i >= 0:
			b.cookies = slices.Delete(b.cookies, i, i+1)
		case c.MaxAge < 0:
		case i >= 0:
			b.cookies[i] = &http.Cookie{Name: c.Name, Value: c.Value}
		default:
			b.cookies = append(b.cookies, &http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
}

// Cookies are the cookies the browser returns to the site with its next
// page request: those the site set in its session.
func (b *Browser) Cookies() []*http.Cookie { return slices.Clone(b.cookies) }

// sleep waits d unless ctx ends first; false when it did.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetchImages downloads the last page's images, each once per
// occurrence as the original does, and counts them.
func (b *Browser) fetchImages() {
	ctx := b.pending
	b.pending = nil
	for _, src := range b.page.images {
		began := time.Now()
		n, err := b.fetch(ctx, src)
		d := time.Since(began)
		b.stats.Images++
		b.stats.ImageBytes += n
		b.stats.ImageTime += d
		b.stats.ImageMax = max(b.stats.ImageMax, d)
		if err != nil {
			b.stats.ImageErrors++
			if ctx.Err() != nil {
				return
			}
		}
	}
}

func (b *Browser) failed() {
	b.hasPage = false
	b.walk.Fail()
}

// fetch downloads an image and throws it away: the bytes it read.
func (b *Browser) fetch(ctx context.Context, src string) (int64, error) {
	u := src
	if strings.HasPrefix(src, "/") {
		u = b.base + src
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = &StatusError{resp.StatusCode}
	}
	return n, err
}

// StateNames are the states' names: the tables' ("StoreBuyBow" spelled
// right).
var StateNames = [NumStates]string{
	"Home", "Register", "RegisterUser", "Browse", "BrowseCategories", "SearchItemsInCategory",
	"BrowseRegions", "BrowseCategoriesInRegion", "SearchItemsInRegion", "ViewItem", "ViewUserInfo",
	"ViewBidHistory", "BuyNowAuth", "BuyNow", "StoreBuyNow", "PutBidAuth", "PutBid", "StoreBid",
	"PutCommentAuth", "PutComment", "StoreComment", "Sell", "SelectCategoryToSellItem",
	"SellItemForm", "RegisterItem", "AboutMeAuth", "AboutMe",
}

// StateName is a state's name.
func StateName(state int) string {
	if state < 0 || state >= NumStates {
		return fmt.Sprintf("state %d", state)
	}
	return StateNames[state]
}
