package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/appservers"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/livemetrics"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/server"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/tierproc"
	"github.com/tierbench/tierbench/internal/workload"
)

// ShutdownGrace bounds how long a stopping server waits for the requests
// under way.
const ShutdownGrace = 30 * time.Second

// A tier process stopping is killed only after its own shutdown grace:
// this fails to compile if tierproc.StopGrace is not the longer.
const _ = uint64(tierproc.StopGrace - ShutdownGrace - 1)

// listenLoopback serves a web workload's middle tier for its own clients
// on a free loopback port (`tierbench run`): a real socket, so that the
// clients pay what a browser pays.
func listenLoopback(h http.Handler) (string, func(context.Context) error, error) {
	s, err := server.Start("127.0.0.1:0", h)
	if err != nil {
		return "", nil, err
	}
	return s.URL(), s.Shutdown, nil
}

// web is the workload as a web site; a usage error names the workloads
// that are, or whose business tier can be driven.
func (r *Runner) web(name string) (workload.Web, error) {
	w, err := r.Workloads.Get(name)
	if err != nil {
		return nil, config.Usage(err)
	}
	web, ok := w.(workload.Web)
	if !ok {
		return nil, config.Usage(fmt.Errorf("%s cannot be served or driven apart; the workloads that can: %s", name, strings.Join(r.names(func(w workload.Workload) bool {
			_, web := w.(workload.Web)
			_, served := w.(workload.Served)
			return web || served
		}), ", ")))
	}
	return web, nil
}

// Serve runs a workload's middle tier, or one of its tiers (o.Tier), on
// its own until ctx is done; then it lets the requests under way finish.
// The database's load, whatever its scale, is what is served (cfg.Scale
// is not asked for). ready, when set, is told what serves where once it
// listens.
func (r *Runner) Serve(ctx context.Context, cfg config.Run, o ServeOptions, ready func(Serving)) error {
	if err := r.resolve(&cfg); err != nil {
		return err
	}
	if err := refusePlacement(cfg, "serve"); err != nil {
		return err
	}
	w, err := r.Workloads.Get(cfg.Workload)
	if err != nil {
		return config.Usage(err)
	}
	web, isWeb := w.(workload.Web)
	business, hasBusiness := w.(workload.BusinessTier)
	if strings.HasPrefix(o.Listen, remote.UnixPrefix) {
		// serveBusiness checks the path and the protocol.
		if !hasBusiness || o.Tier == TierWeb || o.Tier == "" && isWeb {
			return config.Usage(fmt.Errorf("--listen %s: a Unix-domain socket is a business tier's over --protocol lean (--tier business); pages and web services listen on HOST:PORT", o.Listen))
		}
	} else if err := server.ParseListen(o.Listen); err != nil {
		return config.Usage(err)
	}
	if t, ok := workload.OptionsOf(cfg).(workload.Tiered); ok && o.Tier != "" {
		cfg.Options = t.Apart(cfg)
	}
	switch {
	case o.Tier == TierWeb && isWeb:
		return r.serveWeb(ctx, cfg, web, o, ready)
	case o.Tier == TierWeb:
		return config.Usage(fmt.Errorf("--tier web: %s has no web tier; serve its business tier (--tier business, the default)", cfg.Workload))
	case o.Tier == TierBusiness && !hasBusiness, o.Tier == "" && !isWeb && !hasBusiness:
		return config.Usage(fmt.Errorf("%s's business tier cannot be served alone; the workloads whose can: %s", cfg.Workload, strings.Join(r.names(func(w workload.Workload) bool { _, ok := w.(workload.BusinessTier); return ok }), ", ")))
	case o.Tier == TierBusiness, !isWeb:
		return r.serveBusiness(ctx, cfg, w, business, o, ready)
	case o.Tier != "":
		return config.Usage(fmt.Errorf("--tier %q: allowed: business, web (or none: the whole middle tier)", o.Tier))
	}
	if o.Business != "" {
		return config.Usage(errors.New("--business is the web tier's (--tier web): where its business tier serves"))
	}
	if err := r.guardListen(ctx, o, cfg.Workload+"'s site", false); err != nil {
		return err
	}
	// The site's pages take no token; its counters do (run --app-servers).
	token, err := readToken(o.TokenFile)
	if err != nil {
		return err
	}
	db, cfg, p, err := r.openServed(ctx, cfg, w)
	if err != nil {
		return err
	}
	defer db.Close()
	site, err := web.Site(ctx, db.DB, p)
	if err != nil {
		return fmt.Errorf("start %s: %w", cfg.Workload, err)
	}
	defer site.Close()
	return serveHTTP(ctx, site, o.Listen, token, db.Stats, o.measure(livemetrics.TierSite), func(url string) {
		if ready != nil {
			sv := Serving{What: cfg.Workload, URL: url, Scale: cfg.Scale, Style: styleOf(cfg)}
			if er, ok := site.(workload.EntityRun); ok {
				sv.Entities = er.EntityStats
			}
			ready(sv)
		}
	})
}

// openServed opens the database a tier serves, which must hold a complete
// load, and the parameters of the workload's tier over it.
func (r *Runner) openServed(ctx context.Context, cfg config.Run, w workload.Workload) (*servedDB, config.Run, workload.RunParams, error) {
	if cfg.DB.Temp {
		return nil, cfg, workload.RunParams{}, config.Usage(fmt.Errorf("--db sqlite is a fresh temporary file, which holds no %s to serve; load one first (tierbench load %s --db sqlite:PATH) and serve it with the same --db", cfg.Workload, cfg.Workload))
	}
	if _, err := r.validated(cfg); err != nil {
		return nil, cfg, workload.RunParams{}, err
	}
	entities, err := entitySettings(cfg, w.Info())
	if err != nil {
		return nil, cfg, workload.RunParams{}, config.Usage(err)
	}
	// A served tier cannot count its callers (a run's --clients, even
	// in a -f file, is not theirs): it opens a session per server thread,
	// and the connection limit is checked for them all.
	sized := cfg
	sized.Clients = cfg.ServerThreads
	db, err := r.open(ctx, sized, w, false, useServe)
	if err != nil {
		return nil, cfg, workload.RunParams{}, err
	}
	loaded := cfg
	loaded.Scale = anyScale
	m, err := checkMarker(ctx, db, loaded, "serve")
	if err != nil {
		db.Close()
		return nil, cfg, workload.RunParams{}, err
	}
	cfg.Scale = int(m.scale)
	cluster, err := joinCluster(ctx, cfg, entities)
	if err != nil {
		db.Close()
		return nil, cfg, workload.RunParams{}, err
	}
	p := params(cfg)
	p.Persistence, p.Entities, p.Attach = cfg.Persistence, entities, cluster.attach
	shared, err := openShared(ctx, cfg, entities)
	if err != nil {
		cluster.Close()
		db.Close()
		return nil, cfg, workload.RunParams{}, err
	}
	shared.attach(&p)
	return &servedDB{DB: db, cluster: cluster, shared: shared}, cfg, p, nil
}

// servedDB is a served tier's database, its place in the cluster of app
// servers and its shared cache, left when it closes.
type servedDB struct {
	*store.DB
	cluster *clusterMember
	shared  *sharedRun
}

func (d *servedDB) Close() error {
	d.cluster.Close()
	d.shared.close()
	return d.DB.Close()
}

// measure is what counts the requests tier answers: nothing without
// metrics.
func (o ServeOptions) measure(tier string) func(http.Handler) http.Handler {
	if o.Metrics == nil {
		return func(h http.Handler) http.Handler { return h }
	}
	return func(h http.Handler) http.Handler { return o.Metrics.Handler(tier, h) }
}

// serveHTTP serves h, measured, at listen, with the tier's own paths
// beside it, until ctx is done or the server fails, then lets the
// requests under way finish.
func serveHTTP(ctx context.Context, h http.Handler, listen, token string, db func() store.Stats, measure func(http.Handler) http.Handler, ready func(url string)) error {
	srv, err := server.Start(listen, withTierPaths(h, measure(h), token, db))
	if err != nil {
		return config.Usage(err)
	}
	ready(srv.URL())
	select {
	case <-ctx.Done():
	case <-srv.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	return srv.Shutdown(stopCtx)
}

// names are the registered workloads that pass keep.
func (r *Runner) names(keep func(workload.Workload) bool) []string {
	var out []string
	for _, n := range r.Workloads.Names() {
		if w, _ := r.Workloads.Get(n); w != nil && keep(w) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []string{"none yet"}
	}
	return out
}

// TargetProbeTimeout bounds the first request a drive sends to see that
// its target answers.
const TargetProbeTimeout = 10 * time.Second

// Drive runs a web workload's emulated clients against a site served
// elsewhere (tierbench serve, or any implementation of the workload's
// pages) at target. The driver reaches no database: the result's
// environment names the target, and it says that no consistency checks
// ran.
func (r *Runner) Drive(ctx context.Context, cfg config.Run, target string, o DriveOptions) (*result.Result, error) {
	if err := r.resolve(&cfg); err != nil {
		return nil, err
	}
	if err := refusePlacement(cfg, "drive"); err != nil {
		return nil, err
	}
	if w, err := r.Workloads.Get(cfg.Workload); err == nil {
		if served, ok := w.(workload.Served); ok {
			return r.driveServed(ctx, cfg, served, target, o)
		}
	}
	if o.CheckDB != nil {
		return nil, config.Usage(fmt.Errorf("--db: a drive of %s checks no database (its site's checks are tierbench run's)", cfg.Workload))
	}
	web, err := r.web(cfg.Workload)
	if err != nil {
		return nil, err
	}
	var bases []string
	for _, t := range strings.Split(target, ",") {
		base, err := parseTarget(t)
		if err != nil {
			return nil, config.Usage(err)
		}
		bases = append(bases, base)
	}
	if _, err := r.validated(cfg); err != nil {
		return nil, err
	}
	token, err := readToken(o.TokenFile)
	if err != nil {
		return nil, err
	}
	if cfg.Duration > 0 {
		cfg.Iterations = 0
	}
	cfg.DB = store.DSN{} // none: the site has its own
	if err := fitsInMemory(cfg); err != nil {
		return nil, err
	}
	for _, base := range bases {
		if err := probeTarget(ctx, base); err != nil {
			return nil, err
		}
	}
	s := &state{r: r, cfg: cfg, info: web.Info(), began: time.Now(), web: true, target: strings.Join(bases, ","), share: o.Share, startAt: o.StartAt}
	if len(bases) > 1 {
		s.watched = sitesTier(bases, func() int64 { _, f := s.rec.Completed(); return f })
	}
	s.begin(phaseStart)
	var runs []workload.Run
	for _, base := range bases {
		run, err := web.Browsers(ctx, base, params(cfg))
		if err != nil {
			return s.fail(ctx, phaseStart, fmt.Errorf("start %s's clients: %w", cfg.Workload, err), "nothing was measured")
		}
		runs = append(runs, run)
	}
	t := driven(runs)
	for i, base := range bases {
		// The tier's own paths are at the server's root, whatever
		// directory its pages are in (http://HOST:PORT/PHP).
		root := base
		if u, err := url.Parse(base); err == nil {
			root = u.Scheme + "://" + u.Host
		}
		t.servers = append(t.servers, &appServer{name: targetName(i, len(bases)), url: base, site: root, read: siteCounters(root, token),
			probe: func(ctx context.Context) error { return get(ctx, base+"/") }})
	}
	t.readStart(ctx, true)
	return s.drive(ctx, t)
}

// driven are a drive's clients, one Run per target: its tieredRun, whose
// servers are the targets (processes 0: they are not the drive's).
func driven(runs []workload.Run) *tieredRun {
	t := &tieredRun{Run: runs[0]}
	if len(runs) > 1 {
		t.Run = appservers.NewSpread(runs)
	}
	t.checker = t.Run // nothing to check: the database is the targets'
	return t
}

// targetName names target i of a drive's n.
func targetName(i, n int) string {
	if n == 1 {
		return "the target"
	}
	return fmt.Sprintf("target %d", i+1)
}

// sitesTier watches the sites a drive spreads its clients over: lost
// when none of them answers.
func sitesTier(bases []string, failed func() int64) *tier {
	return &tier{
		name: "the sites at " + strings.Join(bases, ", "),
		lost: failed,
		probe: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			var errs []error
			for _, base := range bases {
				err := get(ctx, base+"/")
				if err == nil {
					return nil
				}
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		},
	}
}

// parseTarget reads --target: an http or https URL of the site's root,
// returned without a trailing slash.
func parseTarget(target string) (string, error) {
	const want = "want the site's base URL, as http://HOST:PORT (tierbench serve prints it)"
	u, err := url.Parse(target)
	switch {
	case target == "":
		return "", fmt.Errorf("--target is required: %s", want)
	case err != nil:
		return "", fmt.Errorf("--target %q: %v; %s", target, err, want)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("--target %q: scheme %q; %s", target, u.Scheme, want)
	case u.Hostname() == "":
		return "", fmt.Errorf("--target %q has no host; %s", target, want)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", fmt.Errorf("--target %q: a base URL has no query, fragment or user; %s", target, want)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// siteTier watches a driven site: failed operations suggest it is gone,
// and a request to its root asks.
func siteTier(base string, failed func() int64) tier {
	return tier{
		name: "the site at " + base,
		lost: failed,
		probe: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return get(ctx, base+"/")
		},
	}
}

// get requests url and reads its answer, whatever its status: any answer
// means the site is there.
func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// probeTarget sends one request to the site's root: a target that does
// not answer is an infrastructure failure before anything is measured,
// not a run of connection errors.
func probeTarget(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, TargetProbeTimeout)
	defer cancel()
	if err := get(ctx, base+"/"); err != nil {
		return fmt.Errorf("the site at %s does not answer: %w", base, err)
	}
	return nil
}
