package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
)

// Workload is one benchmark application.
type Workload interface {
	Info() Info
	// Load drops and recreates the schema and populates it.
	Load(ctx context.Context, db *store.DB, p LoadParams) (LoadReport, error)
	// Start readies a run against a loaded database: prepares statements
	// and takes whatever baseline its consistency checks need.
	Start(ctx context.Context, db *store.DB, p RunParams) (Run, error)
}

// Info describes a workload; `tierbench workloads` prints it.
type Info struct {
	Name      string
	Title     string
	Reference string
	// Operations are the workload's transaction types; an operation's index
	// here is its id in Steps and results.
	Operations []string
	Mix        Mix
	Metric     Metric
	Defaults   config.Defaults
	// Persistence lists the strategies this workload implements.
	Persistence []container.Persistence
	// Entities are the workload's entity types, for the container
	// persistence strategies.
	Entities []*container.Type
	// Grouped: the workload's Run brings its own terminal groups (see
	// Grouped); --clients and --think-time do not apply.
	Grouped bool
	// Validity are the rules a run must meet to count (ECperf's response
	// times and mix); nil when the reference has none.
	Validity *Validity
	// Options are the workload's own settings at their defaults (its
	// options.go); nil: none.
	Options Options
	// Example are flags of a run that show the workload's own, for the
	// examples of `run WORKLOAD --help` ("--ir 2 --po-dispatch queue").
	Example string
}

// Validity rules of a run, judged over the steady state.
type Validity struct {
	ResponseTimes []ResponseTime
	// Mix: the named operations' shares of their sum must each be within
	// MixTolerance (relative) of Percent.
	Mix          []Share
	MixTolerance float64
}

// ResponseTime bounds the Quantile of each named operation's latency.
type ResponseTime struct {
	Ops      []string
	Quantile float64
	Max      time.Duration
}

// Share is the target share of a mix, in percent, of one operation or of
// several counted together (ECperf's ChangeOrder includes its cancels).
type Share struct {
	Ops     []string
	Percent float64
}

// Metric is the workload's headline figure: completed transactions of the
// named operations (all when Ops is empty) per Per of steady state.
type Metric struct {
	Name string
	Ops  []string
	Per  time.Duration
	// PerAppServer: the reference also reports the metric divided by the
	// app servers (TPC-App's second primary metric, SIPS per application
	// server): the result's summary.sips_per_app_server.
	PerAppServer bool
}

// LoadParams for Load.
type LoadParams struct {
	Scale int
	// Common are the run's settings common to the workloads (Options left
	// out).
	Common config.Run
	// Options are the workload's own (TPC-App's --item-images, --indexes).
	Options Options
	// Seed makes the population reproducible.
	Seed uint64
}

// LoadReport says what Load wrote.
type LoadReport struct {
	Rows int64
	// Bytes are the large objects written besides the rows' ordinary
	// columns (TPC-App's item images); 0 when the workload has none.
	Bytes int64
	// BytesTime is how long the table holding them took to write: their
	// rate, apart from the other tables' and the indexes'.
	BytesTime time.Duration
	Tables    map[string]int64
	Duration  time.Duration
}

// RunParams for Start.
type RunParams struct {
	Scale       int
	Persistence container.Persistence
	// Entities are the container's settings by entity type, resolved
	// (nil for direct persistence).
	Entities map[string]container.Settings
	// SharedCache holds the state of the types whose coherence is shared
	// (nil when none is): NewContainer hands it to the container.
	SharedCache container.SharedCache
	// Common are the run's settings common to the workloads (its Options
	// left out: they are below).
	Common config.Run
	// Options are the workload's own (ECperf's --po-dispatch, --broker,
	// …), of the type of its Info.Options: read them with OptionsAs.
	Options Options
	// Dir is a directory the run may keep files in (the embedded NATS
	// server's storage); it outlives the run.
	Dir string
	// Threads is the number of server threads (store.DB.Threads).
	Threads int
	// Listen serves a web workload's middle tier on a loopback port for
	// its own clients (`tierbench run`); the runner provides it. It
	// returns the base URL and a stop that lets requests under way finish.
	Listen func(http.Handler) (url string, stop func(context.Context) error, err error)
	// ServedEntities, when set, is given the container's counters by a
	// business tier served alone (ServeBusiness) on the entity container,
	// for serve's live metrics.
	ServedEntities func(read func() []EntityStats)
	// Attach, when set, is given each entity container the workload
	// makes, before it warms or serves: the run's coherence across app
	// servers attaches to it (see RunParams.NewContainer).
	Attach func(*container.Container)
}

// Web is implemented by a workload whose middle tier is a web site
// (RUBiS): besides running whole, it can be served alone (`tierbench
// serve`) and its emulated clients can drive any implementation of the
// site (`tierbench drive`).
type Web interface {
	Workload
	// Site readies the middle tier over db: its pages, and the checks of
	// the database after a run.
	Site(ctx context.Context, db *store.DB, p RunParams) (Site, error)
	// Browsers readies the emulated clients against the site at target
	// (a base URL). Their Run's Check has nothing to check: the site's
	// database is not theirs.
	Browsers(ctx context.Context, target string, p RunParams) (Run, error)
	// WebTier readies the pages alone over the business tier behind
	// business (a *remote.Conn to the workload's ServeBusiness).
	WebTier(ctx context.Context, business grpc.ClientConnInterface, p RunParams) (Front, error)
	// Checker reads db before a run whose site is served by other
	// processes, so that its Check verifies the database after it.
	Checker(ctx context.Context, db *store.DB, p RunParams) (Checker, error)
}

// BusinessTier is implemented by a workload whose business tier can be
// served alone over the remote layer (`tierbench serve`, `run --tiers`).
type BusinessTier interface {
	// ServeBusiness registers the business tier over db on s, each call
	// on one of p.Threads server threads; close releases what it holds,
	// after the server has stopped.
	ServeBusiness(ctx context.Context, db *store.DB, s grpc.ServiceRegistrar, p RunParams) (close func() error, err error)
}

// Front is a web tier served alone, over a business tier elsewhere: its
// pages, and the remote calls they made (a TieredRun's Tiers).
type Front interface {
	http.Handler
	TieredRun
	Close() error
}

// Served is implemented by a workload whose business tier can run in a
// process of its own, its clients in another (Stock-Online's session
// bean called remotely, as in the paper): `tierbench serve` serves it over
// the remote layer, `tierbench drive` and `run --tiers 2` run the
// terminals against it.
type Served interface {
	Workload
	BusinessTier
	// RemoteClients readies the terminals, calling the business tier over
	// conn (a *remote.Conn: its calls are counted into the Meter of the
	// call's context). The Run's Check has nothing to check (the database
	// is not the clients'); the Run is a TieredRun that reports its calls
	// by operation.
	RemoteClients(ctx context.Context, conn grpc.ClientConnInterface, p RunParams) (Run, error)
	// Checker reads db before a run, so that its Check verifies the
	// database after the run against what the remote clients saw.
	Checker(ctx context.Context, db *store.DB, p RunParams) (Checker, error)
}

// Checker verifies a database after a run against what the clients saw.
type Checker interface {
	Check(ctx context.Context, done Outcomes) ([]Check, error)
}

// Drainer is implemented by a Checker of a database that agents in the
// served processes still work on after the last operation (TPC-App's
// shipping and inventory): the runner calls Drain while those processes
// still serve, before it stops them; the checks come after.
type Drainer interface {
	Drain(ctx context.Context) error
}

// Site is a web workload's middle tier, served.
type Site interface {
	http.Handler
	// Check verifies the database after a run against what the clients
	// saw.
	Check(ctx context.Context, done Outcomes) ([]Check, error)
	// Close releases what the site holds (prepared statements, caches).
	Close() error
}

// Stopper is implemented by a Run with agents working beside the
// terminals (ECperf's PO senders, the Supplier Emulator). The runner calls
// Stop after the last operation and before the checks: it drains the work
// in flight, then releases everything the run started. Stop is called
// also when the run fails.
type Stopper interface {
	Stop(ctx context.Context) error
}

// StopStatus is implemented by a Stopper whose Stop can take a while
// (ECperf waits for purchase orders to be sent and delivered): what it is
// still waiting for, in a few words, for the progress line.
type StopStatus interface {
	StopStatus() string
}

// TieredRun is implemented by a Run whose middle tier is split: a web tier
// calling a business tier over the remote layer.
type TieredRun interface {
	Tiers() Tiers
}

// Tiers are how a run's middle tier was built and what its remote calls
// cost, per kind of page (every page the web tier served, ramps included).
type Tiers struct {
	Style string
	// Protocol: empty when no call crossed a process boundary.
	Protocol string
	// Transport: the socket the business tier was called over, "tcp" or
	// "unix" (a lean tier on the run's host); empty when not known (a
	// drive of tiers started apart).
	Transport string
	// Processes the run spanned: the driver's and the tiers'.
	Processes int
	Calls     []RemoteCalls
}

// RemoteCalls are the remote calls of one kind of page.
type RemoteCalls struct {
	Name  string
	Pages int64
	remote.Counts
}

// PartnerRun is implemented by a Run that calls external partner services
// (TPC-App's POV, PGE, ICE and SNE): what each counted, for the result.
// The runner asks after the run's Stop and checks.
type PartnerRun interface {
	Partners(ctx context.Context) []Partner
}

// Partner is one partner service's counters: the calls the run made to
// it (its own side) and, where the partner could be asked, the partner's.
type Partner struct {
	Name string
	// URL is where it answered; InProcess: the run started it itself.
	URL       string
	InProcess bool
	// Counts by name (requests, approved, …; for SNE also
	// notices_acknowledged and label_bytes), whole numbers.
	Counts map[string]int64
}

// EntityRun is implemented by a Run on the entity container.
type EntityRun interface {
	// EntityStats are the container's counters by entity type, in the
	// order of Info.Entities.
	EntityStats() []EntityStats
}

// ContainerStats are ctr's counters by entity type, in the order of its
// homes; none for a nil container (direct persistence).
func ContainerStats(ctr *container.Container) []EntityStats {
	if ctr == nil {
		return nil
	}
	var out []EntityStats
	for _, h := range ctr.Homes() {
		out = append(out, EntityStats{Name: h.Type().Name, Settings: h.Settings(), Stats: h.Stats()})
	}
	return out
}

// EntityStats are one entity type's settings and counters.
type EntityStats struct {
	Name     string
	Settings container.Settings
	Stats    container.Stats
}

// Run is a workload readied for one run.
type Run interface {
	// NewClient makes terminal id's session (id counts across groups);
	// group is the index of its group (0 when the run has one); rng is the
	// terminal's own stream for the workload's random choices.
	NewClient(group, id int, rng *rand.Rand) Client
	// Check verifies the database after the run against what the clients
	// saw.
	Check(ctx context.Context, done Outcomes) ([]Check, error)
}

// Outcomes are what the clients saw over the whole run, ramps included, by
// operation index: what the consistency checks compare the database with.
type Outcomes struct {
	Succeeded []int64
	// InDoubt are commits whose outcome is unknown (the connection was
	// lost after COMMIT was sent): each may or may not be in the database,
	// and a check must accept either and say how many it had to.
	InDoubt []int64
	// A drive spread over agents (drive --agents) knows a lost agent's
	// outcomes only up to its last report: those are in Succeeded and
	// InDoubt. After it, the lost agents' terminals may have committed
	// up to Unreported[op] more of each operation, plus one operation
	// each that was under way (LostTerminals, at most one in flight per
	// terminal), each of which may or may not be in the database. Nil and
	// 0 when no agent was lost: the checks stay exact. A Checker allows
	// for them when it implements LossReconciler.
	Unreported    []int64
	LostTerminals int64
}

// LossReconciler is a Checker whose checks allow for the commits a lost
// agent did not report (Outcomes.Unreported and LostTerminals), as its
// Outcomes.Reconcile does. A drive that lost an agent checks the database
// only with one (Stock-Online's so far).
type LossReconciler interface {
	Checker
	ReconcilesLostAgents()
}

// Reconcile judges a count that exceeds what the successful operations
// ops explain by extra: commits in doubt of ops and, when agents were
// lost, their unreported commits of ops and the operations their
// terminals had under way could explain some of it (each happened or
// not). note is for a check's detail ("" when nothing was uncertain).
func (o Outcomes) Reconcile(extra int64, ops ...int) (ok bool, note string) {
	var inDoubt, unreported int64
	for _, op := range ops {
		if op < len(o.InDoubt) {
			inDoubt += o.InDoubt[op]
		}
		if op < len(o.Unreported) {
			unreported += o.Unreported[op]
		}
	}
	if o.Unreported == nil && o.LostTerminals == 0 {
		return Reconcile(extra, inDoubt)
	}
	unreported += o.LostTerminals
	ok = extra >= 0 && extra <= inDoubt+unreported
	what := fmt.Sprintf("%d in doubt and up to %d unreported by lost agents (their %d terminals' operations under way included)", inDoubt, unreported, o.LostTerminals)
	if ok {
		return true, fmt.Sprintf("; %s, reconciled: %d of them committed", what, extra)
	}
	return false, fmt.Sprintf("; %s cannot explain %+d", what, extra)
}

// Reconcile judges a count that exceeds what the successful operations
// explain by extra, when inDoubt commits of unknown outcome could explain
// some of it: each either committed (one more) or did not. note is for a
// check's detail ("" when none was in doubt).
func Reconcile(extra, inDoubt int64) (ok bool, note string) {
	if inDoubt == 0 {
		return extra == 0, ""
	}
	ok = extra >= 0 && extra <= inDoubt
	if ok {
		return true, fmt.Sprintf("; %d in doubt, reconciled: %d of them committed", inDoubt, extra)
	}
	return false, fmt.Sprintf("; %d in doubt cannot explain %+d", inDoubt, extra)
}

// InDoubtOrZero is InDoubt, or zeros when there were none.
func (o Outcomes) InDoubtOrZero() []int64 {
	if o.InDoubt != nil {
		return o.InDoubt
	}
	return make([]int64, len(o.Succeeded))
}

// Client is one terminal's session with the middle tier. A client is used
// by one goroutine only.
type Client interface {
	// Do runs one operation of the plan as one transaction. It returns nil
	// on success, a *BusinessError for an outcome the workload's rules
	// expect, or another error (retryable ones are classified by store).
	Do(ctx context.Context, step Step) error
}

// Chooser is a Client that chooses its own operations (a Chosen mix):
// before each, the driver asks it what to do next and how long to pause
// first. RUBiS's browser walks the original client's Markov chain, which
// follows the pages it receives, so only the client can know.
type Chooser interface {
	Client
	// Next is the operation to run next and the pause (think time) before
	// it.
	Next() (op int, pause time.Duration)
}

// Step is one operation in a terminal's plan.
type Step struct {
	Op int
	// Pair links the two operations of a pair within one deck (the k-th
	// Buy and the k-th Sell share Pair k); -1 when unpaired. The workload
	// keeps what the first of the pair chose for the second.
	Pair int
	// Thread is the server thread admitted to run the step, in [0, threads):
	// no other step runs on it meanwhile, so the workload may use that
	// thread's database session (store.DB.Thread) without locking.
	Thread int
	// Delay is the card's delay in a sequence (the driver schedules by it).
	Delay time.Duration
}

// Check is one consistency check's verdict.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// NewContainer makes the run's entity container of types over db, with
// the run's settings (Entities), its shared cache, and attached to the
// run's coherence across app servers (Attach), before it warms or
// serves: workloads make theirs through it, so that a container never
// serves unattached.
func (p RunParams) NewContainer(ctx context.Context, db *store.DB, types []*container.Type) (*container.Container, error) {
	ctr, err := container.New(ctx, db, types, p.Entities)
	if err != nil {
		return nil, err
	}
	if p.SharedCache != nil {
		ctr.UseSharedCache(p.SharedCache)
	}
	if p.Attach != nil {
		p.Attach(ctr)
	}
	return ctr, nil
}
