package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/threshold"
	wl "github.com/tierbench/tierbench/internal/workload"
)

// runFlags binds the flags shared by load and run; their names are the
// config keys. file is the -f YAML file.
type runFlags struct {
	values config.Run
	file   string
	fs     *pflag.FlagSet
	// own are flags of the command that share a config key's name but
	// are not it (drive's --broker is its agents', not ECperf's queue).
	own []string
	// notes say what config changed of what was asked, for stderr.
	notes []string
	// options are the workload's options as its flags set them (see
	// workloadCommands); nil before they are bound.
	options func() any
}

// addFileFlag binds -f; every command's flags begin with it.
func addFileFlag(fs *pflag.FlagSet, f *runFlags) {
	f.fs = fs
	fs.StringVarP(&f.file, "file", "f", "", "YAML file of configuration keys (the flag names); flags override it")
}

// addPopulationFlags binds --scale and --seed: which population a command
// works on.
func addPopulationFlags(fs *pflag.FlagSet, f *runFlags) {
	v := &f.values
	fs.IntVar(&v.Scale, "scale", 0, "population scale factor (default 1, the reference's population)")
	fs.Uint64Var(&v.Seed, "seed", 0, "seed of the population and of every client's random stream (default 1)")
}

// addDatabaseFlags binds --db and --isolation.
func addDatabaseFlags(fs *pflag.FlagSet, f *runFlags) {
	v := &f.values
	fs.Var(&v.DB, "db", "database: "+store.DSNForms+" (default sqlite, a fresh temporary file)")
	fs.Var((*replicasFlag)(&v.Replicas), "replica", "a read replica of the PostgreSQL primary --db names (a hot standby), postgres://USER@HOST:PORT/DB, repeatable: read-only transactions go to the replicas in turn (deploy/local/pg-replicas starts a primary and two)")
	fs.StringVar((*string)(&v.ReplicaReads), "replica-reads", "", "what a read on a replica does about its client's own last write: "+store.ReplicaReadModes+" (default eventual; needs --replica)")
	fs.Var(&v.Isolation, "isolation", "transaction isolation: "+store.IsolationLevels+" (default read-committed; SQLite is always serializable)")
	fs.Var(&v.LockGranularity, "lock-granularity", "what every transaction locks: engine (the engine's own locks: rows on InnoDB and PostgreSQL, the database on SQLite) or table (every table of the database, WRITE, from the transaction's start to its end: MariaDB/MySQL's LOCK TABLES, as the seeds' coarse locks; a single MariaDB or MySQL server only) (default engine)")
}

// addConnectionFlags binds what load and run share: the file, the
// population and the database.
func addConnectionFlags(fs *pflag.FlagSet, f *runFlags) {
	addFileFlag(fs, f)
	addPopulationFlags(fs, f)
	addDatabaseFlags(fs, f)
}

// addTierFlags binds the middle tier's flags: what `serve` runs with too.
func addTierFlags(fs *pflag.FlagSet, f *runFlags) {
	v := &f.values
	fs.IntVar(&v.ServerThreads, "server-threads", 0, "transactions the middle tier runs at once; more clients queue")
	fs.Var(&v.Persistence, "persistence", "persistence strategy: cmp, bmp, bmp-checked (the entity container), direct (hand-written SQL)")
	fs.Var(&v.CommitOption, "commit-option", "entity container commit option: A (cache data), B (cache identity), C (pool), D (A with --refresh-interval) (default C)")
	fs.Var(&v.Cache, "cache", "ready cache size per entity type: N, or P% of the type's rows, followed as they grow or shrink (default 0)")
	fs.Var(&v.Pool, "pool", "pool size per entity type: N or P% (default 20%)")
	fs.Var(&v.Concurrency, "concurrency", "entity concurrency: database, exclusive, optimistic, readonly (default exclusive under commit option A or D, database under B or C)")
	fs.DurationVar((*time.Duration)(&v.RefreshInterval), "refresh-interval", 0, "how long commit option D trusts cached data (default 10s)")
	fs.DurationVar((*time.Duration)(&v.LockTimeout), "lock-timeout", 0, "how long an exclusive lock wait lasts before the transaction aborts and is retried (default 1s)")
	fs.Var((*settingsFlag)(&v.Entity), "entity", "per-type setting NAME.key=value, repeatable (e.g. Item.concurrency=readonly); keys: "+container.SettingKeys)
	fs.Var(&v.Coherence, "coherence", "how each app server's entity cache stays right when several share the database: none, invalidate (over NATS, each commit waits for every peer), invalidate-async (no wait; staleness measured), shared (entity state in Redis, see --cache-url) (default none)")
	fs.Var(&v.Dispatch, "dispatch", "how a business tier invokes its beans' methods and the entity container reaches their fields: generated (compiled code) or reflect (package reflect, as JBoss's dynamic proxies and reflective field access did) (default generated)")
	fs.StringVar(&v.CacheURL, "cache-url", "", "the shared cache of --coherence shared (default "+config.DefaultCacheURL+")")
	fs.StringVar(&v.CoherenceBroker, "coherence-broker", "", "the NATS server of --coherence invalidate and invalidate-async, nats://HOST:PORT (default: a run over several app servers starts its own)")
}

// addLoadGenFlags binds what the driver applies: the clients, how long,
// and what the result must meet; `run` and `drive` share them.
func addLoadGenFlags(fs *pflag.FlagSet, f *runFlags) {
	v := &f.values
	fs.IntVar(&v.Clients, "clients", 0, "concurrent clients")
	fs.IntVar(&v.Iterations, "iterations", 0, "iterations of the mix per client")
	fs.DurationVar((*time.Duration)(&v.Duration), "duration", 0, "run for this long instead of a number of iterations (e.g. 30s)")
	fs.DurationVar((*time.Duration)(&v.RampUp), "ramp-up", 0, "leading time not measured")
	fs.DurationVar((*time.Duration)(&v.RampDown), "ramp-down", 0, "trailing time not measured (needs --duration)")
	fs.Var(&v.MaxErrorRate, "max-error-rate", "the run fails (exit 1) when more than this share of its operations end in an error or in doubt (default 1%)")
	fs.Var((*thresholdsFlag)(&v.Thresholds), "threshold", "the run fails (exit 1) unless its steady state meets this, repeatable: "+threshold.Grammar+"; STAT one of "+threshold.StatNames()+", of one operation after OPERATION.; OP <, <=, >, >=; VALUE a latency in ms, s, us or µs, error_rate in %, tps and metric plain numbers (see docs/thresholds.md)")
	fs.StringVar(&v.Out, "out", "", "result file (default results/WORKLOAD-TIME.json)")
	fs.BoolVar(&v.Quiet, "quiet", false, "no progress line")
}

func addRunFlags(fs *pflag.FlagSet, f *runFlags) {
	addConnectionFlags(fs, f)
	addTierFlags(fs, f)
	addLoadGenFlags(fs, f)
	v := &f.values
	fs.DurationVar((*time.Duration)(&v.ThinkTime), "think-time", 0, "pause of each client after each operation (default none, as in the paper)")
	fs.IntVar(&v.Retries, "retries", 0, "retries of a deadlock, serialization failure or lock timeout before it counts as an error (default 5)")
	fs.BoolVar(&v.NoLoad, "no-load", false, "run on the database as it is instead of repopulating it")
	fs.StringVar(&v.Placement, "placement", "", "run on a private PostgreSQL server started for the run, with tierbench and the server pinned to CPUs: mixed (both on the first half of the CPUs: one machine) or dual (tierbench on the first half, the server on the second: two machines); or hosts: the server, the business tier, the web tier and the driver each in a network namespace of its own (needs root and iproute2; see docs/hosts.md); needs PostgreSQL's server programs and taskset; no --db (default: none, the database --db names)")
	fs.StringVar(&v.Link, "link", "", "with --placement hosts: the link between the hosts, RATE[,DELAY]: a rate by tc's tbf (100mbit, 1gbit) and a one-way delay by a delaying proxy (0.5ms) (default: the veths as they are)")
	fs.StringVar(&v.Partition, "partition", "", "with --placement hosts: cut the business tier from its caller AT after the measured run begins, for FOR (AT,FOR: 2s,5s)")
	fs.MarkHidden("partition")
	fs.StringVar(&v.PartitionDBNode, "partition-db-node", "", "with a --db of a Galera cluster's nodes: cut node N (from 0, in --db's order) from the others AT after the measured run begins, for FOR (N,AT,FOR: 1,2s,5s)")
	fs.MarkHidden("partition-db-node")
	fs.StringArrayVar(&v.PGSettings, "pg-setting", nil, "a parameter of the private PostgreSQL server of --placement (mixed, dual or hosts), NAME=VALUE, passed as -c NAME=VALUE at its start, repeatable (e.g. --pg-setting shared_buffers=256MB --pg-setting fsync=off); needs --placement")
	fs.IntVar(&v.AppServers, "app-servers", 0, fmt.Sprintf("middle-tier processes over the one database, each with its own container; the clients are spread over them (1 to %d; default 1)", config.MaxAppServers))
	fs.StringVar(&v.Balancer, "balancer", "", "a load balancer in front of the app servers: haproxy (default none: the driver spreads its clients itself)")
}

// config is the workload's defaults, overlaid with the -f file, overlaid
// with the flags the user set.
func (f *runFlags) config(r *runner.Runner, workload string) (config.Run, error) {
	cfg, info, err := r.Config(workload)
	if err != nil {
		return cfg, err
	}
	if f.file != "" {
		if err := cfg.LoadFile(f.file); err != nil {
			return cfg, config.Usage(err)
		}
		cfg.Workload = workload
	}
	var set []string
	f.fs.Visit(func(fl *pflag.Flag) {
		if !slices.Contains(f.own, fl.Name) {
			set = append(set, fl.Name)
		}
	})
	if info.Grouped {
		for _, name := range []string{"clients", "think-time"} {
			if slices.Contains(set, name) {
				return cfg, config.Usage(fmt.Errorf("--%s does not apply to %s: its terminals and their pacing come from the reference (for ECperf, from --ir and --cycle-scale)", name, workload))
			}
		}
	}
	if info.Mix.Kind == wl.Chosen && slices.Contains(set, "think-time") {
		return cfg, config.Usage(fmt.Errorf("--think-time does not apply to %s: its clients think as the reference's do (see --think-scale)", workload))
	}
	if err := config.CheckKeys(set); err != nil {
		return cfg, config.Usage(err)
	}
	if f.options != nil {
		f.values.Options = f.options()
	}
	cfg.Overlay(&f.values, set)
	f.scaleRamps(&cfg, info.Defaults, set)
	// A workload measured over time by default (ECperf) runs a number of
	// iterations instead when that is all the user asked for.
	// Its default ramp-up goes too: it would leave the short run unmeasured.
	if slices.Contains(set, "iterations") && !slices.Contains(set, "duration") {
		cfg.Duration, cfg.RampDown = 0, 0
		if !slices.Contains(set, "ramp-up") {
			cfg.RampUp = 0
		}
	}
	wl.OptionsOf(cfg).Resolve(&cfg)
	return cfg, nil
}

// scaleRamps: a --duration shorter than the workload's default, given
// without either ramp, scales the default ramps with it, so that the
// steady state keeps its share of the run (RUBiS's 10 s and 5 s would
// leave 5 s of a 20 s run); a note says so.
func (f *runFlags) scaleRamps(cfg *config.Run, d config.Defaults, set []string) {
	if !slices.Contains(set, "duration") || slices.Contains(set, "ramp-up") || slices.Contains(set, "ramp-down") ||
		d.Duration <= 0 || time.Duration(cfg.Duration) >= d.Duration ||
		time.Duration(cfg.RampUp) != d.RampUp || time.Duration(cfg.RampDown) != d.RampDown || d.RampUp+d.RampDown == 0 {
		return
	}
	k := float64(cfg.Duration) / float64(d.Duration)
	cfg.RampUp = config.Duration(time.Duration(float64(d.RampUp) * k).Round(time.Millisecond))
	cfg.RampDown = config.Duration(time.Duration(float64(d.RampDown) * k).Round(time.Millisecond))
	f.notes = append(f.notes, fmt.Sprintf("--duration %v: the default ramps (%v up, %v down, of %v) scaled to %v up, %v down; give --ramp-up and --ramp-down to set them",
		time.Duration(cfg.Duration), d.RampUp, d.RampDown, d.Duration, time.Duration(cfg.RampUp), time.Duration(cfg.RampDown)))
}

// printNotes writes the notes config made, once.
func (f *runFlags) printNotes(w io.Writer) {
	for _, n := range f.notes {
		fmt.Fprintln(w, "tierbench: "+n)
	}
	f.notes = nil
}

// replicasFlag is --replica, repeatable.
type replicasFlag []store.DSN

func (f *replicasFlag) Set(s string) error {
	var d store.DSN
	if err := d.Set(s); err != nil {
		return errors.New(strings.Replace(err.Error(), "--db", "--replica", 1))
	}
	*f = append(*f, d)
	return nil
}

func (f *replicasFlag) String() string {
	out := make([]string, len(*f))
	for i, d := range *f {
		out[i] = d.String()
	}
	return strings.Join(out, ",")
}

func (f *replicasFlag) Type() string { return "dsn" }

// settingsFlag is --entity, repeatable: each value parsed as it is given.
type settingsFlag []container.Setting

func (f *settingsFlag) Set(s string) error {
	v, err := container.ParseSetting(s)
	if err != nil {
		return err
	}
	*f = append(*f, v)
	return nil
}

func (f *settingsFlag) String() string {
	out := make([]string, len(*f))
	for i, s := range *f {
		out[i] = s.String()
	}
	return strings.Join(out, ",")
}

func (f *settingsFlag) Type() string { return "NAME.key=value" }

// thresholdsFlag is --threshold, repeatable; the runner parses the
// expressions, the -f file's as well.
type thresholdsFlag []string

func (f *thresholdsFlag) Set(s string) error {
	*f = append(*f, s)
	return nil
}

func (f *thresholdsFlag) String() string { return strings.Join(*f, " ") }

func (f *thresholdsFlag) Type() string { return "EXPR" }
