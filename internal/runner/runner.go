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
}

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
	w, err := r.validated(cfg)
	if err != nil {
		return workload.LoadReport{}, "", err
	}
	db, err := r.open(ctx, cfg)
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
	w, err := r.validated(cfg)
	if err != nil {
		return nil, err
	}
	info := w.Info()
	if cfg.Duration > 0 {
		cfg.Iterations = 0 // a timed run ignores the workload's default count
	}
	db, err := r.open(ctx, cfg)
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
	run, err := w.Start(ctx, db, workload.RunParams{Scale: cfg.Scale, Persistence: cfg.Persistence, Entities: entities, Warmup: cfg.Warmup})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", info.Name, err)
	}

	dcfg := driver.Config{
		Clients:       cfg.Clients,
		ServerThreads: cfg.ServerThreads,
		Iterations:    cfg.Iterations,
		Duration:      time.Duration(cfg.Duration),
		RampUp:        time.Duration(cfg.RampUp),
		RampDown:      time.Duration(cfg.RampDown),
		ThinkTime:     time.Duration(cfg.ThinkTime),
		Seed:          cfg.Seed,
		MaxRetries:    cfg.Retries,
	}
	rec := metrics.NewRecorder(info.Operations, driver.Shards(cfg.Clients))
	before := db.Stats()
	if r.Started != nil {
		p := Progress{Began: time.Now(), Completed: rec.Completed, Duration: dcfg.Duration}
		if dcfg.Duration == 0 {
			perIteration := int64(info.Mix.Size())
			if info.Mix.Kind == workload.Weighted {
				perIteration = 1
			}
			p.Total = int64(cfg.Clients) * int64(cfg.Iterations) * perIteration
		}
		r.Started(p)
	}
	rep, err := driver.Run(ctx, dcfg, info.Mix, run, rec)
	if err != nil {
		return nil, err
	}
	snap := rec.Snapshot()
	dbStats := db.Stats().Sub(before)

	// The checks run even after an interrupt: they are how a user learns
	// the database was left consistent.
	checkCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CheckTimeout)
	defer cancel()
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
		Queued:      cfg.ServerThreads < cfg.Clients,
		Database:    dbStats,
		Checks:      checks,
		Entities:    entityStats,
	}), nil
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

func (r *Runner) open(ctx context.Context, cfg config.Run) (*store.DB, error) {
	iso, _ := store.ParseIsolation(cfg.Isolation) // validated
	db, err := r.Backends.Open(ctx, cfg.DB, store.Options{
		// One connection per server thread: the middle tier never runs
		// more transactions at once than it has threads.
		Threads:   driver.Threads(cfg.Clients, cfg.ServerThreads),
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
