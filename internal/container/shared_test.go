package container_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/sharedcache"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// appServer is one app server of a shared-coherence test: its own
// database handle, container and shared-cache client, over the database
// and the Redis run the others use.
type appServer struct {
	fixture
	cache *sharedcache.Cache
}

// appServers starts n app servers over dsn's database (made once) and
// one run's keys in the real Redis. near: each keeps a near cache.
func appServers(t testing.TB, dsn string, n, threads int, s container.Settings, near bool) []appServer {
	t.Helper()
	return appServersAt(t, dsn, n, threads, s, near, "")
}

// appServersAt is appServers at an isolation level ("": the default).
func appServersAt(t testing.TB, dsn string, n, threads int, s container.Settings, near bool, iso store.Isolation) []appServer {
	t.Helper()
	redisURL, run := testsvc.Redis(t)
	ctx := context.Background()
	var out []appServer
	for i := range n {
		db := storetest.Open(t, dsn, store.Options{Threads: threads, Isolation: iso})
		if i == 0 {
			if err := db.ExecScript(ctx, schema); err != nil {
				t.Fatal(err)
			}
		}
		ctr, err := container.New(ctx, db, []*container.Type{account()}, map[string]container.Settings{"Account": s})
		if err != nil {
			t.Fatal(err)
		}
		cache, err := sharedcache.Open(ctx, redisURL, sharedcache.Options{Run: run, NoNearCache: !near})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if i == 0 {
				if err := cache.Clear(context.Background()); err != nil {
					t.Error(err)
				}
			}
			cache.Close()
		})
		ctr.UseSharedCache(cache)
		out = append(out, appServer{fixture: fixture{db: db, ctr: ctr, h: ctr.Home("Account")}, cache: cache})
	}
	return out
}

// sharedSettings: coherence shared under option opt, the concurrency its
// default for the account type (optimistic: it has a version column).
func sharedSettings(t testing.TB, opt container.CommitOption, p container.Persistence, c container.Concurrency) container.Settings {
	t.Helper()
	run := container.Settings{CommitOption: opt, Cache: container.Size{N: 2}, Pool: container.Size{N: 2}, Persistence: p, Concurrency: c,
		Refresh: time.Hour, LockTimeout: 2 * time.Second, Coherence: container.Shared}
	s, err := container.Resolve(run, account(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// credit reads account key's credit in a read-only transaction of srv.
func (srv appServer) credit(t *testing.T, key int64) (c int64) {
	t.Helper()
	srv.onAccount(t, true, key, func(a *container.Instance) { c = a.Int(fCredit) })
	return c
}

// add adds n to account key's credit in srv.
func (srv appServer) add(t *testing.T, key, n int64) {
	t.Helper()
	srv.onAccount(t, false, key, func(a *container.Instance) { a.SetInt(fCredit, a.Int(fCredit)+n) })
}

// onAccount runs do on account key in a transaction of srv's thread 0.
func (srv appServer) onAccount(t *testing.T, readOnly bool, key int64, do func(*container.Instance)) {
	t.Helper()
	begin := srv.ctr.Begin
	if readOnly {
		begin = srv.ctr.BeginReadOnly
	}
	tx, err := begin(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := tx.Find(srv.h, container.Key{A: key})
	if err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	do(a)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A load the server's own cache cannot serve reads the shared cache
// first: the first server's miss loads from the database (one statement)
// and fills Redis; the second server's find is then one Redis round trip
// and no statement; its next transaction's find is a near-cache hit,
// whose only round trip is the transaction's Sync.
func TestSharedCacheHitIsOneRoundTripAndNoStatement(t *testing.T) {
	for _, near := range []bool{false, true} {
		t.Run(fmt.Sprintf("near=%v", near), func(t *testing.T) {
			servers := appServers(t, storetest.SQLite(t), 2, 1, sharedSettings(t, container.OptionA, container.CMP, ""), near)
			first, second := servers[0], servers[1]
			statements := func(s appServer) int64 { return s.db.Stats().Statements }
			before, trips := statements(first), first.cache.RoundTrips()
			if c := first.credit(t, 1); c != 100 {
				t.Fatalf("credit %d, want 100", c)
			}
			// The miss: a read, the load, the fill.
			if n := statements(first) - before; n != 1 {
				t.Errorf("first server's miss ran %d statements, want 1", n)
			}
			if n := first.cache.RoundTrips() - trips; n != 2 {
				t.Errorf("first server's miss made %d round trips, want 2 (the read, the fill)", n)
			}
			st := first.h.Stats()
			if st.SharedMisses != 1 || st.Loads != 1 || st.SharedPuts != 1 || st.SharedHits != 0 {
				t.Errorf("first server: shared misses %d, loads %d, puts %d, hits %d; want 1, 1, 1, 0", st.SharedMisses, st.Loads, st.SharedPuts, st.SharedHits)
			}

			before, trips = statements(second), second.cache.RoundTrips()
			if c := second.credit(t, 1); c != 100 {
				t.Fatalf("credit %d, want 100", c)
			}
			if n := statements(second) - before; n != 0 {
				t.Errorf("a shared-cache hit ran %d statements, want 0", n)
			}
			if n := second.cache.RoundTrips() - trips; n != 1 {
				t.Errorf("a shared-cache hit made %d round trips, want 1", n)
			}
			trips = second.cache.RoundTrips()
			if c := second.credit(t, 1); c != 100 {
				t.Fatalf("credit %d, want 100", c)
			}
			st = second.h.Stats()
			wantNear, wantTrips := int64(0), int64(1) // without a near cache, a Redis hit again
			if near {
				wantNear = 1 // and its round trip is the Sync
			}
			if n := second.cache.RoundTrips() - trips; n != wantTrips {
				t.Errorf("the second transaction's hit made %d round trips, want %d", n, wantTrips)
			}
			if st.SharedHits != 2 || st.NearHits != wantNear || st.Loads != 0 || st.Finds != 2 {
				t.Errorf("second server: shared hits %d, near hits %d, loads %d, finds %d; want 2, %d, 0, 2", st.SharedHits, st.NearHits, st.Loads, st.Finds, wantNear)
			}
		})
	}
}

// A write committed on one server is seen by the next transaction on the
// other, whose near cache held the old state; with the commit's
// invalidation switched off, it is not (the test's own check fails).
func TestSharedWriteIsSeenByTheOtherServer(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("invalidation-off=%v", off), func(t *testing.T) {
			servers := appServers(t, storetest.SQLite(t), 2, 1, sharedSettings(t, container.OptionA, container.CMP, ""), true)
			writer, reader := servers[0], servers[1]
			container.SkipSharedInvalidation(writer.ctr, off)
			if c := reader.credit(t, 2); c != 200 {
				t.Fatalf("credit %d, want 200", c)
			}
			reader.credit(t, 2) // now in the reader's near cache
			writer.add(t, 2, 5)
			got := reader.credit(t, 2)
			if off {
				if got != 200 {
					t.Fatalf("with invalidation off the reader read %d; the check below could not fail", got)
				}
				return
			}
			if got != 205 {
				t.Fatalf("the reader read credit %d after the writer committed 205 (stale read)", got)
			}
			if st := writer.h.Stats(); st.SharedInvalidations != 1 {
				t.Errorf("%d shared invalidations, want 1", st.SharedInvalidations)
			}
			// Optimistic: the commit wrote its state through, so the
			// reader's find was a hit, not a load.
			if st := reader.h.Stats(); st.Loads != 1 || st.SharedHits != 2 {
				t.Errorf("reader: %d loads, %d shared hits; want 1 (its first find) and 2", st.Loads, st.SharedHits)
			}
		})
	}
}

// A reader that loaded from the database before a commit cannot fill the
// shared cache after the commit's invalidation: its fill is refused, and
// the next reader loads the committed state.
func TestSharedFillAfterInvalidationIsRefused(t *testing.T) {
	servers := appServers(t, storetest.SQLite(t), 1, 1, sharedSettings(t, container.OptionB, container.CMP, ""), true)
	cache, typ, ctx := servers[0].cache, servers[0].h.Type(), context.Background()
	vals := make([]container.Value, len(typ.Fields))
	var version int64
	r, err := cache.Read(ctx, typ, container.Key{A: 3}, vals, &version)
	if err != nil || r.Hit {
		t.Fatalf("read: %+v, %v; want a miss", r, err)
	}
	// The commit of a write that the reader's database read predates.
	if err := cache.Invalidate(ctx, []container.SharedID{{Type: typ, Key: container.Key{A: 3}}}); err != nil {
		t.Fatal(err)
	}
	vals[fName].S, vals[fCredit].I = "three", 300
	if ok, err := cache.Fill(ctx, typ, container.Key{A: 3}, r.Epoch, vals, 0); err != nil || ok {
		t.Fatalf("fill with the epoch before the invalidation: stored %v, %v; want refused", ok, err)
	}
	r, err = cache.Read(ctx, typ, container.Key{A: 3}, vals, &version)
	if err != nil || r.Hit || r.Epoch != 1 {
		t.Fatalf("read after: %+v, %v; want a miss at epoch 1", r, err)
	}
	if ok, err := cache.Fill(ctx, typ, container.Key{A: 3}, r.Epoch, vals, 0); err != nil || !ok {
		t.Fatalf("fill with the current epoch: stored %v, %v; want stored", ok, err)
	}
}

// sharedStrategies are the shared-coherence cells of the property test:
// every commit option, container persistence and concurrency that
// coherence shared accepts for the updated account type.
func sharedStrategies(t *testing.T) []container.Settings {
	var out []container.Settings
	for _, opt := range []container.CommitOption{container.OptionA, container.OptionB, container.OptionC, container.OptionD} {
		for _, p := range []container.Persistence{container.CMP, container.BMP, container.BMPChecked} {
			for _, c := range []container.Concurrency{container.Database, container.Optimistic} {
				out = append(out, sharedSettings(t, opt, p, c))
			}
		}
	}
	return out
}

// Random concurrent transactions on three hot accounts over two app
// servers that share one database and one Redis run, under every
// strategy coherence shared accepts, checked against the serial model:
// no lost update, no stale read, no dirty read.
func TestSharedServersMatchTheSerialModel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		for si, s := range sharedStrategies(t) {
			t.Run(strategyName(s), func(t *testing.T) {
				storetest.ShareCell(t, dsn, si)
				servers := appServers(t, dsn, 2, 2, s, true)
				log := runAcross(t, servers, si, 10)
				for _, p := range log.check(t, servers[0].db) {
					t.Error(p)
				}
				var hits int64
				for _, srv := range servers {
					hits += srv.h.Stats().SharedHits
				}
				t.Logf("%d shared-cache hits", hits)
			})
		}
	})
}

// runAcross runs perThread random plans on each thread of each server
// and returns the log.
func runAcross(t *testing.T, servers []appServer, seed, perThread int) *modelLog {
	t.Helper()
	ctx := context.Background()
	sorted := servers[0].h.Settings().Concurrency == container.Database
	log := &modelLog{}
	var wg sync.WaitGroup
	for si, srv := range servers {
		for th := range srv.db.Threads() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(si*16+th)))
			wg.Go(func() {
				for n := range perThread {
					if err := runPlan(ctx, srv.fixture, log, th, si*1000+n, randomPlan(rng, sorted)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return log
}

// The serial model's check catches what the commit's invalidation
// prevents: with it switched off, a server reads an account's credit
// from its near cache after the other committed a newer one (a stale
// read). Writes stay right even then: a writer's stale state fails the
// database's version check (and, the state never being invalidated,
// fails it again on every retry).
func TestSharedModelFailsWithoutInvalidation(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("invalidation-off=%v", off), func(t *testing.T) {
			servers := appServers(t, storetest.SQLite(t), 2, 1, sharedSettings(t, container.OptionA, container.CMP, ""), true)
			for _, srv := range servers {
				container.SkipSharedInvalidation(srv.ctr, off)
			}
			ctx, log := context.Background(), &modelLog{}
			read := txPlan{readOnly: true, keys: []int64{1}, adds: []int64{0}, byName: []bool{false}, pauses: []time.Duration{0}}
			write := txPlan{keys: []int64{1}, adds: []int64{7}, byName: []bool{false}, pauses: []time.Duration{0}}
			steps := []struct {
				server int
				plan   txPlan
			}{{1, read}, {0, write}, {1, read}, {0, read}}
			for n, step := range steps {
				if err := runPlan(ctx, servers[step.server].fixture, log, step.server, n, step.plan); err != nil {
					t.Fatal(err)
				}
			}
			problems := log.check(t, servers[0].db)
			if off && len(problems) == 0 {
				t.Fatal("with the shared cache's invalidation off the model found nothing; want stale reads")
			}
			if !off {
				for _, p := range problems {
					t.Error(p)
				}
			}
			t.Logf("%d problems: %q", len(problems), problems)
		})
	}
}

// Only a load that saw every commit made before it started fills the
// shared cache: at READ COMMITTED each statement does; at REPEATABLE READ
// a transaction's snapshot may predate a commit whose invalidation came
// before the miss, so its loads do not fill.
func TestSharedFillsOnlyFromCurrentStatements(t *testing.T) {
	dsn := storetest.Postgres(t)
	for _, c := range []struct {
		iso  store.Isolation
		puts int64
	}{{store.ReadCommitted, 1}, {store.RepeatableRead, 0}} {
		t.Run(string(c.iso), func(t *testing.T) {
			srv := appServersAt(t, dsn, 1, 1, sharedSettings(t, container.OptionB, container.CMP, ""), true, c.iso)[0]
			srv.add(t, 4, 1) // at repeatable read the load runs in the database transaction
			if st := srv.h.Stats(); st.SharedMisses != 1 || st.Loads != 1 || st.SharedPuts != c.puts {
				t.Errorf("misses %d, loads %d, puts %d; want 1, 1, %d", st.SharedMisses, st.Loads, st.SharedPuts, c.puts)
			}
		})
	}
}
