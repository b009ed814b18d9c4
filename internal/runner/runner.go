// Package runner executes a configured run end to end: open the database,
// (re)populate it, ready the workload, drive it, check consistency and
// assemble the result. The CLI and sweeps call it; it prints nothing.
//
// runner sits between the CLI and everything else: it depends on config,
// store, workload, driver, metrics and result, and nothing but the CLI
// depends on it.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
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
}

// stageDraining is the progress stage while the workload's agents finish
// the work in flight.
const stageDraining = "draining"

// CheckTimeout bounds the consistency checks after a run.
const CheckTimeout = 5 * time.Minute

// Config returns the workload's default configuration and its info.
func (r *Runner) Config(name string) (config.Run, workload.Info, error) {
	w, err := r.Workloads.Get(name)
	if err != nil {
		return config.Run{}, workload.Info{}, config.Usage(err)
	}
	info := w.Info()
	return config.New(name, info.Defaults), info, nil
}

// Load creates the schema and populates it.
func (r *Runner) Load(ctx context.Context, cfg config.Run) (workload.LoadReport, string, error) {
	cfg.Normalize()
	w, err := r.validated(cfg)
	if err != nil {
		return workload.LoadReport{}, "", err
	}
	db, err := r.open(ctx, cfg, w.Info())
	if err != nil {
		return workload.LoadReport{}, "", err
	}
	defer db.Close()
	rep, err := w.Load(ctx, db, workload.LoadParams{Scale: cfg.Scale, Seed: cfg.Seed})
	return rep, db.Version(), err
}

// Run performs one run. A run that ran returns its result even when checks
// failed (result.Summary.Passed says so); an error means the run could not
// be carried out.
func (r *Runner) Run(ctx context.Context, cfg config.Run) (*result.Result, error) {
	cfg.Normalize()
	w, err := r.validated(cfg)
	if err != nil {
		return nil, err
	}
	info := w.Info()
	if cfg.Duration > 0 {
		cfg.Iterations = 0 // a timed run ignores the workload's default count
	}
	db, err := r.open(ctx, cfg, w.Info())
	if err != nil {
		return nil, err
	}
	defer db.Close()

	var loaded *workload.LoadReport
	if !cfg.NoLoad {
		rep, err := w.Load(ctx, db, workload.LoadParams{Scale: cfg.Scale, Seed: cfg.Seed})
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", info.Name, err)
		}
		loaded = &rep
	}
	entities, err := entitySettings(cfg, info)
	if err != nil {
		return nil, config.Usage(err)
	}
	dir, err := os.MkdirTemp("", "tierbench-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	run, err := w.Start(ctx, db, workload.RunParams{
		Scale: cfg.Scale, Persistence: cfg.Persistence, Entities: entities, Warmup: cfg.Warmup,
		Config: cfg, Dir: dir, Threads: cfg.ServerThreads,
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", info.Name, err)
	}
	// The run's agents stop before the checks, or, when the run fails on
	// the way, on return.
	stopAgents := func(context.Context) error { return nil }
	if s, ok := run.(workload.Stopper); ok {
		var once sync.Once
		var stopErr error
		stopAgents = func(ctx context.Context) error {
			once.Do(func() { stopErr = s.Stop(ctx) })
			return stopErr
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CheckTimeout)
			defer cancel()
			stopAgents(stopCtx)
		}()
	}

	dcfg := driver.Config{
		ServerThreads: cfg.ServerThreads,
		Iterations:    cfg.Iterations,
		Duration:      time.Duration(cfg.Duration),
		RampUp:        time.Duration(cfg.RampUp),
		RampDown:      time.Duration(cfg.RampDown),
		Seed:          cfg.Seed,
		MaxRetries:    cfg.Retries,
	}
	groups := groupsOf(run, cfg, info)
	var stage atomic.Value // a string: what the run does once the driver is done
	clients := driver.Clients(groups)
	rec := metrics.NewRecorder(info.Operations, driver.Shards(clients))
	before := db.Stats()
	if r.Started != nil {
		p := Progress{Began: time.Now(), Completed: rec.Completed, Duration: dcfg.Duration, Stage: func() string {
			s, _ := stage.Load().(string)
			if st, ok := run.(workload.StopStatus); ok && s == stageDraining {
				return s + ": " + st.StopStatus()
			}
			return s
		}}
		if dcfg.Duration == 0 {
			for _, g := range groups {
				p.Total += int64(g.Clients) * int64(cfg.Iterations) * int64(g.Mix.PerIteration())
			}
		}
		r.Started(p)
	}
	rep, err := driver.Run(ctx, dcfg, groups, run, rec)
	if err != nil {
		return nil, err
	}
	snap := rec.Snapshot()

	// The checks run even after an interrupt: they are how a user learns
	// the database was left consistent.
	checkCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CheckTimeout)
	defer cancel()
	stage.Store(stageDraining)
	if err := stopAgents(checkCtx); err != nil {
		return nil, fmt.Errorf("stop %s's agents: %w", info.Name, err)
	}
	dbStats := db.Stats().Sub(before)
	stage.Store("checking the database")
	checks, err := run.Check(checkCtx, snap.Succeeded)
	if err != nil {
		return nil, fmt.Errorf("consistency checks could not run: %w", err)
	}
	var entityStats []workload.EntityStats
	if er, ok := run.(workload.EntityRun); ok {
		entityStats = er.EntityStats()
	}
	return result.Build(result.Inputs{
		Version:     r.Version,
		Config:      redacted(cfg),
		Info:        info,
		Environment: environment(db),
		Load:        loaded,
		Started:     rep.Started,
		Elapsed:     rep.Elapsed,
		Window:      rep.Window,
		Interrupted: rep.Interrupted,
		Snapshot:    snap,
		Queued:      cfg.ServerThreads < clients,
		Database:    dbStats,
		Checks:      checks,
		Entities:    entityStats,
		Groups:      groups,
	}), nil
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
	return []workload.Group{{Name: "clients", Clients: cfg.Clients, Mix: info.Mix, Pacing: pacing}}
}

// entitySettings resolves each entity type's container settings: the
// run's, the type's own defaults, then the user's --entity overrides; sizes
// in percent against the rows the type will have at the end of the run
// (for a timed run, the rows at its start). Nil for direct persistence.
func entitySettings(cfg config.Run, info workload.Info) (map[string]container.Settings, error) {
	overrides := make(map[string]container.Overrides)
	for _, e := range cfg.Entity {
		name, key, value, err := config.ParseEntity(e)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(info.Entities, func(t *container.Type) bool { return t.Name == name }) {
			return nil, fmt.Errorf("--entity %s: %s has no entity type %s; it has %s", e, info.Name, name, entityNames(info))
		}
		if overrides[name] == nil {
			overrides[name] = make(container.Overrides)
		}
		overrides[name][key] = value
	}
	if cfg.Persistence == "direct" {
		if len(overrides) > 0 {
			return nil, fmt.Errorf("--entity applies to the entity container; --persistence direct has none (use cmp, bmp or bmp-checked)")
		}
		return nil, nil
	}
	out := make(map[string]container.Settings)
	for _, t := range info.Entities {
		rows := t.Population.PerScale*int64(cfg.Scale) + t.Population.PerIteration*int64(cfg.Clients)*int64(cfg.Iterations)
		s, err := container.Resolve(cfg.Container(), t, overrides[t.Name], rows)
		if err != nil {
			return nil, err
		}
		out[t.Name] = s
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
	if errs := cfg.Validate(w.Info().Persistence); len(errs) > 0 {
		return nil, config.Usage(errors.Join(errs...))
	}
	return w, nil
}

// threads is the database sessions a run needs: one per server thread
// (fewer when there are fewer clients), plus the workload's agents'.
func threads(cfg config.Run, info workload.Info) int {
	agents := 0
	if info.AgentThreads != nil {
		agents = info.AgentThreads(cfg)
	}
	if info.Grouped {
		return cfg.ServerThreads + agents
	}
	return driver.Threads(cfg.Clients, cfg.ServerThreads) + agents
}

func (r *Runner) open(ctx context.Context, cfg config.Run, info workload.Info) (*store.DB, error) {
	iso, _ := store.ParseIsolation(cfg.Isolation) // validated
	db, err := r.Backends.Open(ctx, cfg.DB, store.Options{
		// One connection per server thread: the middle tier never runs
		// more transactions at once than it has threads.
		Threads:   threads(cfg, info),
		Isolation: iso,
	})
	var ue *store.UsageError
	if errors.As(err, &ue) {
		return nil, config.Usage(ue.Err)
	}
	return db, err
}

func redacted(cfg config.Run) config.Run {
	cfg.DB = store.Redact(cfg.DB)
	return cfg
}

func environment(db *store.DB) result.Environment {
	host, _ := os.Hostname()
	env := result.Environment{
		DB:        db.Version(),
		Isolation: string(db.Isolation()),
		Go:        runtime.Version(),
		CPUs:      runtime.NumCPU(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		Host:      host,
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
