// Package runner executes a configured run end to end: open the database,
// (re)populate it, ready the workload, drive it, check consistency and
// assemble the result. The CLI and sweeps call it; it prints nothing.
//
// runner sits between the CLI and everything else: it depends on config,
// store, workload, driver, metrics and result, and nothing but the CLI
// depends on it.
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/agent"
	"github.com/tierbench/tierbench/internal/appservers"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/hosts"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/threshold"
	"github.com/tierbench/tierbench/internal/tierproc"
	"github.com/tierbench/tierbench/internal/workload"
)

// Runner holds what every run needs from main.
type Runner struct {
	Backends  *store.Backends
	Workloads *workload.Registry
	Version   string
	// Started, when set, is called once the driver starts, so a caller can
	// show progress until Run returns.
	Started func(Progress)
	// TierLog receives what the run's tiers write to their standard
	// error (--tiers 2 or 3), each line prefixed with the tier's name;
	// nil: discarded (their last lines still explain a tier's death).
	TierLog io.Writer
	// Notes receives a line on what a run starts for itself besides its
	// tiers (the private PostgreSQL server of --placement); nil:
	// discarded.
	Notes io.Writer
	// Abortable, when set, is given once a run or drive has begun (its
	// database open, its target reached) a function that returns the
	// result as far as the run got, callable while it goes on: a second
	// interrupt keeps what was measured without waiting for the run.
	Abortable func(partial func() *result.Result)
	// Hosts is the plan of --placement hosts, made by the command line
	// before it re-executed the run on the driver's host (decision 0027).
	Hosts *hosts.Plan
}

// Progress lets a caller watch a run.
type Progress struct {
	Began time.Time
	// Completed counts finished operations and errors so far.
	Completed func() (ops, errors int64)
	// Total is the number of operations an iteration-bounded run will do;
	// zero for a timed run.
	Total    int64
	Duration time.Duration
	// Stage is what the run does after its clients are done ("draining:
	// 12 POs awaiting delivery", "checking the database"); empty while
	// they drive.
	Stage func() string
	// Recorder is the run's, for live metrics (Recorder.Live).
	Recorder *metrics.Recorder
	// Entities are the container's counters now; nil when the run has no
	// container in this process.
	Entities func() []workload.EntityStats
	// Agents, for a drive spread over agents (no Recorder here), are the
	// operations the agents completed and failed per operation, from the
	// seconds they reported so far.
	Agents func() []agent.LiveOp
}

// stageDraining is the progress stage while the workload's agents finish
// the work in flight.
const stageDraining = "draining"

// CheckTimeout bounds the consistency checks after a run.
const CheckTimeout = 5 * time.Minute

// DrainTimeout bounds the workload's drain of the work in flight after
// its clients stop (ECperf's deliveries); the workload's own budget is
// usually shorter and its status says what it waits for.
const DrainTimeout = 5 * time.Minute

// Config returns the workload's default configuration and its info.
func (r *Runner) Config(name string) (config.Run, workload.Info, error) {
	w, err := r.Workloads.Get(name)
	if err != nil {
		return config.Run{}, workload.Info{}, config.Usage(err)
	}
	info := w.Info()
	cfg := config.New(info.Name, info.Defaults)
	cfg.Options = info.Options
	return cfg, info, nil
}

// Load creates the schema and populates it.
func (r *Runner) Load(ctx context.Context, cfg config.Run) (workload.LoadReport, string, error) {
	if err := r.resolve(&cfg); err != nil {
		return workload.LoadReport{}, "", err
	}
	if err := refusePlacement(cfg, "load"); err != nil {
		return workload.LoadReport{}, "", err
	}
	w, err := r.validated(cfg)
	if err != nil {
		return workload.LoadReport{}, "", err
	}
	if err := fitsOnDisk(cfg, w.Info()); err != nil {
		return workload.LoadReport{}, "", err
	}
	db, err := r.open(ctx, cfg, w, false, useLoad)
	if err != nil {
		return workload.LoadReport{}, "", err
	}
	defer db.Close()
	rep, err := load(ctx, db, w, cfg)
	return rep, db.Version(), err
}

// load populates the database, marking it complete last: a load that stops
// half-way leaves it marked incomplete.
func load(ctx context.Context, db *store.DB, w workload.Workload, cfg config.Run) (workload.LoadReport, error) {
	if err := clearMarker(ctx, db, cfg.Workload); err != nil {
		return workload.LoadReport{}, err
	}
	rep, err := w.Load(ctx, db, workload.LoadParams{Scale: cfg.Scale, Seed: cfg.Seed, Common: common(cfg), Options: workload.OptionsOf(cfg)})
	if err != nil {
		return rep, fmt.Errorf("%w; the database is incomplete (a run with --no-load refuses it)", err)
	}
	// The marker goes in even when the load was interrupted at its very
	// end: what it says, the load did.
	return rep, writeMarker(context.WithoutCancel(ctx), db, cfg)
}

// Phases of a run, as a failure or an interruption names them.
const (
	phaseLoad   = "load"
	phaseStart  = "start"
	phaseRun    = "run"
	phaseDrain  = "drain"
	phaseChecks = "checks"
)

// Run performs one run. A run that got as far as opening its database
// returns its result, whatever happened next: checks that failed
// (Summary.Passed says so), an interruption (Summary.Interrupted), or a
// failure that cut it short (Summary.Failure, returned as the error too),
// so that the caller can always show and keep what was measured. A nil
// result means nothing ran: bad configuration, or a database that could
// not be opened.
func (r *Runner) Run(ctx context.Context, cfg config.Run) (*result.Result, error) {
	w, err := r.runnable(&cfg)
	if err != nil {
		return nil, err
	}
	separate := apart(cfg)
	info := w.Info()
	if cfg.Duration > 0 {
		cfg.Iterations = 0 // a timed run ignores the workload's default count
	}
	entities, err := entitySettings(cfg, info)
	if err != nil {
		return nil, config.Usage(err)
	}
	if err := fitsMemory(cfg, info); err != nil {
		return nil, err
	}
	if err := fitsOnDisk(cfg, info); err != nil {
		return nil, err
	}
	if r.Notes != nil && !info.Grouped && !isWeb(w) && cfg.ServerThreads > cfg.Clients {
		// Not an error (a sweep may pass the clients), but what the run
		// opens is not what --server-threads says.
		fmt.Fprintf(r.Notes, "note: --server-threads %d is more than --clients %d: at most %d transactions run at once, on %d database connections\n",
			cfg.ServerThreads, cfg.Clients, cfg.Clients, cfg.Clients+1)
	}
	var place *placed
	if cfg.Placement != "" {
		if place, err = r.place(ctx, &cfg); err != nil {
			return nil, err
		}
		// Last: the database closes, the tiers end and the checks run
		// before the server stops.
		defer place.stop()
	}
	if separate && cfg.DB.Temp {
		// The tiers are other processes: the fresh database is a file
		// they can open too.
		dir, err := os.MkdirTemp("", "tierbench-tiers-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.DB = store.DSN{Dialect: store.SQLite, Path: filepath.Join(dir, cfg.Workload+".db")}
	}
	db, err := r.open(ctx, cfg, w, separate, useRun)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := place.readSettings(ctx, db); err != nil {
		return nil, err
	}
	if cfg.NoLoad {
		if _, err := checkMarker(ctx, db, cfg, "--no-load"); err != nil {
			return nil, err
		}
	}
	shared, err := openShared(ctx, cfg, entities)
	if err != nil {
		return nil, err
	}
	defer shared.close()
	s := &state{r: r, cfg: cfg, info: info, db: db, began: time.Now(), web: isWeb(w) || separate, placed: place, shared: shared}
	first := phaseLoad
	if cfg.NoLoad {
		first = phaseStart
	}
	return s.begin(first).run(ctx, w, entities)
}

// runnable resolves cfg and gives its workload, or why the run cannot
// be.
func (r *Runner) runnable(cfg *config.Run) (workload.Workload, error) {
	if err := r.resolve(cfg); err != nil {
		return nil, err
	}
	w, err := r.validated(*cfg)
	if err != nil {
		return nil, err
	}
	return w, r.refuseAppServers(*cfg, w)
}

// state is one run under way: what a result needs, gathered as the run
// goes, so that a result can be built at whatever point it stops.
type state struct {
	r     *Runner
	cfg   config.Run
	info  workload.Info
	db    *store.DB
	began time.Time
	// web: the clients reach the middle tier over a socket (a web site,
	// a business tier in another process), whose server threads queue
	// them; the driver admits them all.
	web bool
	// checked is the database a drive reads for its checks alone (not
	// the one its tier runs on: that is in another process).
	checked *store.DB
	// target is the site a drive-only run drives (db is then nil).
	target string
	// share and startAt: the drive is one agent's part (DriveOptions).
	share   *driver.Share
	startAt time.Time

	loaded *workload.LoadReport
	groups []workload.Group
	rec    *metrics.Recorder
	before store.Stats
	rep    driver.Report
	checks []workload.Check
	ents   []workload.EntityStats
	tiers  *workload.Tiers
	// walk: the clients walked a transition table (RUBiS).
	walk *workload.WalkReport
	// partners are the run's partner services' counters.
	partners []workload.Partner
	// snap is the recorder's content once the driver has returned.
	snap *metrics.Snapshot
	// interruptedIn is the phase an interrupt stopped.
	interruptedIn string
	// procs are the tiers running as child processes (--tiers 2, 3).
	procs []*tierproc.Proc
	// tierDied: a tier died under the run, which then ended; its checks
	// still ran.
	tierDied error
	// serversDied: app servers died under the run, which went on with
	// the others.
	serversDied error
	// servers are the app servers of a run over several; balancer stood
	// in front of them.
	servers  []result.ServerInputs
	balancer *result.Balancer
	// tiersDB is what the tiers' statements cost, as they answered it.
	tiersDB *store.Stats
	// watched overrides the tier the watchdog watches (the database, or
	// the site a drive-only run drives).
	watched *tier
	// placed is the run's --placement: its private server, this process
	// pinned.
	placed *placed
	// cpu is the CPU time of the steady state (resources.go).
	cpu *result.ResourceInputs
	// shared is the run's shared cache (coherence shared), or nil.
	shared *sharedRun
	// dbCut is --partition-db-node's cut, once made.
	dbCut *dbCut

	// mu guards progress, which partial reads while the run goes on.
	mu       sync.Mutex
	progress reached
}

func (s *state) run(ctx context.Context, w workload.Workload, entities map[string]container.Settings) (*result.Result, error) {
	cfg, info, db := s.cfg, s.info, s.db
	if !cfg.NoLoad {
		failpoint.Hit(ctx, "load")
		rep, err := load(ctx, db, w, cfg)
		if err != nil {
			return s.fail(ctx, phaseLoad, fmt.Errorf("load %s: %w", info.Name, err),
				"nothing was measured; the database is incomplete (load it again, or run without --no-load)")
		}
		s.loaded = &rep
		s.reach(func(p *reached) { p.loaded, p.phase = &rep, phaseStart })
	}
	if err := db.AwaitReplicas(ctx, ReplicaCatchUp); err != nil {
		return s.fail(ctx, phaseStart, fmt.Errorf("replicas: %w", err), "nothing was measured")
	}
	dir, err := os.MkdirTemp("", "tierbench-run-")
	if err != nil {
		return s.fail(ctx, phaseStart, err, "nothing was measured")
	}
	defer os.RemoveAll(dir)
	var run workload.Run
	if apart(cfg) {
		run, err = s.startTiers(ctx, w, dir)
	} else {
		var cluster *clusterMember
		if cluster, err = joinCluster(ctx, cfg, entities); err != nil {
			return s.fail(ctx, phaseStart, err, "nothing was measured")
		}
		defer cluster.Close()
		p := params(cfg)
		p.Persistence, p.Entities, p.Dir, p.Listen, p.Attach = cfg.Persistence, entities, dir, listenLoopback, cluster.attach
		s.shared.attach(&p)
		run, err = w.Start(ctx, db, p)
	}
	if err != nil {
		return s.fail(ctx, phaseStart, fmt.Errorf("start %s: %w", info.Name, err), "nothing was measured")
	}
	return s.drive(ctx, run)
}

// drive runs the workload's clients to the end, stops its agents and
// checks the database (when the run has one).
func (s *state) drive(ctx context.Context, run workload.Run) (*result.Result, error) {
	cfg, info, db := s.cfg, s.info, s.db
	var err error
	// The run's agents stop before the checks, or, when the run fails on
	// the way, on return.
	stopAgents := func(context.Context) error { return nil }
	if st, ok := run.(workload.Stopper); ok {
		var once sync.Once
		var stopErr error
		stopAgents = func(ctx context.Context) error {
			once.Do(func() { stopErr = st.Stop(ctx) })
			return stopErr
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DrainTimeout)
			defer cancel()
			stopAgents(stopCtx)
		}()
	}

	dcfg := driver.Config{
		ServerThreads: s.serverThreads(),
		Iterations:    cfg.Iterations,
		Duration:      time.Duration(cfg.Duration),
		RampUp:        time.Duration(cfg.RampUp),
		RampDown:      time.Duration(cfg.RampDown),
		Seed:          cfg.Seed,
		MaxRetries:    cfg.Retries,
		Share:         s.share,
		StartAt:       s.startAt,
	}
	dcfg.Began = func(t time.Time) { s.reach(func(p *reached) { p.began, p.phase = t, phaseRun }) }
	s.groups = groupsOf(run, cfg, info)
	var stage atomic.Value // a string: what the run does once the driver is done
	from, to := s.share.Range(driver.Clients(s.groups))
	clients := to - from
	s.rec = metrics.NewRecorder(info.Operations, metrics.Shards(clients, len(info.Operations), driver.Threads(clients, dcfg.ServerThreads) < clients))
	if db != nil {
		s.before = db.Stats()
	}
	s.reach(func(p *reached) {
		p.groups, p.rec, p.before, p.dcfg, p.remote = s.groups, s.rec, s.before, dcfg, len(s.procs) > 0
		if er, ok := run.(workload.EntityRun); ok {
			p.entities = er.EntityStats
		}
	})
	if s.r.Started != nil {
		p := Progress{Began: time.Now(), Completed: s.rec.Completed, Duration: dcfg.Duration, Stage: func() string {
			st, _ := stage.Load().(string)
			if ss, ok := run.(workload.StopStatus); ok && st == stageDraining {
				return st + ": " + ss.StopStatus()
			}
			return st
		}}
		p.Recorder = s.rec
		if er, ok := run.(workload.EntityRun); ok {
			p.Entities = er.EntityStats
		}
		if dcfg.Duration == 0 {
			for _, g := range s.groups {
				p.Total += int64(g.Clients) * int64(cfg.Iterations) * int64(g.Mix.PerIteration())
			}
		}
		s.r.Started(p)
	}
	// The watchdog ends the run when the database stays lost; the driver
	// then stops as on an interrupt, and the result says why.
	driveCtx, stopDriving := context.WithCancelCause(ctx)
	defer stopDriving(nil)
	failpoint.Hit(ctx, "run")
	failed := func() int64 { _, f := s.rec.Completed(); return f }
	var watched tier
	switch {
	case s.watched != nil:
		watched = *s.watched
	case db != nil && len(s.procs) > 0:
		// The tiers' processes run the statements, so this pool never
		// loses a connection: the operations that fail make the watchdog
		// probe the database.
		watched = databaseTier(db)
		watched.lost = failed
	case db != nil:
		watched = databaseTier(db)
	default:
		watched = siteTier(s.target, failed)
	}
	if s.target != "" {
		// A drive reaches its tier only through the operations: when
		// they all fail while it answers, nothing else will tell.
		watched.succeeded = func() int64 { ops, f := s.rec.Completed(); return ops - f }
		if ff, ok := run.(firstFailed); ok {
			watched.samples = ff.FirstFailures
		}
	}
	watch := watchTier(driveCtx, watched, OutageGrace, failed, stopDriving)
	quitProcs := make(chan struct{})
	tiered, _ := run.(*tieredRun)
	if tiered != nil {
		tiered.watch(quitProcs, stopDriving)
	} else {
		watchProcs(s.procs, quitProcs, stopDriving)
	}
	meter := s.startCPUMeter(dcfg)
	stopLag := func() {}
	if db != nil {
		stopLag = db.SampleReplication(ctx)
	}
	healed := s.partition(driveCtx, &dcfg)
	dbHealed := s.partitionDBNode(driveCtx, &dcfg, cmp.Or(db, s.checked))
	s.rep, err = driver.Run(driveCtx, dcfg, s.groups, replicaTerminals(run, db), s.rec)
	healed()
	dbHealed()
	stopLag()
	s.cpu = meter.stop(s.rep)
	close(quitProcs)
	lost := watch.stop() // the tier gone for good
	if died := (tierDied{}); errors.As(context.Cause(driveCtx), &died) {
		// Not the user's doing: the run failed, but the database is
		// there, so it is drained and checked as any run's.
		s.tierDied = died.err
		s.rep.Interrupted = false
	} else if tiered != nil {
		// App servers that died while others went on: the run ran to
		// its end, and fails for them.
		s.serversDied = tiered.deaths()
	}
	if err != nil {
		return s.fail(ctx, phaseRun, err, "nothing was measured")
	}
	snap := s.rec.Snapshot()
	s.snap = &snap
	s.reach(func(p *reached) { p.rep, p.snap, p.phase = s.rep, &snap, phaseDrain })
	if lost != nil {
		s.rep.Interrupted = false // not the user's doing: a failure
		return s.fail(ctx, phaseRun, lost.err, lost.effect(s))
	}
	if ctx.Err() != nil {
		s.interruptedIn = phaseRun
	}

	// The drain ends early when the run was interrupted (or is, meanwhile);
	// the checks run even then, bounded: they are how a user learns the
	// database was left consistent.
	stage.Store(stageDraining)
	failpoint.Hit(ctx, "drain")
	drainCtx, cancelDrain := context.WithTimeout(ctx, DrainTimeout)
	err = stopAgents(drainCtx)
	cancelDrain()
	if err != nil && ctx.Err() == nil {
		return s.fail(ctx, phaseDrain, fmt.Errorf("stop %s's agents: %w", info.Name, err),
			"the work in flight was not drained; the checks did not run")
	}
	if ctx.Err() != nil && s.interruptedIn == "" {
		s.interruptedIn = phaseDrain
	}
	stage.Store("checking the database")
	s.reach(func(p *reached) { p.phase = phaseChecks })
	failpoint.Hit(ctx, "checks")
	checkCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CheckTimeout)
	defer cancel()
	s.checks, err = run.Check(checkCtx, workload.Outcomes{Succeeded: snap.Succeeded, InDoubt: snap.InDoubt})
	if err != nil {
		return s.fail(ctx, phaseChecks, fmt.Errorf("consistency checks could not run: %w", err),
			"whether the database is consistent is unknown")
	}
	if ctx.Err() != nil && s.interruptedIn == "" {
		s.interruptedIn = phaseChecks
	}
	if er, ok := run.(workload.EntityRun); ok {
		s.ents = er.EntityStats()
	}
	if pr, ok := run.(workload.PartnerRun); ok {
		s.partners = pr.Partners(checkCtx)
	}
	if tiered != nil {
		s.ents, s.servers, s.balancer = tiered.entities(), tiered.serverInputs(), tiered.balanced
		if d, ok := tiered.database(); ok {
			s.tiersDB = &d
		}
	}
	if tr, ok := run.(workload.TieredRun); ok && (tiered == nil || tiered.processes > 0) {
		t := tr.Tiers()
		s.tiers = &t
	}
	walker := run
	if t, ok := run.(*tieredRun); ok {
		walker = t.Run // the clients are this process's, the tiers not
	}
	if wr, ok := walker.(workload.WalkRun); ok {
		walk := wr.Walk()
		s.walk = &walk
	}
	if s.tierDied != nil {
		return s.fail(ctx, phaseRun, s.tierDied, fmt.Sprintf("the run was ended when the tier died, %.1f s into it; the operations that failed are counted as errors or in doubt, and the database was checked after", s.rep.Elapsed.Seconds()))
	}
	if s.serversDied != nil {
		moved := "the terminals of a server that died moved to the survivors at their next operation"
		if s.balancer != nil {
			moved = "the balancer took a server that died out of its rotation (its health check) and sent its requests to the others"
		}
		return s.fail(ctx, phaseRun, s.serversDied, "the run went on with the other app servers to its end: "+moved+"; the operations under way on it are counted as errors or in doubt, its counters are those of its last reading before it died, read every second (servers: its share, counters_partial), and the database was checked after")
	}
	return s.result(nil), nil
}

// firstFailed is a run that keeps its clients' first failures' messages
// (a web workload's: the request and the status), for the error that
// ends a drive whose every operation fails.
type firstFailed interface{ FirstFailures() []string }

// fail ends the run with a failure in phase: the result holds what was
// measured until then, and err is returned beside it. An interrupt that
// caused the failure (a cancelled load, …) is an interruption instead.
func (s *state) fail(ctx context.Context, phase string, err error, effect string) (*result.Result, error) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		s.interruptedIn = phase
		return s.result(nil), nil
	}
	f := &result.Failure{Phase: phase, At: time.Now().UTC().Truncate(time.Millisecond), Error: err.Error(), Effect: effect}
	if !s.rep.Started.IsZero() {
		at := math.Round(time.Since(s.rep.Started).Seconds()*10) / 10
		f.AtS = &at
	}
	return s.result(f), err
}

// result builds the run's result from what the state holds.
func (s *state) result(f *result.Failure) *result.Result {
	started := s.rep.Started
	if started.IsZero() {
		started = s.began
	}
	var snap metrics.Snapshot
	if s.snap != nil {
		snap = *s.snap
	}
	cfg, env := s.cfg, environment(cmp.Or(s.db, s.checked), s.target)
	s.dbCut.environment(&env)
	if s.placed != nil {
		// The server was the run's own and is gone: its database is none
		// a later run could name, and the config runs again as given.
		cfg.DB = store.DSN{}
		s.placed.environment(&env)
	}
	return result.Build(result.Inputs{
		Version:       s.r.Version,
		Config:        cfg,
		Info:          s.info,
		Environment:   env,
		Load:          s.loaded,
		Started:       started,
		Elapsed:       s.rep.Elapsed,
		Window:        s.rep.Window,
		Interrupted:   s.rep.Interrupted || s.interruptedIn != "",
		InterruptedIn: s.interruptedIn,
		Snapshot:      snap,
		Queued:        s.serverThreads() > 0 && s.serverThreads() < driver.Clients(s.groups),
		Database:      s.database(),
		Checks:        s.checks,
		Entities:      s.ents,
		Tiers:         s.tiers,
		Groups:        s.groups,
		Failure:       f,
		Resources:     s.cpu,
		Walk:          s.walk,
		Partners:      s.partners,
		Servers:       s.servers,
		Balancer:      s.balancer,
	})
}

// serverThreads is the driver's admission limit: --server-threads for an
// in-process middle tier; none for a web one, whose clients queue in the
// site (and, driving a remote site, in whatever it runs on).
func (s *state) serverThreads() int {
	if s.web {
		return 0
	}
	return s.cfg.ServerThreads
}

// database is what the run's statements cost the database: nothing known
// when the driver has no database.
func (s *state) database() store.Stats {
	// The tiers' statements are counted in their processes, which
	// answer them (tieredRun.database).
	if s.tiersDB != nil {
		// And a run's own since the drive began (its checks), as an
		// in-process run counts them.
		own := store.Stats{}
		if s.db != nil {
			own = s.db.Stats().Sub(s.before)
		}
		return appservers.SumDatabase(*s.tiersDB, own)
	}
	if s.db == nil || len(s.procs) > 0 {
		return store.Stats{}
	}
	return s.db.Stats().Sub(s.before)
}

// isWeb reports whether w's clients reach it over HTTP.
func isWeb(w workload.Workload) bool {
	_, ok := w.(workload.Web)
	return ok
}

// groupsOf is the run's terminal groups: its own (ECperf), or --clients
// terminals on the workload's mix, closed loop or with --think-time.
func groupsOf(run workload.Run, cfg config.Run, info workload.Info) []workload.Group {
	if g, ok := run.(workload.Grouped); ok {
		return g.Groups()
	}
	pacing := workload.Pacing{}
	if cfg.ThinkTime > 0 {
		pacing = workload.Pacing{Kind: workload.Think, Mean: time.Duration(cfg.ThinkTime)}
	}
	// Validate refused the run if the options' mix did not parse.
	mix, _ := workload.MixOf(info, workload.OptionsOf(cfg))
	return []workload.Group{{Name: "clients", Clients: cfg.Clients, Mix: mix, Pacing: pacing}}
}

// entitySettings resolves each entity type's container settings: the
// run's, the type's preset, then the user's --entity settings of it. Nil
// for direct persistence.
func entitySettings(cfg config.Run, info workload.Info) (map[string]container.Settings, error) {
	for _, e := range cfg.Entity {
		if !slices.ContainsFunc(info.Entities, func(t *container.Type) bool { return t.Name == e.Type }) {
			return nil, fmt.Errorf("--entity %s: %s has no entity type %s; it has %s", e, info.Name, e.Type, entityNames(info))
		}
	}
	if !cfg.Persistence.Container() {
		if len(cfg.Entity) > 0 {
			return nil, fmt.Errorf("--entity applies to the entity container; --persistence direct has none (use cmp, bmp or bmp-checked)")
		}
		return nil, nil
	}
	out := make(map[string]container.Settings)
	for _, t := range info.Entities {
		s, err := container.Resolve(cfg.Container(), t, cfg.Entity)
		if err != nil {
			return nil, err
		}
		out[t.Name] = s
	}
	if err := container.CheckReadMostly(info.Entities, out); err != nil {
		return nil, err
	}
	return out, nil
}

func entityNames(info workload.Info) string {
	var names []string
	for _, t := range info.Entities {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

// resolve readies cfg's options: decoded from the JSON cfg was read from
// (a coordinator's task) when it carries none, then applied to the
// common settings they stand for (ECperf's --ir is the scale).
func (r *Runner) resolve(cfg *config.Run) error {
	if cfg.Options == nil {
		w, err := r.Workloads.Get(cfg.Workload)
		if err != nil {
			return config.Usage(err)
		}
		if err := cfg.DecodeOptions(w.Info().Options); err != nil {
			return config.Usage(err)
		}
	}
	workload.OptionsOf(*cfg).Resolve(cfg)
	return nil
}

// common is cfg without its workload's options, which RunParams carry
// apart.
func common(cfg config.Run) config.Run {
	cfg.Options = nil
	return cfg
}

// params are the RunParams every kind of process gives its workload.
func params(cfg config.Run) workload.RunParams {
	return workload.RunParams{Scale: cfg.Scale, Common: common(cfg), Options: workload.OptionsOf(cfg), Threads: cfg.ServerThreads}
}

// Validate checks a configuration without running it: flags, values and
// the container settings of every entity type.
func (r *Runner) Validate(cfg config.Run) error {
	w, err := r.validated(cfg)
	if err != nil {
		return err
	}
	if _, err := entitySettings(cfg, w.Info()); err != nil {
		return config.Usage(err)
	}
	return nil
}

func (r *Runner) validated(cfg config.Run) (workload.Workload, error) {
	w, err := r.Workloads.Get(cfg.Workload)
	if err != nil {
		return nil, config.Usage(err)
	}
	info := w.Info()
	errs := cfg.Validate(info.Persistence)
	errs = append(errs, threshold.Validate(cfg.Thresholds, cfg.Workload, info.Operations)...)
	errs = append(errs, workload.OptionsOf(cfg).Validate(cfg)...)
	if len(errs) > 0 {
		return nil, config.Usage(errors.Join(errs...))
	}
	return w, nil
}

// threads is the database sessions a run needs: one per server thread
// (fewer when there are fewer clients, except for a web site, which
// serves whoever comes), plus the workload's agents'.
func threads(cfg config.Run, w workload.Workload) int {
	info := w.Info()
	agents := workload.OptionsOf(cfg).AgentThreads()
	if info.Grouped || isWeb(w) {
		return cfg.ServerThreads + agents
	}
	return driver.Threads(cfg.Clients, cfg.ServerThreads) + agents
}

// open opens cfg's database for a process that serves the middle tier,
// one session per server thread; with checksOnly, for one that only loads
// and checks it (the driver of --tiers 2|3 and of drive --db), whose
// statements all go over the shared session, while the tiers open their
// own pools. It holds the database's lock for u until it closes.
func (r *Runner) open(ctx context.Context, cfg config.Run, w workload.Workload, checksOnly bool, u use) (*store.DB, error) {
	iso := cfg.Isolation
	info := w.Info()
	n := threads(cfg, w)
	pool, others := n, 0
	if checksOnly {
		pool = 1
		if apart(cfg) {
			// The run's own tiers open their pools on the same server,
			// and each a connection that finds the run's lock; each app
			// server its own.
			others = (n + 2) * cfg.Servers()
		}
	}
	var ue *store.UsageError
	if cfg.DB.Dialect != store.SQLite {
		// The server's connection limit is read over one connection
		// first: a pool opened with too many would fail, part-way, on
		// its own.
		probe, err := r.Backends.Open(ctx, cfg.DB, store.Options{Isolation: iso})
		if errors.As(err, &ue) {
			return nil, config.Usage(ue.Err)
		}
		if err != nil {
			return nil, err
		}
		err = fitsConnectionLimit(ctx, probe, cfg, info, pool, others)
		probe.Close()
		if err != nil {
			return nil, err
		}
	}
	db, err := r.Backends.Open(ctx, cfg.DB, store.Options{
		// One connection per server thread: the middle tier never runs
		// more transactions at once than it has threads.
		Threads:    pool,
		Isolation:  iso,
		TableLocks: cfg.LockGranularity == store.TableLocks,
	})
	if errors.As(err, &ue) {
		return nil, config.Usage(ue.Err)
	}
	if err != nil {
		return nil, err
	}
	if err := lock(ctx, db, u, cfg.Workload); err != nil {
		db.Close()
		return nil, err
	}
	// A run whose tiers are its children attaches the replicas too
	// (decision 0045): it waits for them to replay the load, samples
	// their lag once for the run, and gives its clients the terminals
	// whose positions the remote calls carry; its tiers route the reads.
	if !checksOnly || u == useRun {
		if err := r.attachReplicas(ctx, db, cfg, checksOnly); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// fitsConnectionLimit refuses, before anything runs, a run that needs more
// connections than the server admits: it would fail part-way with "too many
// clients".
// fitsConnectionLimit checks that the server admits this process's pool
// (threads sessions and a shared one) and others, the pools of the run's
// tier processes, opened on the same server.
func fitsConnectionLimit(ctx context.Context, db *store.DB, cfg config.Run, info workload.Info, threads, others int) error {
	limit, how, err := db.ConnectionLimit(ctx)
	if err != nil || limit == 0 {
		return err
	}
	// And one shared connection for loading and checks, and one holding
	// the database's lock (lock.go).
	need := threads + 2 + others
	if need <= limit {
		return nil
	}
	parts := "one per server thread"
	if agents := workload.OptionsOf(cfg).AgentThreads(); agents > 0 {
		parts += fmt.Sprintf(" + %d for the workload's agents", agents)
	}
	parts += ", one shared, and one holding the database's lock"
	if others > 0 {
		parts = fmt.Sprintf("the tiers': %s; the run's own: %d for loading, checks and the lock", parts, threads+2)
	}
	return config.Usage(fmt.Errorf("--server-threads %d needs %d database connections (%s), but %s admits %d (%s): lower --server-threads, or raise the server's max_connections",
		cfg.ServerThreads, need, parts, db.Version(), limit, how))
}

// environment is the run's provenance: the database it ran on, or, for a
// drive-only run, the site it drove.
func environment(db *store.DB, target string) result.Environment {
	host, _ := os.Hostname()
	env := result.Environment{
		Target: target,
		Go:     runtime.Version(),
		CPUs:   runtime.NumCPU(),
		OS:     runtime.GOOS,
		Arch:   runtime.GOARCH,
		Host:   host,
	}
	if db != nil {
		env.DB, env.Isolation = db.Version(), string(db.Isolation())
		if db.TableLocks() {
			env.LockGranularity = string(db.LockGranularity())
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		env.Modules = make(map[string]string)
		for _, m := range bi.Deps {
			if strings.Contains(m.Path, "pgx") || strings.Contains(m.Path, "mysql") || strings.Contains(m.Path, "sqlite") || strings.Contains(m.Path, "hdrhistogram") {
				env.Modules[m.Path] = m.Version
			}
		}
	}
	return env
}
