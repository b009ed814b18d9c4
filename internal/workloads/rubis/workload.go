// Package rubis is RUBiS, the auction site of Cecchet et al. (Middleware
// 2003, and the public RUBiS source), built in the five styles of their
// OOPSLA 2002 comparison (--style).
//
// Files, named as in every workload package: workload.go (the Workload,
// its operations, mixes and defaults, the site and the emulated browsers'
// run), schema.go and load.go (the database and its loading),
// population.go and names.go (the original generator's values),
// entities.go and entityaccess.go (the entity types, and how the
// interactions reach them in process or remotely), check.go (consistency
// after a run), served.go (serve rubis: a business tier or a web tier
// alone), web.go and params.go (the pages over HTTP at the PHP version's
// paths). The business logic is one interface, Auction (auction.go), with
// one file per style that implements it: servlets.go (Servlets: direct
// SQL, for servlets and session), facade.go (Facade: a session facade over
// entity beans, for facade and local, and the web tier of entity),
// session.go (the remote interface of session and facade: one call per
// interaction), entitytier.go (EntityTier: the entity style's business
// tier, field by field); tiers.go splits a site at its style's remote
// boundary. The interfaces that cross it are declared in rubispb; the
// emulated browsers of the original client are package browser.
package rubis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/inputfile"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/browser"
	"github.com/tierbench/tierbench/internal/workloads/rubis/tables"
)

// Mixes are the names --mix takes for the original client's transition
// tables; any other value is the path of a table in their format.
var Mixes = map[string]string{"bidding": tables.Bidding, "browsing": tables.Browsing}

// transitions is the table --mix names: a shipped one, or one read from a
// file (a mix of the user's, or one page over and over to measure it).
func transitions(mix string) (*workload.Transitions, error) {
	if name, ok := Mixes[mix]; ok {
		return tables.Load(name)
	}
	b, err := inputfile.Read(context.Background(), mix, "a transition table", config.MaxFileBytes)
	if err != nil {
		if errors.Is(err, inputfile.ErrNotRegular) || errors.Is(err, inputfile.ErrTooLarge) {
			return nil, fmt.Errorf("--mix: %w", err)
		}
		return nil, fmt.Errorf("--mix %q: neither bidding nor browsing, nor a readable transition table file: %v", mix, errors.Unwrap(err))
	}
	t, err := workload.ParseTransitions(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("--mix %s: not a transition table in the RUBiS client's format: %w", mix, err)
	}
	if t.N() != numInteractions {
		return nil, fmt.Errorf("--mix %s: %d states, want RUBiS's %d interactions (and Back, End of Session)", mix, t.N(), numInteractions)
	}
	return t, nil
}

// bytesPerScale is the loaded database per unit of scale, measured on
// SQLite: 35.5 MB at scale 1, 142 MB at scale 4.
const bytesPerScale = 35_600_000

func footprintAt(scale int) workload.Footprint {
	return workload.Footprint{DBBytes: workload.PerUnit(max(scale, 1), bytesPerScale)}
}

// Workload is RUBiS.
type Workload struct{}

var _ workload.Web = Workload{}

// New returns the workload for the registry.
func New() Workload { return Workload{} }

func (Workload) Info() workload.Info {
	return workload.Info{
		Name:       "rubis",
		Title:      "RUBiS: an auction site modelled on eBay",
		Reference:  "Cecchet et al., Performance and Scalability of EJB Applications (OOPSLA 2002); the RUBiS client and PHP pages",
		Operations: Interactions[:],
		Mix: workload.Mix{Kind: workload.Chosen, Description: "each emulated browser walks the original client's Markov chain over the pages it receives " +
			"(--mix bidding: default_transitions, writes 9.2% of the requests in the long run; browsing: browse_only_transitions), negative-exponential think time of mean 7 s × --think-scale"},
		Metric:  workload.Metric{Name: "interactions/min", Per: time.Minute},
		Options: DefaultOptions,
		Example: "--mix browsing --think-scale 0.01 --duration 30s",
		Defaults: config.Defaults{
			Clients:       50,
			ServerThreads: 10,
			Duration:      time.Minute,
			RampUp:        10 * time.Second,
			RampDown:      5 * time.Second,
			// The PHP version's SQL, the seed's baseline.
			Persistence: container.Direct,
		},
		Persistence: []container.Persistence{container.Direct, container.CMP, container.BMP},
		Entities:    entityTypes,
	}
}

// Load drops and recreates the schema and populates it.
func (Workload) Load(ctx context.Context, db *store.DB, p workload.LoadParams) (workload.LoadReport, error) {
	return load(ctx, db, p)
}

// site is the auction site served over a database.
type site struct {
	*Site
	*checker
	tiering
}

// Close stops the business tier, when the site's style has one of its own.
func (s site) Close() error { return s.tiering.close() }

// Tiers: the site's style, and the remote calls its pages made.
func (s site) Tiers() workload.Tiers {
	return workload.Tiers{Style: s.style, Protocol: s.protocol, Processes: 1, Calls: s.RemoteCalls()}
}

// Site readies the auction site over db.
func (Workload) Site(ctx context.Context, db *store.DB, p workload.RunParams) (workload.Site, error) {
	var a Auction
	var beans *Facade
	var err error
	if p.Persistence.Container() {
		if beans, err = openContainer(ctx, db, p, optionsOf(p.Options).warm); err != nil {
			return nil, err
		}
		a = beans
	} else if a, err = NewServlets(ctx, db); err != nil {
		return nil, err
	}
	c, err := newChecker(ctx, db)
	if err != nil {
		return nil, err
	}
	positions := db.Replicas() > 0
	a, t, err := split(p.Common, optionsOf(p.Options), a, p.Threads, positions)
	if err != nil {
		return nil, err
	}
	s := site{Site: NewSite(a, SiteOptions{Threads: p.Threads, Remote: t.business != nil, Positions: positions}), checker: c, tiering: t}
	if beans != nil {
		return entitySite{site: s, beans: beans}, nil
	}
	return s, nil
}

// Browsers readies the emulated browsers against the site at target,
// http://HOST:PORT or the pages' directory (the original client's
// php_html_path), http://HOST:PORT/PHP. It asks for the home page first:
// a target whose pages are not there is refused at once, naming the URL
// and the answer, rather than driven to nothing but errors.
func (Workload) Browsers(ctx context.Context, target string, p workload.RunParams) (workload.Run, error) {
	b, err := newBrowsers(target, p)
	if err != nil {
		return nil, err
	}
	if err := b.probeHome(ctx, target); err != nil {
		return nil, err
	}
	return b, nil
}

// siteURL splits a target into the site's scheme and host and the path
// of its pages ("" when it names none: the browsers' default, /PHP).
func siteURL(target string) (base, path string, err error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", "", err
	}
	path = strings.TrimRight(u.Path, "/")
	u.Path, u.RawPath = "", ""
	return u.String(), path, nil
}

// probeHome asks for the home page as a browser would.
func (b *browsers) probeHome(ctx context.Context, target string) error {
	home := b.cfg.BaseURL + b.cfg.Path + "/index.html"
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, home, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the site at %s: GET %s: %w", target, home, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxFormBytes))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return config.Usage(fmt.Errorf("--target %s: GET %s answers %s; want the site's base URL, http://HOST:PORT, or its pages' directory, http://HOST:PORT/PHP (the original client's php_html_path)",
			target, req.URL.Path, resp.Status))
	}
	return nil
}

// probeTimeout bounds the first request of a drive.
const probeTimeout = 10 * time.Second

func newBrowsers(target string, p workload.RunParams) (*browsers, error) {
	cfg, o := p.Common, optionsOf(p.Options)
	table, err := transitions(o.Mix)
	if err != nil {
		return nil, err
	}
	pop, err := populationAt(p.Scale)
	if err != nil {
		return nil, err
	}
	base, path, err := siteURL(target)
	if err != nil {
		return nil, err
	}
	bc := browser.Config{
		BaseURL:    base,
		Path:       path,
		Table:      table,
		Think:      workload.ThinkTime{Scale: o.ThinkScale},
		Users:      int(pop.Users),
		Categories: categoryNames[:],
		Regions:    regionNames[:],
		Items:      int(pop.Items()),
		// The original's 0-based ids unless asked otherwise: the site
		// answers what has no row as the PHP does, and the checks count
		// only the writes that succeeded.
		OneBasedIDs: o.OneBasedIDs,
		// Nicknames no other browser takes (the original draws them at
		// random), so that a registration fails only for the site's
		// reasons.
		UniqueNicknames: true,
		SkipImages:      o.SkipImages,
		Tries:           o.PageTries,
	}.WithDefaults()
	if !o.NoRampSlowdown {
		steadyEnd := time.Duration(math.MaxInt64)
		if cfg.Duration > 0 {
			steadyEnd = time.Duration(cfg.Duration - cfg.RampDown)
		}
		bc.Ramps = &browser.Ramps{Up: time.Duration(cfg.RampUp), SteadyEnd: steadyEnd,
			UpFactor: UpRampSlowdown, DownFactor: DownRampSlowdown}
	}
	if errs := bc.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	b := &browsers{cfg: &bc, scale: max(p.Scale, 1), active: pop.ActiveItems, walk: workload.WalkReport{Table: table.Name, TolerancePoints: MixTolerancePoints,
		SessionThink: time.Duration(float64(bc.Think.Mean) * o.ThinkScale)}}
	// A table of the user's whose Home keeps history has no stationary
	// mix to compare with: the mix is then reported, not judged.
	if st, err := table.Stationary(bc.MaxTransitions); err == nil {
		b.walk.Stationary, b.walk.MeanSession = st.Shares, st.Requests
	} else {
		b.walk.TolerancePoints = 0
	}
	return b, nil
}

// The original's slow-down factors of the think time in the ramps
// (rubis.properties: workload_up_ramp_slowdown_factor,
// workload_down_ramp_slowdown_factor).
const (
	UpRampSlowdown   = 2
	DownRampSlowdown = 3
)

// MixTolerancePoints bounds how far, in percentage points, each state's
// share of the steady state may be from the table's stationary share.
const MixTolerancePoints = 1

// browsers are a run's emulated browsers.
type browsers struct {
	cfg *browser.Config
	mu  sync.Mutex
	all []*browser.Browser
	// first are the first failed requests' messages (the page's path
	// and the status), at most maxFirstFailures.
	first   []string
	nFirst  atomic.Int32 // len(first), read without the lock
	firstMu sync.Mutex
	// walk is the table's expectation; Walk adds the browsers' counts.
	walk workload.WalkReport
	// scale and active are the site's population, for the causes.
	scale  int
	active int64
}

// Walk is the table's stationary mix and what the browsers counted.
func (b *browsers) Walk() workload.WalkReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	var st browser.Stats
	for _, br := range b.all {
		st.Add(br.Stats())
	}
	w := b.walk
	w.SorryBacks, w.NoIDBacks, w.Resets, w.Retries = st.SorryBacks, st.NoIDBacks, st.Resets, st.Retries
	w.Pages, w.Images, w.ImageErrors, w.ImageBytes = st.Pages, st.Images, st.ImageErrors, st.ImageBytes
	w.ImageTime, w.ImageMax = st.ImageTime, st.ImageMax
	if !b.cfg.OneBasedIDs {
		w.Causes = append(w.Causes, "ids are sent 0-based, as the original client sends them: category 0 and region 0 have no items, so 5% of the category searches and 6.5% of the region searches say Sorry and reset the session to Home at any --scale (--one-based-ids sends the database's ids)")
	}
	if st.Pages > 0 && st.SorryBacks > 0 {
		w.Causes = append(w.Causes, fmt.Sprintf("%d pages said Sorry (%.1f%% of the pages) and %d backs found no history and reset the session to Home: at --scale %d the site has %d active items over 20 categories and 62 regions, so many searches find none (a larger --scale finds more)",
			st.SorryBacks, 100*float64(st.SorryBacks)/float64(st.Pages), st.Resets, b.scale, b.active))
	}
	return w
}

// maxFirstFailures is how many failed requests a run keeps.
const maxFirstFailures = 8

func (b *browsers) NewClient(_, id int, rng *rand.Rand) workload.Client {
	br := browser.New(b.cfg, id, rng)
	b.mu.Lock()
	b.all = append(b.all, br)
	b.mu.Unlock()
	return &client{b: br, of: b}
}

// failed keeps err's message if it is among the first; once they are
// kept, a failure costs an atomic load.
func (b *browsers) failed(err error) {
	if b.nFirst.Load() >= maxFirstFailures {
		return
	}
	b.firstMu.Lock()
	defer b.firstMu.Unlock()
	if len(b.first) < maxFirstFailures {
		b.first = append(b.first, err.Error())
		b.nFirst.Store(int32(len(b.first)))
	}
}

// FirstFailures are the distinct messages of the run's first failed
// requests, in order.
func (b *browsers) FirstFailures() []string {
	b.firstMu.Lock()
	defer b.firstMu.Unlock()
	var out []string
	for _, m := range b.first {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Check has nothing to check: the browsers do not know the site's
// database.
func (b *browsers) Check(context.Context, workload.Outcomes) ([]workload.Check, error) {
	return nil, nil
}

// Stop closes the browsers' connections.
func (b *browsers) Stop(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, br := range b.all {
		br.Close()
	}
	return nil
}

// Start serves the site on a loopback port and readies browsers against
// it: `tierbench run` is `serve` and `drive` in one process.
func (w Workload) Start(ctx context.Context, db *store.DB, p workload.RunParams) (workload.Run, error) {
	s, err := w.Site(ctx, db, p)
	if err != nil {
		return nil, err
	}
	url, stop, err := p.Listen(s)
	if err != nil {
		return nil, err
	}
	b, err := newBrowsers(url, p)
	if err != nil {
		stop(ctx)
		return nil, err
	}
	return &run{browsers: b, site: s, stopSite: stop}, nil
}

// run is the site and its browsers in one process.
type run struct {
	*browsers
	site     workload.Site
	stopSite func(context.Context) error
}

func (r *run) Check(ctx context.Context, done workload.Outcomes) ([]workload.Check, error) {
	return r.site.Check(ctx, done)
}

// Stop closes the browsers, then stops the site once its requests under
// way are done.
func (r *run) Stop(ctx context.Context) error {
	r.browsers.Stop(ctx)
	return errors.Join(r.stopSite(ctx), r.site.Close())
}

// client is one emulated browser as the driver's terminal.
type client struct {
	b  *browser.Browser
	of *browsers
}

// Next is the browser's next move in its walk, resolved to the page it
// will request, so that the interaction is recorded as what it was.
func (c *client) Next() (int, time.Duration) {
	m := c.b.Next()
	return c.b.Prepare(m.State), m.Think
}

// writing are the interactions that write: one lost between request and
// response may or may not have happened.
var writing = [numInteractions]bool{browser.RegisterUser: true, browser.StoreBuyNow: true, browser.StoreBid: true, browser.StoreComment: true, browser.RegisterItem: true}

// Do performs the interaction. An error page (a taken nickname, a bid
// below the minimum, "Sorry" for what does not exist) is the site's
// business outcome; a write whose response never came is in doubt.
func (c *client) Do(ctx context.Context, step workload.Step) error {
	out, err := c.b.Do(ctx, step.Op)
	if err != nil && ctx.Err() == nil {
		c.of.failed(err)
	}
	var status *browser.StatusError
	switch {
	case err != nil && writing[out.State] && !errors.As(err, &status):
		return fmt.Errorf("%w: %w", store.ErrInDoubt, err)
	case err != nil:
		return err
	case out.ErrorPage:
		return workload.Business("error page")
	}
	return nil
}

var _ http.Handler = site{}
