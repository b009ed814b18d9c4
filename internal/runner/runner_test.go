package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

func newRunner(t *testing.T) *Runner {
	t.Helper()
	w, err := workload.NewRegistry(stockonline.New())
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Backends: storetest.Backends(), Workloads: w, Version: "test"}
}

func stockOnlineConfig(t *testing.T, r *Runner, dsn string) config.Run {
	t.Helper()
	cfg, _, err := r.Config("stockonline")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DB = store.MustParseDSN(dsn)
	return cfg
}

// Table 2 per iteration.
var table2 = map[string]int64{
	"CreateAccount": 1, "BuyStock": 3, "SellStock": 3, "UpdateAccount": 1,
	"QueryById": 15, "QueryByCode": 15, "GetHoldingStatement": 5,
}

func TestStockOnlineSmallRunOnEveryBackend(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		r := newRunner(t)
		cfg := stockOnlineConfig(t, r, dsn)
		cfg.Clients, cfg.ServerThreads, cfg.Iterations = 10, 4, 2
		cfg.Persistence = container.Direct
		res, err := r.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Summary.Operations + res.Summary.Errors; got != 10*2*43 || res.Summary.Errors != 0 {
			t.Errorf("%d operations with %d errors, want exactly %d without errors", got, res.Summary.Errors, 10*2*43)
		}
		for op, per := range table2 {
			if got := res.Operations[op].Count + res.Operations[op].Errors; got != per*20 {
				t.Errorf("%s ran %d times, want %d (Table 2 × 20 iterations)", op, got, per*20)
			}
		}
		for _, c := range res.Checks {
			if !c.Passed {
				t.Errorf("check %s failed: %s", c.Name, c.Detail)
			}
		}
		if len(res.Checks) < 5 || !res.Summary.Passed {
			t.Errorf("%d checks, passed %v; want at least 5, true", len(res.Checks), res.Summary.Passed)
		}
		if res.Summary.Metric.Name != "TPS" || res.Summary.Metric.Value <= 0 || res.Summary.Metric.Value != res.Summary.ThroughputPerS {
			t.Errorf("metric %+v, throughput %v; want TPS equal to the throughput", res.Summary.Metric, res.Summary.ThroughputPerS)
		}
		buy := res.Operations["BuyStock"]
		if buy.Queue == nil || buy.Service == nil || buy.Latency.P50 <= 0 || buy.Latency.Max < buy.Latency.P99 {
			t.Errorf("BuyStock latencies incomplete with 10 clients on 4 threads: %+v", buy)
		}
		if res.Database.Statements < 10*2*43 || res.Database.Transactions != 10*2*6 {
			t.Errorf("database counters %+v; want ≥ 860 statements and 120 explicit transactions (the buys and sells)", res.Database)
		}
		if !strings.HasPrefix(res.Environment.DB, map[string]string{"sqlite": "sqlite ", "postgres": "postgres ", "mysql": "mariadb "}[t.Name()[strings.LastIndex(t.Name(), "/")+1:]]) {
			t.Errorf("environment.db = %q", res.Environment.DB)
		}
		if len(res.Timeseries) == 0 || res.Load == nil || res.Load.Rows != 36000 {
			t.Errorf("timeseries %d points, load %+v", len(res.Timeseries), res.Load)
		}
		path := filepath.Join(t.TempDir(), "r.json")
		if err := res.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		back, err := result.ReadFile(path)
		if err != nil || back.Schema != result.Schema || back.Summary.Operations != res.Summary.Operations {
			t.Errorf("result file round trip: %v, %+v", err, back)
		}
	})
}

// A timed run through the runner on a real database, in a synctest bubble:
// statements take no time on the bubble's clock, so with a think time each
// client starts an operation exactly every 100 ms, and the ramps' and the
// steady state's counts are fixed by the schedule alone.
func TestTimedRunExcludesRampUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunner(t)
		cfg := stockOnlineConfig(t, r, storetest.SQLite(t))
		cfg.Clients, cfg.ServerThreads = 4, 2
		cfg.ThinkTime = config.Duration(100 * time.Millisecond)
		cfg.Duration, cfg.RampUp, cfg.RampDown = config.Duration(3*time.Second), config.Duration(time.Second), config.Duration(500*time.Millisecond)
		res, err := r.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		// Each client starts at 0 s, 0.1 s, …, 2.9 s (30 operations);
		// those meant to start in [1 s, 2.5 s) are measured: 15 per client.
		if got := s.Operations + s.Errors + s.InDoubt; got != 4*15 || s.Errors != 0 || s.InDoubt != 0 {
			t.Errorf("steady state: %d operations, %d errors, %d in doubt; want exactly 60 operations (4 clients × 15) and no failures", s.Operations, s.Errors, s.InDoubt)
		}
		if s.Completed != 4*15 {
			t.Errorf("%d operations finished in the steady state, want 60: none falls behind its start on this clock", s.Completed)
		}
		if s.ElapsedS != 1.5 || s.RunS != 3 || s.ThroughputPerS != 40 {
			t.Errorf("window %v s, run %v s, throughput %v/s; want 1.5 (3 s less 1 s ramp-up and 0.5 s ramp-down), 3, 60/1.5 = 40", s.ElapsedS, s.RunS, s.ThroughputPerS)
		}
		// The series covers the whole run, ramps included: 10 operations
		// per client in each second.
		var perSecond []int64
		for _, p := range res.Timeseries {
			perSecond = append(perSecond, p.Ops)
		}
		if want := []int64{40, 40, 40}; !slices.Equal(perSecond, want) {
			t.Errorf("operations per second %v, want %v", perSecond, want)
		}
		if !s.Passed {
			t.Errorf("checks failed: %+v", res.Checks)
		}
	})
}

func TestNoLoadRunsOnTheDatabaseAsItIs(t *testing.T) {
	r := newRunner(t)
	cfg := stockOnlineConfig(t, r, storetest.SQLite(t))
	cfg.Clients, cfg.ServerThreads, cfg.Iterations = 2, 2, 1
	if _, err := r.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.NoLoad = true
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Load != nil || !res.Summary.Passed {
		t.Fatalf("second run: load %+v, checks %+v", res.Load, res.Checks)
	}
	for _, c := range res.Checks {
		if c.Name == "accounts-match-creates" && !strings.HasPrefix(c.Detail, "3004 accounts = 3002 before") {
			t.Errorf("the second run must start from the first run's 3002 accounts: %s", c.Detail)
		}
	}
}

func TestStockOnlineOnTheContainerOnEveryBackend(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		for ci, c := range []struct {
			name                       string
			option, cache, concurrency string
			persistence                string
			warmup                     bool
		}{
			{"C cmp", "C", "0", "database", "cmp", false},
			{"A exclusive warm", "A", "100%", "exclusive", "cmp", true},
			{"B bmp optimistic", "B", "50%", "optimistic", "bmp", false},
		} {
			t.Run(c.name, func(t *testing.T) {
				storetest.ShareCell(t, dsn, ci)
				r := newRunner(t)
				cfg := stockOnlineConfig(t, r, dsn)
				cfg.Clients, cfg.ServerThreads, cfg.Iterations = 10, 4, 2
				setContainer(t, &cfg, c.persistence, c.option, c.cache, c.concurrency)
				workload.SetOptions(&cfg, func(o *stockonline.Options) { o.Warmup = c.warmup })
				res, err := r.Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Summary.Operations + res.Summary.Errors; got != 10*2*43 || res.Summary.Errors != 0 || !res.Summary.Passed {
					t.Fatalf("%d operations, %d errors, passed %v; checks %+v", got, res.Summary.Errors, res.Summary.Passed, res.Checks)
				}
				if len(res.EntityOrder) != 4 || res.EntityOrder[3] != "Transaction" {
					t.Fatalf("entity order %v", res.EntityOrder)
				}
				acc, item, hold, trans := res.Container["Account"], res.Container["Item"], res.Container["Holding"], res.Container["Transaction"]
				created := res.Operations["CreateAccount"].Count - res.Operations["CreateAccount"].BusinessExceptions
				trades := (res.Operations["BuyStock"].Count - res.Operations["BuyStock"].BusinessExceptions) +
					(res.Operations["SellStock"].Count - res.Operations["SellStock"].BusinessExceptions)
				// CMP stores only what changed: items never; BMP stores every
				// instance a committed transaction enlisted: the item of each
				// trade.
				itemStores := int64(0)
				if c.persistence == "bmp" {
					itemStores = trades
				}
				if acc.Creates != created || trans.Creates != trades || item.Stores != itemStores || item.Creates != 0 {
					t.Errorf("account creates %d (want %d), transaction creates %d (want %d), item stores %d (want %d)", acc.Creates, created, trans.Creates, trades, item.Stores, itemStores)
				}
				if trans.Settings.CommitOption != "C" || acc.Settings.CommitOption != c.option || acc.Settings.Concurrency != c.concurrency {
					t.Errorf("settings: Transaction %+v, Account %+v", trans.Settings, acc.Settings)
				}
				// QueryById finds an Item by key 15 times an iteration.
				if item.Finds < 15*20 {
					t.Errorf("item finds %d, want at least %d", item.Finds, 15*20)
				}
				switch c.option {
				case "C":
					if acc.ReadyAtEnd != 0 || hold.ReadyAtEnd != 0 || acc.CacheHits != 0 {
						t.Errorf("option C: %d accounts, %d holdings ready at the end, %d hits; want 0, 0, 0", acc.ReadyAtEnd, hold.ReadyAtEnd, acc.CacheHits)
					}
				case "A":
					// Warmed with every item: every QueryById is a hit.
					if item.CacheHits < 15*20 || item.Loads != 0 {
						t.Errorf("option A warmed: %d item hits, %d item loads; want at least %d hits and no loads", item.CacheHits, item.Loads, 15*20)
					}
				}
			})
		}
	})
}

func TestContainerSettingsErrorsAreUsageErrors(t *testing.T) {
	r := newRunner(t)
	for _, c := range []struct {
		change func(*config.Run)
		want   string
	}{
		{func(c *config.Run) { c.CommitOption, c.Concurrency = container.OptionA, container.Database }, "would lose updates"},
		{func(c *config.Run) { c.Entity = settings(t, "Portfolio.cache=10") }, "no entity type Portfolio; it has Account, Item, Holding, Transaction"},
		{func(c *config.Run) { c.Entity = settings(t, "Account.concurrency=readonly") }, "the workload updates Account"},
		{func(c *config.Run) { c.Persistence, c.Entity = container.Direct, settings(t, "Item.cache=10") }, "--persistence direct has none"},
	} {
		cfg := stockOnlineConfig(t, r, storetest.SQLite(t))
		cfg.Clients, cfg.Iterations = 2, 1
		c.change(&cfg)
		_, err := r.Run(context.Background(), cfg)
		var ue *config.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want a usage error saying %q", cfg.Entity, err, c.want)
		}
	}
}

// settings parses --entity values.
func settings(t *testing.T, values ...string) []container.Setting {
	t.Helper()
	var out []container.Setting
	for _, v := range values {
		s, err := container.ParseSetting(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// pflagValue is a setting that parses its flag's text.
type pflagValue interface{ Set(string) error }

// setContainer sets cfg's container switches from their flags' text.
func setContainer(t *testing.T, cfg *config.Run, persistence, option, cache, concurrency string) {
	t.Helper()
	for _, set := range []struct {
		v     pflagValue
		value string
	}{{&cfg.Persistence, persistence}, {&cfg.CommitOption, option}, {&cfg.Cache, cache}, {&cfg.Concurrency, concurrency}} {
		if err := set.v.Set(set.value); err != nil {
			t.Fatal(err)
		}
	}
}
