package cli

import (
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
	fs.Var(&v.Isolation, "isolation", "transaction isolation: "+store.IsolationLevels+" (default read-committed; SQLite is always serializable)")
}

// addConnectionFlags binds what load and run share: the file, the
// population and the database.
func addConnectionFlags(fs *pflag.FlagSet, f *runFlags) {
	addFileFlag(fs, f)
	addPopulationFlags(fs, f)
	addDatabaseFlags(fs, f)
	fs.IntVar(&f.values.IR, "ir", 0, "ECperf's injection rate: the scale (5·Ir order-entry and 3·Ir planned-line terminals, population by the kit's rules)")
	v := &f.values
	fs.StringVar(&v.ItemImages, "item-images", "", "TPC-App: where item images live: in-row (in the item row), file (a file the row names, read only by ProductDetail), none (default in-row)")
	fs.StringVar(&v.ItemsPerCategory, "items-per-category", "", "RUBiS: how the active items are dealt to the categories: original (the counts of the kit's ebay_simple_categories.txt, scaled: Collectibles 23%, Photo 0.5%) or even (default original)")
	fs.IntVar(&v.ImageKB, "image-kb", 0, "TPC-App: size of each item's image in KiB (default 100, the seed's)")
	fs.StringVar(&v.ImageDir, "image-dir", "", "TPC-App: directory of the image files under --item-images file (default: one per database under the system's temporary directory)")
	fs.StringVar(&v.Indexes, "indexes", "", "TPC-App: spec (primary keys and the address lookup) or tuned (also the seed's four: item(subject, pub_date), orders(customer), order_line(order), order_line(item)) (default spec)")
}

// addTierFlags binds the middle tier's flags: what `serve` runs with too.
func addTierFlags(fs *pflag.FlagSet, f *runFlags) {
	v := &f.values
	fs.IntVar(&v.ServerThreads, "server-threads", 0, "transactions the middle tier runs at once; more clients queue (default: the workload's, 10 for stockonline)")
	fs.Var(&v.Persistence, "persistence", "persistence strategy: cmp, bmp, bmp-checked (the entity container), direct (hand-written SQL) (default: the workload's; cmp, direct for rubis)")
	fs.Var(&v.CommitOption, "commit-option", "entity container commit option: A (cache data), B (cache identity), C (pool), D (A with --refresh-interval) (default C)")
	fs.Var(&v.Cache, "cache", "ready cache size per entity type: N, or P% of the type's rows, followed as they grow or shrink (default 0)")
	fs.Var(&v.Pool, "pool", "pool size per entity type: N or P% (default 20%)")
	fs.Var(&v.Concurrency, "concurrency", "entity concurrency: database, exclusive, optimistic, readonly (default exclusive under commit option A or D, database under B or C)")
	fs.DurationVar((*time.Duration)(&v.RefreshInterval), "refresh-interval", 0, "how long commit option D trusts cached data (default 10s)")
	fs.DurationVar((*time.Duration)(&v.LockTimeout), "lock-timeout", 0, "how long an exclusive lock wait lasts before the transaction aborts and is retried (default 1s)")
	fs.StringVar(&v.Style, "style", "", "RUBiS: how the middle tier is built: servlets (SQL in the web tier), session (session beans on a business tier, SQL), entity (the web tier calls entity beans on a business tier field by field), facade (session facade over entity beans on a business tier), local (facade and entity beans in the web tier's process) (default: servlets under --persistence direct, local under cmp or bmp)")
	fs.StringVar(&v.Protocol, "protocol", "", "how a tier calls the next one over a process boundary (RUBiS's web tier its business tier under --style session, facade or entity; Stock-Online's clients its session bean under --tiers 2): http (HTTP/1.1, JSON) or grpc (HTTP/2, protobuf) (default http)")
	fs.StringVar(&v.Broker, "broker", "", "ECperf queue dispatch and TPC-App's shipping queue: NATS URL, e.g. nats://127.0.0.1:4222 (default: an embedded NATS server with JetStream)")
	fs.StringVar(&v.POV, "pov", "", "TPC-App: URL of a purchase order verification service started with 'tierbench emulator pov' (default: one in-process)")
	fs.StringVar(&v.PGE, "pge", "", "TPC-App: URL of a payment gateway started with 'tierbench emulator pge' (default: one in-process)")
	fs.StringVar(&v.ICE, "ice", "", "TPC-App: URL of an inventory control service started with 'tierbench emulator ice' (default: one in-process)")
	fs.StringVar(&v.PartnerDelay, "partner-delay", "", "TPC-App: response time of the in-process partners: none, fixed:D, uniform:MIN-MAX, negexp:MEAN (default fixed:500ms, the seed's)")
	fs.Float64Var(&v.PartnerFailRate, "partner-fail-rate", 0, "TPC-App: share of calls the in-process partners answer 503, in [0, 1] (default 0)")
	fs.IntVar(&v.ShippingAgents, "shipping-agents", 0, "TPC-App: agents shipping orders off the shipping queue at once, each a database session (default 2)")
	fs.Var((*settingsFlag)(&v.Entity), "entity", "per-type setting NAME.key=value, repeatable (e.g. Item.concurrency=readonly); keys: commit-option, cache, pool, persistence, concurrency, refresh-interval, lock-timeout")
}

// addLoadGenFlags binds what the driver applies: the clients, how long,
// and what the result must meet; `run` and `drive` share them.
func addLoadGenFlags(fs *pflag.FlagSet, f *runFlags) {
	v := &f.values
	fs.IntVar(&v.Clients, "clients", 0, "concurrent clients (default: the workload's, 100 for stockonline)")
	fs.IntVar(&v.Iterations, "iterations", 0, "iterations of the mix per client (default: the workload's, 10 for stockonline)")
	fs.DurationVar((*time.Duration)(&v.Duration), "duration", 0, "run for this long instead of a number of iterations (e.g. 30s)")
	fs.DurationVar((*time.Duration)(&v.RampUp), "ramp-up", 0, "leading time not measured")
	fs.DurationVar((*time.Duration)(&v.RampDown), "ramp-down", 0, "trailing time not measured (needs --duration)")
	fs.Var(&v.MaxErrorRate, "max-error-rate", "the run fails (exit 1) when more than this share of its operations end in an error or in doubt (default 1%)")
	fs.Var((*thresholdsFlag)(&v.Thresholds), "threshold", "the run fails (exit 1) unless its steady state meets this, repeatable: "+threshold.Grammar+"; STAT one of "+threshold.StatNames()+", of one operation after OPERATION.; OP <, <=, >, >=; VALUE a latency in ms, s, us or µs, error_rate in %, tps and metric plain numbers (see docs/thresholds.md)")
	fs.StringVar(&v.Out, "out", "", "result file (default results/WORKLOAD-TIME.json)")
	fs.BoolVar(&v.Quiet, "quiet", false, "no progress line")
	fs.StringVar(&v.Mix, "mix", "", "RUBiS: the original client's transition table: bidding (default_transitions, with writes) or browsing (read only), or the path of a table file in the original's format (default bidding); TPC-App: spec (the reference's mix, the default) or weights OP=N,… (methods not named get none); Stock-Online: table-2 (the paper's deck of 43, the default) or counts OP=N,… of one iteration's deck (BuyStock and SellStock paired, so equal), e.g. UpdateAccount=1 to measure one transaction alone")
	fs.Float64Var(&v.ThinkScale, "think-scale", 0, "RUBiS: multiply the browsers' think time, negative exponential of mean 7 s (default 1; 0.01 for short runs, 0 for none)")
	fs.BoolVar(&v.SkipImages, "skip-images", false, "RUBiS: the browsers fetch none of the pages' <IMG SRC> (default: every one, after its page, counted apart from the interactions, as the original client)")
	fs.BoolVar(&v.OneBasedIDs, "one-based-ids", false, "RUBiS: send category, region and user ids as the database numbers them (default: the original client's 0-based draw, so category 0 finds nothing)")
	fs.IntVar(&v.PageTries, "page-tries", 0, "RUBiS: tries of a page that fails (no response, or HTTP 400 and above) before it counts as an error, 1 s apart (default 5, the original client's)")
	fs.BoolVar(&v.NoRampSlowdown, "no-ramp-slowdown", false, "RUBiS: the same think time in the ramps (default: ×2 in the up-ramp and ×3 in the down-ramp, the original client's slow-down factors)")
	fs.StringVar(&v.Front, "front", "", "TPC-App: how the businesses call the web service: soap (SOAP 1.1, the specification's) or json (default soap)")
	fs.StringVar(&v.SessionLength, "session-length", "", "TPC-App: requests per business session: negexp:MEAN (truncated to 1..120), uniform:MIN-MAX, fixed:N, or a file of the cumulative distribution (length and cumulative probability per line) (default negexp:20)")
}

func addRunFlags(fs *pflag.FlagSet, f *runFlags) {
	addConnectionFlags(fs, f)
	addTierFlags(fs, f)
	addLoadGenFlags(fs, f)
	v := &f.values
	fs.DurationVar((*time.Duration)(&v.ThinkTime), "think-time", 0, "pause of each client after each operation (default none, as in the paper)")
	fs.IntVar(&v.Retries, "retries", 0, "retries of a deadlock, serialization failure or lock timeout before it counts as an error (default 5)")
	fs.BoolVar(&v.Warmup, "warmup", false, "warm the container's caches before the run by reading the warmed types (Stock-Online: Account, Item, Holding)")
	fs.IntVar(&v.Tiers, "tiers", 0, "processes the run spans: 1 (everything here), 2 (the middle tier in a child process: RUBiS's site, Stock-Online's session bean), 3 (RUBiS: web and business tier each in a child process; --style session, facade or entity) (default 1)")
	fs.BoolVar(&v.NoLoad, "no-load", false, "run on the database as it is instead of repopulating it")
	fs.StringVar(&v.Placement, "placement", "", "run on a private PostgreSQL server started for the run, with tierbench and the server pinned to CPUs: mixed (both on the first half of the CPUs: one machine) or dual (tierbench on the first half, the server on the second: two machines); needs PostgreSQL's server programs and taskset; no --db (default: none, the database --db names)")
	fs.StringVar(&v.PODispatch, "po-dispatch", "", "ECperf: how purchase orders reach the Supplier Emulator: sync (inside ScheduleWorkOrder's transaction, the kit's), poller (an agent sends unsent POs), queue (outbox + NATS JetStream + message-driven sender) (default sync)")
	fs.StringVar(&v.Emulator, "emulator", "", "ECperf: URL of a Supplier Emulator started with 'tierbench emulator' (default: one in-process)")
	fs.DurationVar((*time.Duration)(&v.EmulatorDelay), "emulator-delay", 0, "ECperf: how long the in-process emulator takes to answer a PO, the partner's network and processing (default 0)")
	fs.StringVar(&v.Receiver, "receiver", "", "ECperf: HOST:PORT the emulator delivers parts back to (default 127.0.0.1:0, any free port)")
	fs.Float64Var(&v.CycleScale, "cycle-scale", 0, "ECperf: multiply the kit's cycle times, station delays and polling intervals (default 1; 0.1 for short runs)")
	fs.DurationVar((*time.Duration)(&v.LeadTimeUnit), "lead-time-unit", 0, "ECperf: one unit of a supplier's lead time (default 5s × --cycle-scale); each PO carries it, so an emulator started alone (--emulator) uses the run's")
	fs.IntVar(&v.POSenders, "po-senders", 0, "ECperf: agents sending POs at once under poller and queue dispatch, each a database session (default 16)")
	fs.BoolVar(&v.UnsortedAccess, "unsorted-access", false, "ECperf: touch order lines and inventory in the original unsorted order, which deadlocks, instead of key order")
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
	if err := config.CheckKeys(workload, set); err != nil {
		return cfg, config.Usage(err)
	}
	if slices.Contains(set, "ir") && f.values.IR < 1 {
		return cfg, config.Usage(fmt.Errorf("--ir %d: must be at least 1 (the injection rate)", f.values.IR))
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
	cfg.Normalize()
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
