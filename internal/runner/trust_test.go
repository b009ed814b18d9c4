package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// halfLoad is Stock-Online whose load fails after populating: the database
// then holds rows but is not complete.
type halfLoad struct{ workload.Workload }

func (h halfLoad) Load(ctx context.Context, db *store.DB, p workload.LoadParams) (workload.LoadReport, error) {
	rep, err := h.Workload.Load(ctx, db, p)
	if err != nil {
		return rep, err
	}
	return rep, errors.New("the disk filled up")
}

func usageErr(err error) bool {
	var ue *config.UsageError
	return errors.As(err, &ue)
}

// --no-load measures only a database a load completed, at the run's
// scale; a half-loaded one is refused with a message that says how to fix it.
func TestNoLoadRefusesAnIncompleteDatabase(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		r := newRunner(t)
		cfg := stockOnlineConfig(t, r, dsn)
		cfg.Clients, cfg.ServerThreads, cfg.Iterations, cfg.NoLoad = 2, 2, 1, true

		_, err := r.Run(ctx, cfg)
		if !usageErr(err) || !strings.Contains(err.Error(), "tierbench load stockonline") {
			t.Errorf("never loaded: %v, want a usage error naming the load command", err)
		}

		broken, _ := workload.NewRegistry(halfLoad{stockonline.New()})
		half := &Runner{Backends: r.Backends, Workloads: broken, Version: "test"}
		if _, _, err := half.Load(ctx, cfg); err == nil || !strings.Contains(err.Error(), "the database is incomplete") {
			t.Errorf("a load that failed half-way: %v, want it to say the database is incomplete", err)
		}
		_, err = r.Run(ctx, cfg)
		if !usageErr(err) || !strings.Contains(err.Error(), "incomplete") {
			t.Errorf("half loaded: %v, want a usage error saying it is incomplete", err)
		}

		if _, _, err := r.Load(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		other := cfg
		other.Scale = 2
		_, err = r.Run(ctx, other)
		if !usageErr(err) || !strings.Contains(err.Error(), "at scale 1, the run asks for scale 2") {
			t.Errorf("other scale: %v, want a usage error naming both scales", err)
		}
		res, err := r.Run(ctx, cfg)
		if err != nil || !res.Summary.Passed {
			t.Fatalf("complete load: %v, %+v", err, res)
		}
	})
}

// rejectTrades makes every insert into StockTransaction fail, as a full
// disk would.
var rejectTrades = map[store.Dialect]string{
	store.SQLite: `CREATE TRIGGER reject_trades BEFORE INSERT ON StockTransaction BEGIN SELECT RAISE(ABORT, 'no space left on device'); END`,
	store.Postgres: `CREATE FUNCTION reject_trade() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'no space left on device'; END $$ LANGUAGE plpgsql;
CREATE TRIGGER reject_trades BEFORE INSERT ON StockTransaction FOR EACH ROW EXECUTE FUNCTION reject_trade()`,
	store.MySQL: `CREATE TRIGGER reject_trades BEFORE INSERT ON StockTransaction FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no space left on device'`,
}

// A run whose operations fail does not pass: failures are counted beside
// the rate, never in it, and above --max-error-rate the run fails. The
// database is broken on purpose: every trade's insert fails.
func TestFailedOperationsAreNotThroughput(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		r := newRunner(t)
		cfg := stockOnlineConfig(t, r, dsn)
		cfg.Clients, cfg.ServerThreads, cfg.Iterations, cfg.Persistence = 4, 2, 10, container.Direct
		if _, _, err := r.Load(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		db, err := r.Backends.Open(ctx, store.MustParseDSN(dsn), store.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.ExecScript(ctx, rejectTrades[db.Dialect()]); err != nil {
			t.Fatal(err)
		}
		db.Close()
		cfg.NoLoad = true
		res, err := r.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		// Each client's deck has 3 buys and 3 sells an iteration, and
		// every one that gets as far as recording its trade fails (the
		// others end sooner, as business exceptions: too little credit,
		// no holding: a sell repeats its failed buy); none succeeds.
		buy, sell := res.Operations["BuyStock"], res.Operations["SellStock"]
		if buy.Errors+buy.BusinessExceptions != 4*10*3 || sell.Errors+sell.BusinessExceptions != 4*10*3 || buy.Errors == 0 {
			t.Errorf("buys %d failed + %d exceptions, sells %d + %d; want all %d of each to fail or be refused", buy.Errors, buy.BusinessExceptions, sell.Errors, sell.BusinessExceptions, 4*10*3)
		}
		var completed int64
		for _, op := range res.Operations {
			completed += op.Completed
			if op.Completed != op.Count {
				t.Errorf("an operation's completed %d != count %d in an iteration run", op.Completed, op.Count)
			}
		}
		if s.Completed != completed || s.Completed+s.Errors != 4*10*43 {
			t.Errorf("completed %d + errors %d, want %d in all, errors apart", s.Completed, s.Errors, 4*10*43)
		}
		// elapsed_s is rounded to the millisecond of a run of a few tens of
		// them, so the rate is checked to 5%: counting the errors (16% more
		// operations than completed) would be outside.
		if want := float64(s.Completed) / s.ElapsedS; s.ThroughputPerS > want*1.05 || s.ThroughputPerS < want*0.95 {
			t.Errorf("throughput %.1f, want completed/elapsed = %.1f (errors excluded)", s.ThroughputPerS, want)
		}
		if s.Passed || !res.TooManyErrors() || !strings.Contains(res.Verdict(), "TOO MANY ERRORS") {
			t.Errorf("error rate %.2f%% (max %.0f%%): passed %v, verdict %q; want a failed run", s.ErrorRatePct, s.MaxErrorRatePct, s.Passed, res.Verdict())
		}
		cfg.MaxErrorRate = 100
		if res, err := r.Run(ctx, cfg); err != nil || res.TooManyErrors() {
			t.Errorf("with --max-error-rate 100%%: %v, too many errors: %v", err, res.TooManyErrors())
		}
	})
}

// More server threads than the database admits connections, or more
// clients than memory holds, are refused before anything runs, naming
// the fix.
func TestRunsThatCannotFitAreRefusedUpFront(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []func(testing.TB) string{storetest.Postgres, storetest.MySQL} {
		r := newRunner(t)
		cfg := stockOnlineConfig(t, r, dsn(t))
		cfg.Clients, cfg.ServerThreads = 5000, 4000
		_, err := r.Run(ctx, cfg)
		if !usageErr(err) || !strings.Contains(err.Error(), "--server-threads 4000 needs 4002 database connections") || !strings.Contains(err.Error(), "max_connections") {
			t.Errorf("%s: %v, want a usage error naming the connections needed and the server's limit", cfg.DB, err)
		}
		// With the session bean in a child process, the run's own pool
		// is the shared session and one thread: the tier's pool (and the
		// connection that finds the run's lock) and the run's three
		// connections are counted together, before any starts.
		workload.SetOptions(&cfg, func(o *stockonline.Options) { o.Tiers = 2 })
		_, err = r.Run(ctx, cfg)
		if !usageErr(err) || !strings.Contains(err.Error(), "--server-threads 4000 needs 4005 database connections") || !strings.Contains(err.Error(), "the run's own: 3 for loading, checks and the lock") {
			t.Errorf("%s --tiers 2: %v, want a usage error counting the tier's and the run's connections", cfg.DB, err)
		}
	}
	available, ok := availableMemory()
	if !ok {
		t.Skip("no /proc/meminfo: the memory check does not apply here")
	}
	r := newRunner(t)
	cfg := stockOnlineConfig(t, r, storetest.SQLite(t))
	cfg.Clients = int(available/bytesPerClient) + 1
	_, err := r.Run(ctx, cfg)
	if !usageErr(err) || !strings.Contains(err.Error(), "GiB available") {
		t.Errorf("%d clients: %v, want a usage error saying the memory they need and the memory there is", cfg.Clients, err)
	}
}

// A size in percent means the same in a timed run as in one of a number of
// iterations: a share of the type's rows as they are, ending as a share
// of the rows at the end. (A timed run used to resolve Transaction's pool
// of 20% against the rows at its start, none, and discarded every
// instance.)
func TestPercentSizesResolveTheSameInTimedAndIterationRuns(t *testing.T) {
	ctx := context.Background()
	for _, timed := range []bool{false, true} {
		r := newRunner(t)
		dsn := "sqlite:" + filepath.Join(t.TempDir(), "so.db")
		cfg := stockOnlineConfig(t, r, dsn)
		cfg.Clients, cfg.ServerThreads = 4, 2
		if timed {
			// Paced to about as many trades as the iteration run's
			// 120: a second at full speed would be a second of CPU.
			cfg.Iterations, cfg.Duration, cfg.ThinkTime = 0, config.Duration(time.Second), config.Duration(5*time.Millisecond)
		} else {
			cfg.Iterations = 5
		}
		res, err := r.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		db, err := r.Backends.Open(ctx, store.MustParseDSN(dsn), store.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		rows := queryCount(t, db, "SELECT COUNT(*) FROM StockTransaction")
		db.Close()
		tr := res.Container["Transaction"]
		want := int(float64(rows)*0.2 + 0.5)
		if rows == 0 || tr.Rows != rows || tr.Settings.Pool != want || tr.Settings.PoolSetting != "20%" {
			t.Errorf("timed %v: %d transactions in the table; the result says rows %d, pool %d (%s); want pool %d, 20%% of them", timed, rows, tr.Rows, tr.Settings.Pool, tr.Settings.PoolSetting, want)
		}
		// The pool grows with the table from its first rows, so it
		// discards only while it is smaller than the instances in use.
		if tr.Passivations == 0 || tr.Discards*10 > tr.Passivations {
			t.Errorf("timed %v: %d of %d passivated instances discarded; want the pool to keep nearly all", timed, tr.Discards, tr.Passivations)
		}
	}
}

func queryCount(t *testing.T, db *store.DB, sql string) int64 {
	t.Helper()
	ctx := context.Background()
	s, err := db.Prepare(ctx, store.Statement{Name: "count", SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
