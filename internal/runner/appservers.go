package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/appservers"
	"github.com/tierbench/tierbench/internal/balancer"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/server"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/tierproc"
	"github.com/tierbench/tierbench/internal/workload"
)

// The middle tier in other processes: --tiers 2|3 (issue 13) and
// --app-servers N (issue 29), N copies of it over the run's one database,
// each with its own container, the terminals spread over them
// (appservers.Spread) or sent through a load balancer (--balancer). Each
// server's container counters are read at the start of the drive and at
// its end, so that they cover what an in-process run's cover (from the
// container's warm-up to the end, ramps included), and merged exactly.

// apart reports whether the run's middle tier runs in other processes.
func apart(cfg config.Run) bool { return tieringOf(cfg).Tiers > 1 || cfg.Servers() > 1 }

// appServer is one middle tier of a run or drive: its processes (none
// for a drive's target), where its clients call it, and its counters.
type appServer struct {
	name string
	// url is where its clients call it: the site, web tier or business
	// tier.
	url string
	// holder is the process that holds its container; nil for a drive's.
	holder *tierproc.Proc
	procs  []*tierproc.Proc
	// site, for a web workload, is asked for the Tiers of its pages.
	site string
	// read reads its counters; nil when it answers none.
	read func(ctx context.Context) (appservers.Reading, error)
	// probe asks a drive's target whether it answers, when it answers no
	// counters; nil for a server the run started (its process says).
	probe      func(ctx context.Context) error
	start, end appservers.Reading
	ended      bool

	mu   sync.Mutex
	died error
	// last is its latest reading while the drive runs (poll), kept for
	// when it cannot answer at the end.
	last    appservers.Reading
	hasLast bool
}

// keep records a reading taken while the drive runs.
func (a *appServer) keep(r appservers.Reading) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last, a.hasLast = r, true
}

// reading is its reading at the end or, when it gave none (it died), its
// last one; partial in that case.
func (a *appServer) reading() (r appservers.Reading, partial, ok bool) {
	if a.ended {
		return a.end, false, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last, true, a.hasLast
}

// markDied records the server's death; true the first time.
func (a *appServer) markDied(err error) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.died != nil {
		return false
	}
	a.died = err
	return true
}

func (a *appServer) death() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.died
}

// counters are what happened in the server's container between the
// readings (to its last one when it died: partial); nil when it had
// none.
func (a *appServer) counters() (_ []workload.EntityStats, partial bool) {
	r, partial, ok := a.reading()
	if !ok {
		return nil, false
	}
	return appservers.Since(r.Decode(), a.start.Decode()), partial
}

// serverName names server i of several.
func serverName(i int) string { return fmt.Sprintf("app server %d", i+1) }

// countersTimeout bounds one reading of a server's counters.
const countersTimeout = 10 * time.Second

// businessCounters reads a business tier's counters over conn.
func businessCounters(conn *remote.Conn) func(context.Context) (appservers.Reading, error) {
	return func(ctx context.Context) (appservers.Reading, error) {
		var r appservers.Reading
		ctx, cancel := context.WithTimeout(ctx, countersTimeout)
		defer cancel()
		b, err := remote.Counters(ctx, conn)
		if err != nil {
			return r, err
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return r, fmt.Errorf("a business tier's counters: %w", err)
		}
		return r, nil
	}
}

// siteCounters reads a site's counters at base (with token, when set).
func siteCounters(base, token string) func(context.Context) (appservers.Reading, error) {
	return func(ctx context.Context) (appservers.Reading, error) {
		var r appservers.Reading
		ctx, cancel := context.WithTimeout(ctx, countersTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+appservers.EntitiesPath, nil)
		if err != nil {
			return r, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return r, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return r, fmt.Errorf("%s%s: %s", base, appservers.EntitiesPath, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return r, fmt.Errorf("%s%s: %w", base, appservers.EntitiesPath, err)
		}
		return r, nil
	}
}

// refuseAppServers refuses --app-servers N>1 (and --balancer) for a
// workload whose middle tier cannot be served as processes.
func (r *Runner) refuseAppServers(cfg config.Run, w workload.Workload) error {
	if cfg.Servers() == 1 {
		if cfg.Balancer != "" {
			return config.Usage(fmt.Errorf("--balancer %s stands in front of several app servers: give --app-servers N (2 or more)", cfg.Balancer))
		}
		return nil
	}
	switch w.(type) {
	case workload.Served, workload.Web:
		// Stock-Online's business tier, RUBiS's and TPC-App's sites: each
		// served by `tierbench serve`, each checked from here.
		return nil
	}
	return config.Usage(fmt.Errorf("--app-servers %d: %s cannot be served as processes yet: its terminals call its domains' session beans (orders, manufacturing, supplier) in the run's own process, with no remote interface to call them over (there is no `tierbench serve %s`), and its purchase-order check compares the database with what the run's own dispatch sent and the Supplier Emulator received (a PO a rolled-back transaction sent is told from a lost one only there), which no checker reading the database alone can do; the workloads that run over several app servers: rubis, stockonline, tpcapp", cfg.AppServers, cfg.Workload, cfg.Workload))
}

// startBroker starts the NATS server the app servers' invalidations
// cross, when a type's coherence needs one and no --coherence-broker
// names one, and gives its URL to the servers (cfg).
func (t *tieredRun) startBroker(ctx context.Context, cfg *config.Run, entities map[string]container.Settings, dir string) error {
	if cfg.Servers() < 2 || cfg.CoherenceBroker != "" || !anyInvalidates(entities) {
		return nil
	}
	b, err := t.embeddedNATS(ctx, filepath.Join(dir, "coherence-nats"), "invalidations")
	if err != nil {
		return err
	}
	t.broker = b
	cfg.CoherenceBroker = b.URL()
	return nil
}

// embeddedNATS starts a NATS server with JetStream storing in dir, for
// the app servers' what, and says so.
func (t *tieredRun) embeddedNATS(ctx context.Context, dir, what string) (*messaging.Broker, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b, err := messaging.Open(ctx, "", dir)
	if err != nil {
		return nil, fmt.Errorf("start the NATS server of the app servers' %s: %w", what, err)
	}
	if t.log != nil {
		fmt.Fprintf(t.log, "started the NATS server of the app servers' %s: %s\n", what, b.URL())
	}
	return b, nil
}

// startQueues starts the NATS server whose queues the app servers'
// agents share (TPC-App's shipping and inventory), when the workload has
// such queues and its options name no broker, and gives its URL to the
// servers (cfg's options). Each server's own embedded one would keep its
// queues to itself: a server that died would take the orders it queued.
func (t *tieredRun) startQueues(ctx context.Context, cfg *config.Run, dir string) error {
	q, ok := workload.OptionsOf(*cfg).(workload.Queued)
	if cfg.Servers() < 2 || !ok || q.QueueBroker() != "" {
		return nil
	}
	b, err := t.embeddedNATS(ctx, filepath.Join(dir, "queues-nats"), "queues")
	if err != nil {
		return err
	}
	t.queues = b
	cfg.Options = q.WithQueueBroker(b.URL())
	return nil
}

// startBalancer puts haproxy in front of the servers and measures what it
// costs a request: the same empty request (the site's health check, the
// business tier's Ping) direct to the first server and through haproxy,
// alternately.
func (t *tieredRun) startBalancer(ctx context.Context, dir string, protocol remote.Protocol, web bool) (string, error) {
	var hostports []string
	for _, sv := range t.servers {
		u, err := url.Parse(sv.url)
		if err != nil {
			return "", err
		}
		hostports = append(hostports, u.Host)
	}
	o := balancer.Options{Dir: dir, Servers: hostports, H2: !web && protocol == remote.GRPC, Log: t.log}
	if !o.H2 {
		o.HealthPath = server.HealthPath
	}
	h, err := balancer.Start(ctx, o)
	if err != nil {
		return "", err
	}
	t.balancer = h
	front := h.URL
	if !web {
		front = remote.URL(protocol, strings.TrimPrefix(h.URL, "http://"))
	}
	t.balanced = &result.Balancer{Kind: config.Balancers, Version: h.Version, PID: h.PID(), URL: front}
	if t.log != nil {
		fmt.Fprintf(t.log, "started haproxy: pid %d, %s, its configuration %s\n", h.PID(), front, filepath.Join(dir, "haproxy.cfg"))
	}
	direct, through, closeProbe, err := balancerProbes(ctx, t.servers[0].url, front, t.token, protocol, web)
	if err != nil {
		return "", err
	}
	defer closeProbe()
	t.balanced.Probe, err = probeCost(ctx, direct, through)
	return front, err
}

// balancerProbes are the empty request direct to the first server and through the
// front.
func balancerProbes(ctx context.Context, first, front, token string, protocol remote.Protocol, web bool) (direct, through func(context.Context) error, closeAll func(), err error) {
	if web {
		get := func(base string) func(context.Context) error {
			return func(ctx context.Context) error {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+server.HealthPath, nil)
				if err != nil {
					return err
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				return nil
			}
		}
		return get(first), get(front), func() {}, nil
	}
	a, _, err := dialTier(ctx, "app server", first, token, 1)
	if err != nil {
		return nil, nil, nil, err
	}
	b, _, err := dialTier(ctx, "balancer", front, token, 1)
	if err != nil {
		a.Close()
		return nil, nil, nil, err
	}
	ping := func(c *remote.Conn) func(context.Context) error {
		return func(ctx context.Context) error { return remote.Ping(ctx, c) }
	}
	return ping(a), ping(b), func() { a.Close(); b.Close() }, nil
}

// probeRequests is how many requests each way the balancer's probe sends.
const probeRequests = 200

// probeCost sends probeRequests requests each way, alternately, and
// reports the medians and their difference.
func probeCost(ctx context.Context, direct, through func(context.Context) error) (result.BalancerProbe, error) {
	var d, th []time.Duration
	timed := func(f func(context.Context) error) (time.Duration, error) {
		start := time.Now()
		err := f(ctx)
		return time.Since(start), err
	}
	for range probeRequests {
		x, err := timed(direct)
		if err != nil {
			return result.BalancerProbe{}, fmt.Errorf("the balancer's probe, direct: %w", err)
		}
		y, err := timed(through)
		if err != nil {
			return result.BalancerProbe{}, fmt.Errorf("the balancer's probe, through haproxy: %w", err)
		}
		d, th = append(d, x), append(th, y)
	}
	slices.Sort(d)
	slices.Sort(th)
	us := func(t time.Duration) float64 { return float64(t.Microseconds()) }
	p := result.BalancerProbe{Requests: probeRequests, DirectP50Us: us(d[len(d)/2]), ThroughP50Us: us(th[len(th)/2])}
	p.CostP50Us = p.ThroughP50Us - p.DirectP50Us
	return p, nil
}

// readStart reads every server's counters as the drive starts. A
// server the run started must answer; a drive's target that does not
// (another implementation, an older tierbench) has none.
func (t *tieredRun) readStart(ctx context.Context, tolerant bool) error {
	for _, sv := range t.servers {
		if sv.read == nil {
			continue
		}
		var err error
		if sv.start, err = sv.read(ctx); err != nil {
			if tolerant {
				sv.read = nil
				continue
			}
			return fmt.Errorf("read %s's container counters: %w", sv.name, err)
		}
	}
	return nil
}

// readEnd reads the live servers' counters as the drive ends; a server
// that cannot answer has none (its death says why).
func (t *tieredRun) readEnd(ctx context.Context) {
	for _, sv := range t.servers {
		if sv.read == nil || sv.death() != nil {
			continue
		}
		if end, err := sv.read(ctx); err == nil {
			sv.end, sv.ended = end, true
		}
	}
}

// pollInterval is how often a server's counters are read while the
// drive runs: what a server that dies keeps of them.
const pollInterval = time.Second

// deadAfter is how many readings (or probes) in a row a drive's target
// fails before it counts as dead: a process the run started says so
// itself, a target elsewhere only by not answering.
const deadAfter = 3

// poll reads sv's counters every pollInterval until quit, keeping the
// latest; a drive's target (no process of the run's) that fails
// deadAfter in a row is reported to down.
func (t *tieredRun) poll(sv *appServer, quit <-chan struct{}, down func(error)) {
	ask := sv.probe
	if sv.read != nil {
		ask = func(ctx context.Context) error {
			r, err := sv.read(ctx)
			if err == nil {
				sv.keep(r)
			}
			return err
		}
	}
	if ask == nil {
		return
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	failed := 0
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
		}
		if sv.death() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), countersTimeout)
		err := ask(ctx)
		cancel()
		if err == nil {
			failed = 0
			continue
		}
		if failed++; failed >= deadAfter && len(sv.procs) == 0 && down != nil {
			down(fmt.Errorf("%s at %s stopped answering (%d requests in a row failed, %v apart): %w", sv.name, sv.url, failed, pollInterval, err))
			return
		}
	}
}

// watch marks a server whose process died, or a drive's target that
// stopped answering, as down, moving its terminals to the others, until
// quit; the run ends (stop) only when none is left, or with one server as
// before (watchProcs), or when the balancer dies. Meanwhile each server's
// counters are read every pollInterval.
func (t *tieredRun) watch(quit <-chan struct{}, stop context.CancelCauseFunc) {
	if t.balancer != nil {
		go func() {
			select {
			case <-t.balancer.Done():
				stop(tierDied{fmt.Errorf("haproxy (pid %d, %s) died", t.balancer.PID(), t.balancer.URL)})
			case <-quit:
			}
		}()
	}
	if len(t.servers) < 2 {
		for _, sv := range t.servers {
			go t.poll(sv, quit, nil) // one target lost: the watchdog's
		}
		watchProcs(t.procs, quit, stop)
		return
	}
	var left atomic.Int32
	left.Store(int32(len(t.servers)))
	for i, sv := range t.servers {
		down := func(err error) {
			if !sv.markDied(err) {
				return
			}
			if sp := appservers.Of(t.Run); sp != nil {
				sp.Down(i)
			}
			if left.Add(-1) == 0 {
				stop(tierDied{fmt.Errorf("every app server died; the last: %w", err)})
			}
		}
		go t.poll(sv, quit, down)
		for _, p := range sv.procs {
			go func() {
				select {
				case <-p.Done():
					down(p.Died())
				case <-quit:
				}
			}()
		}
	}
}

// FirstFailures are the clients' first failures, when they keep them.
func (t *tieredRun) FirstFailures() []string {
	if ff, ok := t.Run.(firstFailed); ok {
		return ff.FirstFailures()
	}
	return nil
}

// deaths are the servers that died under the run, when it went on with
// the others.
func (t *tieredRun) deaths() error {
	if len(t.servers) < 2 {
		return nil
	}
	var errs []error
	for _, sv := range t.servers {
		if err := sv.death(); err != nil {
			errs = append(errs, err) // it names the server's process
		}
	}
	return errors.Join(errs...)
}

// database is what the servers' statements cost the database between
// the readings, summed; false when no server answered both.
func (t *tieredRun) database() (store.Stats, bool) {
	var all []store.Stats
	for _, sv := range t.servers {
		if r, _, ok := sv.reading(); ok {
			all = append(all, r.Database.Sub(sv.start.Database))
		}
	}
	return appservers.SumDatabase(all...), len(all) > 0
}

// entities are the servers' counters merged: a sum per type per counter.
func (t *tieredRun) entities() []workload.EntityStats {
	var all [][]workload.EntityStats
	for _, sv := range t.servers {
		if c, _ := sv.counters(); c != nil {
			all = append(all, c)
		}
	}
	if len(all) == 0 {
		return nil
	}
	return appservers.Merge(all...)
}

// serverInputs are each server apart, for a result over several.
func (t *tieredRun) serverInputs() []result.ServerInputs {
	if len(t.servers) < 2 {
		return nil
	}
	var served []int64
	how := "operations"
	if sp := appservers.Of(t.Run); sp != nil {
		served = sp.Served()
	} else if t.requests != nil {
		served, how = t.requests, "requests"
	}
	var out []result.ServerInputs
	for i, sv := range t.servers {
		in := result.ServerInputs{Name: sv.name, URL: sv.url, Counted: how}
		in.Entities, in.Partial = sv.counters()
		in.Partial = in.Partial && in.Entities != nil
		if r, _, ok := sv.reading(); ok {
			in.Replicas = r.Database.Sub(sv.start.Database).Replicas
		}
		if sv.holder != nil {
			in.PID = sv.holder.PID()
		}
		if i < len(served) {
			in.Served = served[i]
		}
		if err := sv.death(); err != nil {
			in.Died = err.Error()
		}
		out = append(out, in)
	}
	return out
}
