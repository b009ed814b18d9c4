package container_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// account is the test entity: five rows, a finder by name and one by
// credit.
func account() *container.Type {
	return &container.Type{
		Name:    "Account",
		Table:   "acct",
		Key:     []container.Column{{Name: "id", Kind: container.Int}},
		Fields:  []container.Column{{Name: "name", Kind: container.String}, {Name: "credit", Kind: container.Int}},
		Version: "version",
		Updated: true,
		Finders: []container.Finder{
			{Name: "byName", Where: "name = ?"},
			{Name: "richerThan", Where: "credit > ?", OrderBy: "id", Many: true},
		},
	}
}

const (
	fName = iota
	fCredit
)

const schema = `DROP TABLE IF EXISTS acct;
CREATE TABLE acct (id BIGINT PRIMARY KEY, name VARCHAR(32) NOT NULL, credit BIGINT NOT NULL, version BIGINT NOT NULL DEFAULT 0);
INSERT INTO acct (id, name, credit) VALUES (1, 'one', 100), (2, 'two', 200), (3, 'three', 300), (4, 'four', 400), (5, 'five', 500);`

func settings(opt container.CommitOption, cache, pool int) container.Settings {
	return container.Settings{CommitOption: opt, Cache: container.Size{N: cache}, Pool: container.Size{N: pool}, Persistence: container.CMP,
		Concurrency: container.Exclusive, Refresh: time.Hour, LockTimeout: time.Second}
}

type fixture struct {
	db  *store.DB
	ctr *container.Container
	h   *container.Home
}

func newFixture(t testing.TB, dsn string, threads int, s container.Settings) fixture {
	t.Helper()
	return newFixtureAt(t, dsn, threads, s, "")
}

// newFixtureAt is newFixture at an isolation level ("": the default).
func newFixtureAt(t testing.TB, dsn string, threads int, s container.Settings, iso store.Isolation) fixture {
	t.Helper()
	return newFixtureOf(t, dsn, threads, account(), s, iso)
}

// newFixtureOf is newFixtureAt with typ, a variant of account().
func newFixtureOf(t testing.TB, dsn string, threads int, typ *container.Type, s container.Settings, iso store.Isolation) fixture {
	t.Helper()
	db := storetest.Open(t, dsn, store.Options{Threads: threads, Isolation: iso})
	if err := db.ExecScript(context.Background(), schema); err != nil {
		t.Fatal(err)
	}
	ctr, err := container.New(context.Background(), db, []*container.Type{typ}, map[string]container.Settings{typ.Name: s})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{db: db, ctr: ctr, h: ctr.Home(typ.Name)}
}

// findIn runs one transaction on thread 0 that finds the keys.
func (f fixture) findIn(t *testing.T, keys ...int64) {
	t.Helper()
	tx, err := f.ctr.BeginReadOnly(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := tx.Find(f.h, container.Key{A: k}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// The paper's lifecycle, exactly: find account 1 in three transactions,
// then account 2, under each commit option.
func TestLifecycleCountsPerCommitOption(t *testing.T) {
	type counts struct{ finds, hits, loads, act, inst, pass, disc, readyEnd, pooledEnd, peakReady int64 }
	tests := []struct {
		name string
		s    container.Settings
		want counts
	}{
		{"A keeps data", settings(container.OptionA, 10, 10), counts{4, 2, 2, 2, 2, 0, 0, 2, 0, 2}},
		{"B keeps identity, reloads", settings(container.OptionB, 10, 10), counts{4, 0, 4, 2, 2, 0, 0, 2, 0, 2}},
		{"C passivates to the pool", settings(container.OptionC, 10, 10), counts{4, 0, 4, 4, 1, 4, 0, 0, 1, 1}},
		{"C without a pool discards", settings(container.OptionC, 10, 0), counts{4, 0, 4, 4, 4, 4, 4, 0, 0, 1}},
		{"A without a cache is C", settings(container.OptionA, 0, 10), counts{4, 0, 4, 4, 1, 4, 0, 0, 1, 1}},
		{"D within the refresh interval is A", settings(container.OptionD, 10, 10), counts{4, 2, 2, 2, 2, 0, 0, 2, 0, 2}},
	}
	expired := settings(container.OptionD, 10, 10)
	expired.Refresh = time.Nanosecond
	tests = append(tests, struct {
		name string
		s    container.Settings
		want counts
	}{"D past the refresh interval reloads", expired, counts{4, 0, 4, 2, 2, 0, 0, 2, 0, 2}})
	storetest.Each(t, func(t *testing.T, dsn string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t, dsn, 1, tt.s)
				before := f.db.Stats().Statements
				f.findIn(t, 1)
				f.findIn(t, 1)
				f.findIn(t, 1)
				f.findIn(t, 2)
				s := f.h.Stats()
				got := counts{s.Finds, s.CacheHits, s.Loads, s.Activations, s.Instantiations, s.Passivations, s.Discards, s.ReadyAtEnd, s.PooledAtEnd, s.PeakReady}
				if got != tt.want {
					t.Errorf("got  %+v\nwant %+v", got, tt.want)
				}
				if stmts := f.db.Stats().Statements - before; stmts != tt.want.loads {
					t.Errorf("%d statements for %d loads (CMP: one query per load)", stmts, tt.want.loads)
				}
			})
		}
	})
}

func TestReadyCacheIsLRUAndPoolIsBounded(t *testing.T) {
	f := newFixture(t, storetest.SQLite(t), 1, settings(container.OptionA, 2, 1))
	f.findIn(t, 1)
	f.findIn(t, 2)
	f.findIn(t, 1) // 1 is now the most recently used, 2 the least
	f.findIn(t, 3) // evicts 2 into the pool
	f.findIn(t, 1) // still cached
	s := f.h.Stats()
	if s.Finds != 5 || s.CacheHits != 2 || s.Loads != 3 || s.Passivations != 1 || s.ReadyAtEnd != 2 || s.PooledAtEnd != 1 {
		t.Errorf("after 1,2,1,3,1 with cache 2: %+v; want 2 hits, 3 loads, 1 passivation (of 2), 2 ready, 1 pooled", s)
	}
	f.findIn(t, 2) // evicts 3 (LRU), 2 reuses the pooled instance
	s = f.h.Stats()
	if s.Instantiations != 3 || s.Passivations != 2 || s.PooledAtEnd != 1 || s.Discards != 0 {
		t.Errorf("after finding 2 again: %+v; want 3 instantiations (2 came from the pool), 2 passivations", s)
	}

	// Three instances in one transaction with option C and a pool of one:
	// one is pooled, two are discarded.
	g := newFixture(t, storetest.SQLite(t), 1, settings(container.OptionC, 0, 1))
	g.findIn(t, 1, 2, 3)
	s = g.h.Stats()
	if s.PeakReady != 3 || s.PooledAtEnd != 1 || s.Discards != 2 || s.ReadyAtEnd != 0 {
		t.Errorf("option C, pool 1, three instances: %+v; want peak ready 3, 1 pooled, 2 discarded", s)
	}
}

func TestPersistenceStrategiesIssueTheirStatements(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		for _, p := range []struct {
			persistence                              container.Persistence
			find, collection, storeDirty, storeClean int64
		}{
			{container.CMP, 1, 1, 1, 0},
			{container.BMP, 2, 1 + 3, 1, 1},
			{container.BMPChecked, 2, 1 + 3, 1, 0},
		} {
			t.Run(string(p.persistence), func(t *testing.T) {
				s := settings(container.OptionC, 0, 10)
				s.Persistence, s.Concurrency = p.persistence, container.Optimistic
				f := newFixture(t, dsn, 1, s)
				stmts := func() int64 { return f.db.Stats().Statements }

				n := stmts()
				f.findIn(t, 1)
				if got := stmts() - n; got != p.find {
					t.Errorf("find by key: %d statements, want %d", got, p.find)
				}

				n = stmts()
				tx, _ := f.ctr.BeginReadOnly(ctx, 0)
				rich, err := tx.FindMany(f.h, "richerThan", nil, 250)
				if err != nil || len(rich) != 3 || rich[0].Key().A != 3 || rich[2].Int(fCredit) != 500 {
					t.Fatalf("richerThan 250: %d instances, %v", len(rich), err)
				}
				tx.Commit()
				if got := stmts() - n; got != p.collection {
					t.Errorf("collection finder of 3: %d statements, want %d", got, p.collection)
				}

				// A dirty instance: only its modified column is stored under
				// CMP, so a name changed meanwhile by someone else survives;
				// BMP writes every column back.
				n = stmts()
				tx, _ = f.ctr.Begin(ctx, 0)
				a, err := tx.Find(f.h, container.Key{A: 2})
				if err != nil {
					t.Fatal(err)
				}
				a.SetInt(fCredit, 222)
				// SQLite admits no other writer while this transaction
				// writes, so the rename can only be tried on the servers.
				concurrent := f.db.Dialect() != store.SQLite
				if concurrent {
					out := storePrepare(t, f.db, "UPDATE acct SET name = 'renamed' WHERE id = 2")
					if _, err := f.db.Exec(ctx, out); err != nil {
						t.Fatal(err)
					}
					n++ // the out-of-band update
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				if got := stmts() - n; got != p.find+p.storeDirty {
					t.Errorf("find and store of a dirty instance: %d statements, want %d", got, p.find+p.storeDirty)
				}
				if credit := queryInt(t, f.db, "SELECT credit FROM acct WHERE id = 2"); credit != 222 {
					t.Errorf("credit after the store = %d, want 222", credit)
				}
				name := queryString(t, f.db, "SELECT name FROM acct WHERE id = 2")
				if wantName := map[bool]string{true: "renamed", false: "two"}[p.persistence != container.BMP]; concurrent && name != wantName {
					t.Errorf("name after storing credit = %q, want %q", name, wantName)
				}

				n = stmts()
				tx, _ = f.ctr.Begin(ctx, 0)
				if _, err := tx.Find(f.h, container.Key{A: 4}); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				if got := stmts() - n; got != p.find+p.storeClean {
					t.Errorf("find and commit of a clean instance: %d statements, want %d", got, p.find+p.storeClean)
				}
			})
		}
	})
}

func storePrepare(t *testing.T, db *store.DB, sql string) *store.Stmt {
	t.Helper()
	s, err := db.Prepare(context.Background(), store.Statement{Name: "test", SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func queryString(t *testing.T, db *store.DB, sql string) string {
	t.Helper()
	var s string
	if err := db.QueryRow(context.Background(), storePrepare(t, db, sql)).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func queryInt(t *testing.T, db *store.DB, sql string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), storePrepare(t, db, sql)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFindersCreateAndRemove(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, 1, settings(container.OptionA, 10, 10))
		tx, _ := f.ctr.Begin(ctx, 0)
		three, err := tx.FindOne(f.h, "byName", "three")
		if err != nil || three.Key().A != 3 || three.Int(fCredit) != 300 {
			t.Fatalf("byName three: %v, %v", three, err)
		}
		if _, err := tx.FindOne(f.h, "byName", "nobody"); !errors.Is(err, container.ErrNotFound) {
			t.Errorf("byName nobody: %v, want ErrNotFound", err)
		}
		if _, err := tx.Find(f.h, container.Key{A: 99}); !errors.Is(err, container.ErrNotFound) {
			t.Errorf("find 99: %v, want ErrNotFound", err)
		}
		six, err := tx.Create(f.h, container.Key{A: 6})
		if err != nil {
			t.Fatal(err)
		}
		six.SetString(fName, "six")
		six.SetInt(fCredit, 600)
		one, _ := tx.Find(f.h, container.Key{A: 1})
		tx.Remove(one)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := queryInt(t, f.db, "SELECT COUNT(*) FROM acct WHERE id IN (1, 6)"); n != 1 {
			t.Errorf("after create 6 and remove 1: %d of them exist, want 1", n)
		}
		if s := f.h.Stats(); s.Creates != 1 || s.Removes != 1 {
			t.Errorf("creates %d, removes %d; want 1, 1", s.Creates, s.Removes)
		}
		// Under option A the created instance is cached with its data.
		hits := f.h.Stats().CacheHits
		f.findIn(t, 6)
		if f.h.Stats().CacheHits != hits+1 {
			t.Error("the created instance was not served from the cache")
		}
	})
}

func TestRejectedCombinationSaysWhy(t *testing.T) {
	run := container.Settings{CommitOption: container.OptionA, Cache: container.Size{Percent: 100, Relative: true}, Pool: container.Size{Percent: 20, Relative: true},
		Persistence: container.CMP, Concurrency: container.Database, Refresh: time.Second, LockTimeout: time.Second}
	_, err := container.Resolve(run, account(), nil)
	if err == nil || !strings.Contains(err.Error(), "would lose updates") || !strings.Contains(err.Error(), "exclusive or optimistic") {
		t.Fatalf("A with database concurrency: %v; want a rejection that says why and what to use", err)
	}
	run.Concurrency = container.Exclusive
	pool10 := mustSetting(t, "Account.pool=10")
	other := mustSetting(t, "Item.pool=7")
	s, err := container.Resolve(run, account(), []container.Setting{pool10, other})
	if err != nil || s.Cache != run.Cache || s.Pool != (container.Size{N: 10}) {
		t.Errorf("resolve: %+v, %v; want the run's cache and the Account pool of 10 (the Item setting is another type's)", s, err)
	}
	preset := account()
	preset.Preset.CommitOption = container.OptionC
	if s, _ := container.Resolve(run, preset, nil); s.CommitOption != container.OptionC {
		t.Errorf("a type's preset commit option C: resolved to %s", s.CommitOption)
	}
	if s, _ := container.Resolve(run, preset, []container.Setting{mustSetting(t, "Account.commit-option=B")}); s.CommitOption != container.OptionB {
		t.Errorf("the user's setting over a type's preset: resolved to %s, want B", s.CommitOption)
	}
	notUpdated := account()
	notUpdated.Updated = false
	run.Concurrency = container.Database
	if _, err := container.Resolve(run, notUpdated, nil); err != nil {
		t.Errorf("A with database concurrency on a type that is never updated: %v, want accepted", err)
	}
	if _, err := container.Resolve(run, account(), []container.Setting{mustSetting(t, "Account.concurrency=readonly")}); err == nil {
		t.Error("readonly concurrency on an updated type accepted")
	}
	// None given: each type's commit option decides, also one set for
	// that type alone.
	run.CommitOption, run.Concurrency = container.OptionC, ""
	for _, tt := range []struct {
		user []container.Setting
		want container.Concurrency
	}{
		{nil, container.Database},
		{[]container.Setting{mustSetting(t, "Account.commit-option=A")}, container.Exclusive},
		{[]container.Setting{mustSetting(t, "Account.commit-option=D")}, container.Exclusive},
		{[]container.Setting{mustSetting(t, "Account.commit-option=B")}, container.Database},
		{[]container.Setting{mustSetting(t, "Account.commit-option=A"), mustSetting(t, "Account.concurrency=optimistic")}, container.Optimistic},
	} {
		if s, err := container.Resolve(run, account(), tt.user); err != nil || s.Concurrency != tt.want {
			t.Errorf("no concurrency given, %v: %s (%v), want %s", tt.user, s.Concurrency, err, tt.want)
		}
	}
}

func mustSetting(t *testing.T, s string) container.Setting {
	t.Helper()
	v, err := container.ParseSetting(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A setting is parsed once, when it is given: every bad one is refused
// there, naming what was wrong and what is allowed.
func TestSettingsAreRefusedWhenGiven(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Account.commit-option=E", "allowed: A, B, C, D"},
		{"Account.cache=lots", "percentage"},
		{"Account.pool=-1", "not a size"},
		{"Account.colour=red", "no setting colour"},
		{"Account.persistence=direct", "a run's persistence"},
		{"Account.concurrency=eventual", "allowed: database"},
		{"Account.lock-timeout=0s", "not a positive duration"},
		{"Account.refresh-interval=soon", "not a positive duration"},
		{"Account=1", "NAME.key=value"},
		{".cache=1", "NAME.key=value"},
		{"Account.cache=", "NAME.key=value"},
	} {
		if _, err := container.ParseSetting(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSetting(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
	s := mustSetting(t, "Account.refresh-interval=2s")
	if text, _ := s.MarshalText(); string(text) != "Account.refresh-interval=2s" {
		t.Errorf("the setting reads back as %q", text)
	}
	var back container.Setting
	if err := back.UnmarshalText([]byte("Account.lock-timeout=250ms")); err != nil || back.Type != "Account" || back.Key != "lock-timeout" {
		t.Errorf("UnmarshalText: %+v, %v", back, err)
	}
	run := settings(container.OptionA, 1, 1)
	r, _ := container.Resolve(run, account(), []container.Setting{s, back})
	if r.Refresh != 2*time.Second || r.LockTimeout != 250*time.Millisecond {
		t.Errorf("resolved refresh %v, lock timeout %v; want 2s, 250ms", r.Refresh, r.LockTimeout)
	}
}

func TestExclusiveSerializesAndCountsWaits(t *testing.T) {
	ctx := context.Background()
	s := settings(container.OptionA, 10, 10)
	s.LockTimeout = 200 * time.Millisecond
	f := newFixture(t, storetest.SQLite(t), 2, s)
	tx1, _ := f.ctr.Begin(ctx, 0)
	a1, err := tx1.Find(f.h, container.Key{A: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A second transaction on the same identity times out while the first
	// holds it. (Readers take exclusive locks too; a second writer could
	// not even begin on SQLite while the first writes.)
	tx2, _ := f.ctr.BeginReadOnly(ctx, 1)
	if _, err := tx2.Find(f.h, container.Key{A: 1}); !errors.Is(err, container.ErrLockTimeout) || !store.Retryable(err) {
		t.Fatalf("second finder: %v, want a retryable ErrLockTimeout", err)
	}
	tx2.Rollback()
	// It waits, and proceeds once the first commits.
	got := make(chan int64)
	go func() {
		tx, _ := f.ctr.BeginReadOnly(ctx, 1)
		a, err := tx.Find(f.h, container.Key{A: 1})
		if err != nil {
			t.Error(err)
			got <- 0
			return
		}
		got <- a.Int(fCredit)
		tx.Commit()
	}()
	for f.h.Stats().LockWaits < 2 {
		time.Sleep(time.Millisecond) // until the goroutine waits
	}
	a1.SetInt(fCredit, 111)
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	if credit := <-got; credit != 111 {
		t.Errorf("the waiter saw credit %d, want the first transaction's 111", credit)
	}
	if s := f.h.Stats(); s.LockWaits != 2 || s.LockTimeouts != 1 {
		t.Errorf("lock waits %d, timeouts %d; want 2, 1", s.LockWaits, s.LockTimeouts)
	}
}

func TestOptimisticCountsConflicts(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		s := settings(container.OptionB, 10, 10)
		s.Concurrency = container.Optimistic
		f := newFixture(t, dsn, 2, s)
		if f.db.Dialect() == store.SQLite {
			t.Skip("SQLite runs one writing transaction at a time: two cannot both read a row before either stores it")
		}
		tx1, _ := f.ctr.Begin(ctx, 0)
		tx2, _ := f.ctr.Begin(ctx, 1)
		a1, err1 := tx1.Find(f.h, container.Key{A: 1})
		a2, err2 := tx2.Find(f.h, container.Key{A: 1})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		a1.SetInt(fCredit, 101)
		a2.SetInt(fCredit, 102)
		if err := tx1.Commit(); err != nil {
			t.Fatal(err)
		}
		err := tx2.Commit()
		if !errors.Is(err, container.ErrConflict) || !store.Retryable(err) {
			t.Fatalf("second commit: %v, want a retryable ErrConflict", err)
		}
		if credit := queryInt(t, f.db, "SELECT credit FROM acct WHERE id = 1"); credit != 101 {
			t.Errorf("credit %d, want the first commit's 101", credit)
		}
		if v := queryInt(t, f.db, "SELECT version FROM acct WHERE id = 1"); v != 1 {
			t.Errorf("version %d, want 1", v)
		}
		if c := f.h.Stats().Conflicts; c != 1 {
			t.Errorf("conflicts %d, want 1", c)
		}
	})
}

// Concurrent read-modify-write of two hot rows under every strategy that
// is accepted, with read-only transactions reading them meanwhile: no
// update may be lost, and no read may return data older than what was
// committed before its transaction began. On SQLite, where writers take
// turns, it is the readers that can meet a stale cached instance.
func TestNoLostUpdateUnderAnyAcceptedStrategy(t *testing.T) {
	ctx := context.Background()
	const writers, readers, each = 4, 2, 25
	storetest.Each(t, func(t *testing.T, dsn string) {
		for si, s := range acceptedStrategies(t) {
			t.Run(strategyName(s), func(t *testing.T) {
				storetest.ShareCell(t, dsn, si)
				f := newFixture(t, dsn, writers+readers, s)
				log := &modelLog{}
				var wg sync.WaitGroup
				for th := range writers + readers {
					wg.Go(func() {
						for i := range each {
							p := txPlan{readOnly: th >= writers, keys: []int64{int64(1 + i%2)}, adds: []int64{1}, byName: []bool{false}, pauses: []time.Duration{0}}
							if err := runPlan(ctx, f, log, th, i, p); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				for _, p := range log.check(t, f.db) {
					t.Error(p)
				}
				total := queryInt(t, f.db, "SELECT SUM(credit) FROM acct WHERE id IN (1, 2)")
				if want := int64(100 + 200 + writers*each); total != want {
					t.Errorf("credits sum to %d after %d increments, want %d: updates were lost", total, writers*each, want)
				}
			})
		}
	})
}

func increment(ctx context.Context, f fixture, thread int, key container.Key) error {
	tx, err := f.ctr.Begin(ctx, thread)
	if err != nil {
		return err
	}
	a, err := tx.Find(f.h, key)
	if err != nil {
		tx.Rollback()
		return err
	}
	a.SetInt(fCredit, a.Int(fCredit)+1)
	return tx.Commit()
}

// Two transactions taking exclusive locks in opposite orders: the second
// to wait closes the cycle and is told at once (a retryable deadlock), not
// after the lock timeout.
func TestExclusiveDeadlockIsDetectedAtOnce(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		s := settings(container.OptionA, 10, 10)
		s.LockTimeout = time.Minute
		f := newFixture(t, dsn, 2, s)
		tx1, _ := f.ctr.BeginReadOnly(ctx, 0)
		tx2, _ := f.ctr.BeginReadOnly(ctx, 1)
		if _, err := tx1.Find(f.h, container.Key{A: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx2.Find(f.h, container.Key{A: 2}); err != nil {
			t.Fatal(err)
		}
		first := make(chan error)
		go func() {
			_, err := tx1.Find(f.h, container.Key{A: 2}) // waits for tx2
			first <- err
		}()
		for f.h.Stats().LockWaits < 1 {
			time.Sleep(time.Millisecond)
		}
		began := time.Now()
		_, err := tx2.Find(f.h, container.Key{A: 1}) // would wait for tx1: a cycle
		if !errors.Is(err, container.ErrDeadlock) || !store.Retryable(err) {
			t.Fatalf("closing the cycle: %v, want a retryable ErrDeadlock", err)
		}
		if waited := time.Since(began); waited > time.Second {
			t.Errorf("the deadlock took %v to detect; it must not wait for the lock timeout", waited)
		}
		tx2.Rollback()
		if err := <-first; err != nil {
			t.Errorf("the first transaction, once tx2 rolled back: %v", err)
		}
		tx1.Commit()
		if d := f.h.Stats().Deadlocks; d != 1 {
			t.Errorf("deadlocks counted: %d, want 1", d)
		}
	})
}

// A size in percent follows the type's rows: counted when the container
// starts, then moved by each create and remove it commits (and not by one
// rolled back). A run bounded by time and one bounded by iterations thus
// resolve it the same way.
func TestPercentSizesFollowTheRows(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		s := settings(container.OptionC, 0, 0)
		s.Cache = container.Size{Percent: 50, Relative: true}
		s.Pool = container.Size{Percent: 40, Relative: true}
		f := newFixture(t, dsn, 1, s)
		sizes := func(rows int64, cache, pool int) {
			t.Helper()
			st := f.h.Stats()
			if st.Rows != rows || st.CacheSize != cache || st.PoolSize != pool {
				t.Fatalf("rows %d, cache %d, pool %d; want %d, %d, %d", st.Rows, st.CacheSize, st.PoolSize, rows, cache, pool)
			}
		}
		sizes(5, 3, 2) // 50% of 5 rounds to 3, 40% is 2
		create := func(from, to int64, commit bool) {
			t.Helper()
			tx, _ := f.ctr.Begin(ctx, 0)
			for k := from; k <= to; k++ {
				i, err := tx.Create(f.h, container.Key{A: k})
				if err != nil {
					t.Fatal(err)
				}
				i.SetString(fName, "n")
			}
			if !commit {
				tx.Rollback()
				return
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		create(6, 10, true)
		sizes(10, 5, 4)
		create(11, 20, false)
		sizes(10, 5, 4)
		tx, _ := f.ctr.Begin(ctx, 0)
		for k := int64(1); k <= 5; k++ {
			i, err := tx.Find(f.h, container.Key{A: k})
			if err != nil {
				t.Fatal(err)
			}
			tx.Remove(i)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		sizes(5, 3, 2)
		if n := queryInt(t, f.db, "SELECT COUNT(*) FROM acct"); n != 5 {
			t.Fatalf("%d rows in the table, want 5: the count above must be the table's", n)
		}
	})
}

// A transaction whose begin fails (its context already done) leaves
// nothing held: on SQLite the writer lock taken at begin is released, so
// the next transaction runs instead of waiting for ever (a leak that hung
// ECperf's runs when an agent's context ended as it began).
func TestFailedBeginHoldsNothing(t *testing.T) {
	f := newFixture(t, storetest.SQLite(t), 2, settings(container.OptionC, 0, 10))
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if tx, err := f.ctr.Begin(done, 0); err == nil {
		tx.Rollback()
		t.Fatal("Begin with a cancelled context succeeded; the test needs it to fail")
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	tx, err := f.ctr.Begin(ctx, 1)
	if err != nil {
		t.Fatalf("the next Begin: %v (the failed one kept the writer lock)", err)
	}
	if _, err := tx.Find(f.h, container.Key{A: 1}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
