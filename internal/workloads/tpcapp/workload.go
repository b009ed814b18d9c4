// Package tpcapp is TPC-App (TPC Benchmark App; Asskildt 2007, the seed
// ../shared/seeds/003_…): a retail distributor's application server
// receiving web-service requests from other businesses, with no think
// time, measured in service interactions per second (SIPS).
//
// Files, named as in every workload package: workload.go (the Workload,
// its operations, mix and defaults, and the wiring of the site and the
// run), schema/*.sql per dialect (tuned.sql: the seed's four indexes),
// read by load.go; population.go (cardinalities, values by hashing);
// mix.go; operations.go (the seven business methods' requests and
// results); service.go (the methods' logic and their calls to the
// partners), direct.go (their SQL), entities.go and beans.go (the same
// data on the entity container), pricing.go (totals); front.go (the web
// service: SOAP and JSON, and the caller the businesses use); shipping.go
// (the durable shipping and inventory processes); sessions.go and
// client.go (the emulated businesses); check.go. The external partners
// are package partner.
//
// tpcapp sees only the workload API, the store, messaging and partner.
package tpcapp

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp/partner"
)

// Workload is TPC-App.
type Workload struct{}

// New returns the workload for the registry.
func New() Workload { return Workload{} }

// callTimeout bounds one call to a partner: a partner that hangs fails the
// method instead of holding its server thread for ever.
const callTimeout = 30 * time.Second

// drainTimeout bounds Stop's wait for the background processes.
const drainTimeout = 2 * time.Minute

func (Workload) Info() workload.Info {
	return workload.Info{
		Name:       "tpcapp",
		Title:      "TPC-App: a retail distributor's application server for web-service requests from businesses",
		Reference:  "TPC Benchmark App; Asskildt (2007)",
		Operations: opNames[:],
		Mix:        mixOf(specMix),
		Metric:     workload.Metric{Name: "SIPS", Per: time.Second, PerAppServer: true},
		Defaults: config.Defaults{
			Clients:       10,
			ServerThreads: 10,
			Duration:      time.Minute,
			RampUp:        10 * time.Second,
			Persistence:   container.Direct,
		},
		Persistence: []container.Persistence{container.Direct, container.CMP, container.BMP, container.BMPChecked},
		Validity:    validity(),
		Entities:    entityTypes,
		Options:     DefaultOptions,
		Example:     "--front json --partner-delay none --duration 30s",
	}
}

// validity is our choice of response-time limits: the specification's
// table could not be read (docs/tpcapp.md). TPC-W's, its predecessor's:
// 90% of each method within 3 s, and CreateOrder, which waits for the
// payment gateway (500 ms by default), within 5 s.
func validity() *workload.Validity {
	names := func(ops ...int) []string {
		out := make([]string, len(ops))
		for i, op := range ops {
			out[i] = opNames[op]
		}
		return out
	}
	return &workload.Validity{ResponseTimes: []workload.ResponseTime{
		{Ops: names(NewCustomer, ChangePaymentMethod, OrderStatus, NewProducts, ProductDetail, ChangeItem), Quantile: 0.9, Max: 3 * time.Second},
		{Ops: names(CreateOrder), Quantile: 0.9, Max: 5 * time.Second},
	}}
}

// bytesPerScale is the loaded database per unit of scale without the
// images, measured on SQLite: 104 MB a unit with 1,000 images of 100 KiB
// in the rows.
const bytesPerScale = 1_800_000

// maxScale is ten times the seed's database.
const maxScale = 1_000

func (Workload) Load(ctx context.Context, db *store.DB, p workload.LoadParams) (workload.LoadReport, error) {
	return load(ctx, db, p, optionsOf(p.Options).loadOptions(p.Common.DB.String()))
}

// site is TPC-App's application server over a database: the business
// methods behind the web-service front, the partners they call (started
// in-process unless given), the shipping and inventory processes, and
// the checks' baseline.
type site struct {
	pop     population
	front   *Front
	methods Methods // the service, counting what it commits
	ship    *shipping
	checker *checker
	// beans: the methods run on the entity container; nil under direct.
	beans  *Beans
	inProc map[partner.Kind]*partner.Server
	// clients are the partners' clients, in-process or not.
	clients map[partner.Kind]*partner.Client
	// stopPartners ends the in-process partners' Serve; partnersDone
	// counts them until they have returned.
	partnersCtx  context.Context
	stopPartners context.CancelFunc
	partnersDone sync.WaitGroup
	runTag       string
	// delay is the in-process partners' response time, sneDelay SNE's.
	delay, sneDelay partner.Delay
	failRate        float64

	// linesCommitted are the order lines of the CreateOrders the service
	// committed.
	linesCommitted atomic.Int64

	closeOnce sync.Once
	closeErr  error
	drain     atomic.Pointer[string]
}

var _ workload.Web = Workload{}

// Site readies the application server over db.
func (Workload) Site(ctx context.Context, db *store.DB, p workload.RunParams) (workload.Site, error) {
	return newSite(ctx, db, p)
}

func newSite(ctx context.Context, db *store.DB, p workload.RunParams) (_ *site, err error) {
	cfg := optionsOf(p.Options)
	s := &site{pop: populationAt(p.Scale), inProc: make(map[partner.Kind]*partner.Server), failRate: cfg.PartnerFailRate}
	s.partnersCtx, s.stopPartners = context.WithCancel(context.Background())
	if s.delay, err = partner.ParseDelay(cfg.PartnerDelay); err != nil {
		return nil, err
	}
	if s.sneDelay, err = partner.ParseDelay(cmp.Or(cfg.SNEDelay, "none")); err != nil {
		return nil, err
	}
	var id [4]byte
	rand.Read(id[:])
	s.runTag = hex.EncodeToString(id[:])
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	urls := map[partner.Kind]string{partner.POV: cfg.POV, partner.PGE: cfg.PGE, partner.ICE: cfg.ICE, partner.SNE: cfg.SNE}
	clients := make(map[partner.Kind]*partner.Client)
	hc := &http.Client{Timeout: callTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: max(p.Threads, 1) + 2*max(cfg.ShippingAgents, 1)}}
	for _, k := range partner.Kinds {
		url := urls[k]
		if url == "" {
			if url, err = s.startPartner(k); err != nil {
				return nil, err
			}
		}
		if clients[k], err = partner.NewClient(k, url, hc); err != nil {
			return nil, fmt.Errorf("--%s: %w", k, err)
		}
		// A partner that does not answer would fail every call: better
		// said now.
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = clients[k].Stats(pctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("--%s %s: the %s does not answer: %w", k, url, k.Title(), err)
		}
	}
	var data Data
	if p.Persistence.Container() {
		ctr, err := p.NewContainer(ctx, db, entityTypes)
		if err != nil {
			return nil, err
		}
		s.beans = NewBeans(ctr)
		data = s.beans
	} else if data, err = NewDirect(ctx, db); err != nil {
		return nil, err
	}
	s.clients = clients
	s.methods = committed{Service: NewService(data, Partners{POV: clients[partner.POV], PGE: clients[partner.PGE]}), site: s}
	if s.checker, err = newChecker(ctx, db); err != nil {
		return nil, err
	}
	dir := p.Dir
	if dir == "" && cfg.Broker == "" {
		// Served alone (`tierbench serve`): the embedded broker keeps its
		// queues where the next serve of this database finds them.
		dir = filepath.Join(os.TempDir(), "tierbench-tpcapp-nats", dbTag(db.DSN().String()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	if s.ship, err = startShipping(ctx, db, clients[partner.ICE], clients[partner.SNE], messaging.Config{URL: cfg.Broker, StoreDir: dir, StreamReplicas: cfg.StreamReplicas}, !p.Common.NoLoad && p.Dir != "", max(cfg.ShippingAgents, 1),
		max(p.Threads, 1), "tpcapp-"+s.runTag); err != nil {
		return nil, err
	}
	s.front = NewFront(s.methods, p.Threads)
	return s, nil
}

// committed is the service, counting the lines of the orders it commits
// and kicking the shipping outbox's relay after each.
type committed struct {
	*Service
	site *site
}

func (c committed) CreateOrder(ctx context.Context, thread int, r CreateOrderRequest) (CreateOrderResult, error) {
	res, err := c.Service.CreateOrder(ctx, thread, r)
	if err == nil {
		c.site.linesCommitted.Add(int64(len(res.Order.Lines)))
		c.site.ship.kick()
	}
	return res, err
}

// EntityStats are the container's counters, when it runs the methods.
func (s *site) EntityStats() []workload.EntityStats {
	if s.beans == nil {
		return nil
	}
	return s.beans.EntityStats()
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.front.ServeHTTP(w, r) }

// startPartner serves one partner on a loopback port.
func (s *site) startPartner(k partner.Kind) (string, error) {
	delay := s.delay
	if k == partner.SNE {
		delay = s.sneDelay
	}
	srv, err := partner.New(partner.Config{Kind: k, Delay: delay, FailRate: s.failRate})
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.partnersDone.Add(1)
	go func() {
		defer s.partnersDone.Done()
		srv.Serve(s.partnersCtx, ln)
	}()
	s.inProc[k] = srv
	return "http://" + ln.Addr().String(), nil
}

// drainBacklog waits for the shipping and inventory processes to finish
// what was committed, up to drainTimeout.
func (s *site) drainBacklog(ctx context.Context) error {
	if s.ship == nil || s.checker == nil {
		return nil
	}
	return s.checker.drain(ctx, &s.drain, func() {
		s.ship.shipOut.Kick()
		s.ship.reorderOut.Kick()
	})
}

// drain waits for the backlog to be done, up to drainTimeout, saying
// what is left in status and kicking the relays (when kick is set)
// before each wait.
func (c *checker) drain(ctx context.Context, status *atomic.Pointer[string], kick func()) error {
	deadline := time.Now().Add(drainTimeout)
	for {
		b, err := c.backlog(ctx)
		if err != nil {
			return err
		}
		left := b.String()
		status.Store(&left)
		if b.empty() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the shipping and inventory processes did not finish in %v: %s", drainTimeout, b)
		}
		if kick != nil {
			kick()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain interrupted with %s: %w", b, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops the shipping and inventory processes and the partners
// without waiting for the backlog: it stays in the outboxes and the
// queues for the next start.
func (s *site) Close() error {
	s.closeOnce.Do(func() {
		ctx := context.Background()
		if s.ship != nil {
			s.closeErr = s.ship.close(ctx)
		}
		s.stopPartners() // each Serve shuts down gracefully, within 5 s
		s.partnersDone.Wait()
	})
	return s.closeErr
}

// Start readies a run: the site, served on a loopback port when the
// runner gives one (the emulated businesses then call it over HTTP in
// --front's protocol, as other businesses would), and the businesses.
func (w Workload) Start(ctx context.Context, db *store.DB, p workload.RunParams) (_ workload.Run, err error) {
	s, err := newSite(ctx, db, p)
	if err != nil {
		return nil, err
	}
	r := &run{site: s}
	defer func() {
		if err != nil {
			r.Stop(context.WithoutCancel(ctx))
		}
	}()
	methods := s.methods
	if p.Listen != nil {
		url, stop, err := p.Listen(s)
		if err != nil {
			return nil, err
		}
		r.stopFront = stop
		r.hc = callerClient(p.Common.Clients)
		methods = NewCaller(url, optionsOf(p.Options).Front, r.hc)
	}
	if r.ebs, err = newEBs(methods, p); err != nil {
		return nil, err
	}
	return r, nil
}

// callerClient is the emulated businesses' HTTP client: a connection per
// business kept alive, as a business's system would.
func callerClient(clients int) *http.Client {
	return &http.Client{Timeout: callTimeout, Transport: &http.Transport{MaxIdleConns: max(clients, 1), MaxIdleConnsPerHost: max(clients, 1)}}
}

// ebs are the emulated businesses' shared state.
type ebs struct {
	methods  Methods
	pop      population
	gen      gen
	sessions SessionLength
	runTag   string
}

func newEBs(methods Methods, p workload.RunParams) (*ebs, error) {
	sl, err := ParseSessionLength(optionsOf(p.Options).SessionLength)
	if err != nil {
		return nil, err
	}
	var id [4]byte
	rand.Read(id[:])
	return &ebs{methods: methods, pop: populationAt(p.Scale), gen: gen{seed: p.Common.Seed}, sessions: sl, runTag: hex.EncodeToString(id[:])}, nil
}

func (e *ebs) NewClient(_, id int, rng *mrand.Rand) workload.Client {
	return &eb{ebs: e, id: id, rng: rng}
}

// run is the site and its businesses in one process.
type run struct {
	*ebs
	site      *site
	stopFront func(context.Context) error
	hc        *http.Client
	stopOnce  sync.Once
	stopErr   error
}

var (
	_ workload.Stopper    = (*run)(nil)
	_ workload.StopStatus = (*run)(nil)
	_ workload.EntityRun  = (*run)(nil)
)

// StopStatus says what the drain waits for.
func (r *run) StopStatus() string {
	if s := r.site.drain.Load(); s != nil {
		return *s
	}
	return ""
}

// Stop waits for the shipping and inventory processes to finish what the
// run committed (up to drainTimeout), then stops the front and the site.
// What is left undone the checks report.
func (r *run) Stop(ctx context.Context) error {
	r.stopOnce.Do(func() {
		r.stopErr = r.site.drainBacklog(ctx)
		if r.stopFront != nil {
			r.stopErr = errors.Join(r.stopErr, r.stopFront(context.WithoutCancel(ctx)))
		}
		if r.hc != nil {
			r.hc.CloseIdleConnections()
		}
		r.stopErr = errors.Join(r.stopErr, r.site.Close())
	})
	return r.stopErr
}

var _ workload.PartnerRun = (*run)(nil)

// Partners are the partners' counters: an in-process partner's read from
// it, another's asked over HTTP (its counters then span every run it
// served); beside them what this run's agents counted of their calls.
func (r *run) Partners(ctx context.Context) []workload.Partner {
	s := r.site
	var out []workload.Partner
	for _, k := range partner.Kinds {
		c := s.clients[k]
		if c == nil {
			continue
		}
		p := workload.Partner{Name: string(k), URL: c.URL()}
		if srv := s.inProc[k]; srv != nil {
			p.InProcess, p.Counts = true, srv.Stats().Counts()
		} else {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := c.Stats(sctx)
			cancel()
			p.Counts = map[string]int64{}
			if err == nil {
				p.Counts = st.Counts()
			}
		}
		switch {
		case s.ship == nil:
		case k == partner.ICE:
			p.Counts["run_calls_failed"] = s.ship.iceFailures.Load()
		case k == partner.SNE:
			p.Counts["run_notices_acknowledged"] = s.ship.noticed.Load()
			p.Counts["run_notices_resent"] = s.ship.noticeResent.Load()
			p.Counts["run_calls_failed"] = s.ship.sneFailures.Load()
			p.Counts["run_label_bytes"] = s.ship.labelBytes.Load()
		}
		out = append(out, p)
	}
	return out
}

// EntityStats of a run are its site's.
func (r *run) EntityStats() []workload.EntityStats { return r.site.EntityStats() }

func (r *run) Check(ctx context.Context, done workload.Outcomes) ([]workload.Check, error) {
	return r.site.Check(ctx, done)
}

// Browsers are the emulated businesses alone, calling the site at target
// (`tierbench drive tpcapp`).
func (Workload) Browsers(ctx context.Context, target string, p workload.RunParams) (workload.Run, error) {
	hc := callerClient(p.Common.Clients)
	e, err := newEBs(NewCaller(target, optionsOf(p.Options).Front, hc), p)
	if err != nil {
		return nil, err
	}
	return &driven{ebs: e, hc: hc}, nil
}

// driven is a drive's businesses: the site's database is not theirs to
// check.
type driven struct {
	*ebs
	hc *http.Client
}

func (d *driven) Check(context.Context, workload.Outcomes) ([]workload.Check, error) { return nil, nil }

func (d *driven) Stop(context.Context) error {
	d.hc.CloseIdleConnections()
	return nil
}

// WebTier: TPC-App's application server is not split into tiers.
func (Workload) WebTier(context.Context, grpc.ClientConnInterface, workload.RunParams) (workload.Front, error) {
	return nil, errors.New("tpcapp's application server is one tier: it has no web tier apart")
}

// Checker reads db before a run whose sites are served by other
// processes (run --app-servers N), so that its Check verifies the
// database after it from outside: the sites' own counts (the lines they
// committed, what their agents and their in-process ICE did) are not
// read, the database's invariants are. Before the sites start, a fresh
// load's queues on a given --broker are emptied, as a run in one process
// does: an earlier run's messages name orders that no longer exist.
func (Workload) Checker(ctx context.Context, db *store.DB, p workload.RunParams) (workload.Checker, error) {
	if cfg := optionsOf(p.Options); !p.Common.NoLoad && cfg.Broker != "" {
		b, err := messaging.OpenWith(ctx, messaging.Config{URL: cfg.Broker, StreamReplicas: cfg.StreamReplicas})
		if err != nil {
			return nil, brokerError(err)
		}
		ship, reorder := queueNames(db.DSN().String())
		for _, q := range []string{ship, reorder} {
			if err = b.DeleteQueue(ctx, q); err != nil {
				break
			}
		}
		if err := errors.Join(err, b.CloseContext(ctx)); err != nil {
			return nil, err
		}
	}
	c, err := newChecker(ctx, db)
	if err != nil {
		return nil, err
	}
	return &outside{checker: c}, nil
}

// outside checks the database of sites served elsewhere.
type outside struct {
	*checker
	status atomic.Pointer[string]
}

var _ workload.Drainer = (*outside)(nil)

// Drain waits for the sites' shipping and inventory agents to finish
// what the run committed, while they still serve.
func (o *outside) Drain(ctx context.Context) error { return o.drain(ctx, &o.status, nil) }

func (o *outside) Check(ctx context.Context, done workload.Outcomes) ([]workload.Check, error) {
	return o.check(ctx, done, runFacts{outside: true})
}
