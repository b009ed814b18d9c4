package container_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// The serial model of the account fixture's hot rows: each read-write
// transaction adds a positive amount to the credit of the accounts it
// finds, so an account's committed credits increase strictly, and each
// committed value names the state it was read from. A run is correct when
// the committed transactions form, per account, one chain from the
// initial credit (no lost update, no write based on stale data), the
// database ends at the chain's end, and every read returned a committed
// credit no older than the last one committed before its transaction
// began (no stale read, no dirty read).

var hotNames = map[int64]string{1: "one", 2: "two", 3: "three"}

// initialCredit of the fixture's accounts (schema: id × 100).
func initialCredit(key int64) int64 { return key * 100 }

type modelWrite struct {
	key, read, wrote int64
	began            int64 // logical time before its transaction began
	ended            int64 // logical time the commit returned
}

type modelRead struct {
	key, value     int64
	began, ended   int64
	thread, number int
}

// finderRead is what a richerThan finder returned of the hot accounts.
type finderRead struct {
	threshold      int64
	keys           []int64
	began, ended   int64
	thread, number int
}

// modelLog collects what the transactions did, stamped with a logical
// clock: began is taken before Begin, ended after Commit returned.
type modelLog struct {
	clock   atomic.Int64
	mu      sync.Mutex
	writes  []modelWrite
	reads   []modelRead
	finders []finderRead
}

// txPlan is one transaction of the model: the accounts it finds in order,
// whether it writes, and the amounts it adds.
type txPlan struct {
	readOnly bool
	// richer, when not 0, runs richerThan(richer) first (read-only plans):
	// its results change as credits rise, so under options A and D the
	// finder cache's entries come and go.
	richer int64
	keys   []int64
	adds   []int64
	byName []bool // find through the byName finder instead of by key
	pauses []time.Duration
}

// randomPlan draws a transaction over the hot accounts. sorted: a writer
// finds its accounts in key order.
func randomPlan(rng *rand.Rand, sorted bool) txPlan {
	p := txPlan{readOnly: rng.IntN(10) < 4}
	if p.readOnly && rng.IntN(2) == 0 {
		// Thresholds among the credits the hot accounts pass through
		// (100 to 300 at first, rising by up to 1000 a write).
		p.richer = 100 + rng.Int64N(8)*250
	}
	keys := []int64{1, 2, 3}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	p.keys = keys[:1+rng.IntN(2)]
	if sorted && !p.readOnly {
		slices.Sort(p.keys)
	}
	for range p.keys {
		p.adds = append(p.adds, 1+rng.Int64N(1000))
		p.byName = append(p.byName, rng.IntN(3) == 0)
		// Pauses inside the transaction widen the windows in which
		// transactions overlap, so that the interleavings vary; they
		// synchronise nothing.
		p.pauses = append(p.pauses, time.Duration(rng.IntN(300))*time.Microsecond)
	}
	return p
}

// runPlan runs p on thread until it commits, retrying retryable failures,
// and logs it.
func runPlan(ctx context.Context, f fixture, log *modelLog, thread, number int, p txPlan) error {
	for attempt := 0; ; attempt++ {
		reads, writes, found, began, err := tryPlan(ctx, f, log, thread, p)
		if err == nil {
			ended := log.clock.Add(1)
			log.mu.Lock()
			if found != nil {
				found.began, found.ended, found.thread, found.number = began, ended, thread, number
				log.finders = append(log.finders, *found)
			}
			for _, r := range reads {
				r.began, r.ended, r.thread, r.number = began, ended, thread, number
				log.reads = append(log.reads, r)
			}
			for _, w := range writes {
				w.began, w.ended = began, ended
				log.writes = append(log.writes, w)
			}
			log.mu.Unlock()
			return nil
		}
		if !store.Retryable(err) || attempt == 200 {
			return fmt.Errorf("thread %d transaction %d (attempt %d): %w", thread, number, attempt+1, err)
		}
		// As the driver does: without a pause the victim of a deadlock
		// takes its first lock back before the survivor wakes, and the
		// same cycle closes again.
		time.Sleep(store.Backoff(nil, attempt+1))
	}
}

func tryPlan(ctx context.Context, f fixture, log *modelLog, thread int, p txPlan) (reads []modelRead, writes []modelWrite, found *finderRead, began int64, err error) {
	began = log.clock.Add(1)
	begin := f.ctr.Begin
	if p.readOnly {
		begin = f.ctr.BeginReadOnly
	}
	tx, err := begin(ctx, thread)
	if err != nil {
		return nil, nil, nil, began, err
	}
	if p.richer > 0 {
		all, err := tx.FindMany(f.h, "richerThan", nil, p.richer)
		if err != nil {
			tx.Rollback()
			return nil, nil, nil, began, err
		}
		found = &finderRead{threshold: p.richer}
		for _, a := range all {
			if k := a.Key().A; hotNames[k] != "" {
				found.keys = append(found.keys, k)
			}
		}
	}
	for n, key := range p.keys {
		var a *container.Instance
		if p.byName[n] {
			a, err = tx.FindOne(f.h, "byName", hotNames[key])
		} else {
			a, err = tx.Find(f.h, container.Key{A: key})
		}
		if err != nil {
			tx.Rollback()
			return nil, nil, nil, began, err
		}
		credit := a.Int(fCredit)
		reads = append(reads, modelRead{key: key, value: credit})
		if !p.readOnly {
			a.SetInt(fCredit, credit+p.adds[n])
			writes = append(writes, modelWrite{key: key, read: credit, wrote: credit + p.adds[n]})
		}
		time.Sleep(p.pauses[n])
	}
	return reads, writes, found, began, tx.Commit()
}

// check compares the log with the serial model and the database and
// returns every difference.
func (log *modelLog) check(t *testing.T, db *store.DB) []string {
	t.Helper()
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	committed := map[int64][]modelWrite{}
	for _, w := range log.writes {
		committed[w.key] = append(committed[w.key], w)
	}
	for key := int64(1); key <= 3; key++ {
		chain := committed[key]
		slices.SortFunc(chain, func(a, b modelWrite) int { return int(a.wrote - b.wrote) })
		state := initialCredit(key)
		for _, w := range chain {
			if w.read != state {
				fail("account %d: a committed transaction read %d and wrote %d, but the committed credit before it was %d (lost update, or a write based on stale data)", key, w.read, w.wrote, state)
			}
			state = w.wrote
		}
		if got := queryInt(t, db, fmt.Sprintf("SELECT credit FROM acct WHERE id = %d", key)); got != state {
			fail("account %d: the database holds %d, the serial model of the %d committed writes %d", key, got, len(chain), state)
		}
	}
	// A finder's result holds an account if and only if the database,
	// read directly at some moment of the transaction, would have: credits
	// only rise, so an account it holds must have had a credit above the
	// threshold committed by a transaction that began before it ended (a
	// commit is visible before Commit returns to the writer, so its end
	// stamp can come after the reader's), and one it leaves out must not
	// have had one committed before it began.
	for _, r := range log.finders {
		for key := int64(1); key <= 3; key++ {
			before, by := initialCredit(key), initialCredit(key) // newest committed before began; newest a writer begun before ended could show
			for _, w := range committed[key] {
				if w.ended < r.began && w.wrote > before {
					before = w.wrote
				}
				if w.began < r.ended && w.wrote > by {
					by = w.wrote
				}
			}
			held := slices.Contains(r.keys, key)
			switch {
			case held && by <= r.threshold:
				fail("thread %d transaction %d: richerThan(%d) returned account %d, whose committed credits visible before it ended were at most %d (a phantom)", r.thread, r.number, r.threshold, key, by)
			case !held && before > r.threshold:
				fail("thread %d transaction %d: richerThan(%d) left out account %d, whose credit %d was committed before it began (a stale finder result)", r.thread, r.number, r.threshold, key, before)
			}
		}
	}
	for _, r := range log.reads {
		chain := committed[r.key]
		newest, known := initialCredit(r.key), r.value == initialCredit(r.key)
		for _, w := range chain {
			if w.ended < r.began && w.wrote > newest {
				newest = w.wrote
			}
			known = known || w.wrote == r.value
		}
		switch {
		case !known:
			fail("thread %d transaction %d read credit %d of account %d, which no committed transaction wrote", r.thread, r.number, r.value, r.key)
		case r.value < newest:
			fail("thread %d transaction %d read credit %d of account %d, but %d had been committed before it began (stale read)", r.thread, r.number, r.value, r.key, newest)
		}
	}
	return problems
}

// acceptedStrategies is every commit option × persistence × concurrency
// that the container accepts for an updated type.
func acceptedStrategies(t *testing.T) []container.Settings {
	var out []container.Settings
	for _, opt := range []container.CommitOption{container.OptionA, container.OptionB, container.OptionC, container.OptionD} {
		for _, p := range []container.Persistence{container.CMP, container.BMP, container.BMPChecked} {
			for _, c := range []container.Concurrency{container.Database, container.Exclusive, container.Optimistic} {
				run := container.Settings{CommitOption: opt, Cache: container.Size{N: 2}, Pool: container.Size{N: 2}, Persistence: p, Concurrency: c, Refresh: time.Hour, LockTimeout: 2 * time.Second}
				s, err := container.Resolve(run, account(), nil)
				if err != nil {
					continue // rejected: it would lose updates
				}
				out = append(out, s)
			}
		}
	}
	if len(out) != 4*3*3-2*3 {
		t.Fatalf("%d accepted strategies, want 30 (all but A and D with database concurrency)", len(out))
	}
	return out
}

func strategyName(s container.Settings) string {
	return fmt.Sprintf("%s/%s/%s", s.CommitOption, s.Persistence, s.Concurrency)
}

// Random interleavings of concurrent transactions over three hot accounts,
// under every accepted strategy, compared with the serial model of the
// transactions that committed. The cache (2) is smaller than the hot set
// (3), so instances are also evicted, reused and kept private for want of
// room while others use them.
func TestConcurrentTransactionsMatchTheSerialModel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		for si, s := range acceptedStrategies(t) {
			t.Run(strategyName(s), func(t *testing.T) {
				storetest.ShareCell(t, dsn, si)
				matchesTheSerialModel(t, newFixture(t, dsn, 4, s), si)
			})
		}
	})
}

// The same with a cache large enough to be split into shards, under the
// strategies that keep data across transactions: the hot accounts' locks,
// cached instances and writes in flight live in different shards.
func TestShardedHomeMatchesTheSerialModel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		for si, s := range acceptedStrategies(t) {
			if (s.CommitOption != container.OptionA && s.CommitOption != container.OptionD) || s.Persistence != container.CMP {
				continue
			}
			s.Cache, s.Pool = container.Size{N: 4096}, container.Size{N: 4096}
			t.Run(strategyName(s), func(t *testing.T) {
				f := newFixture(t, dsn, 4, s)
				if n := container.Shards(f.h); n < 2 {
					t.Fatalf("%d shards for a cache of 4096; want several", n)
				}
				matchesTheSerialModel(t, f, si)
			})
		}
	})
}

// matchesTheSerialModel runs random plans on f's threads and checks the
// log against the serial model. seed varies the plans per strategy.
func matchesTheSerialModel(t *testing.T, f fixture, seed int) {
	const threads, perThread = 4, 20
	ctx := context.Background()
	s := f.h.Settings()
	// Under database concurrency the servers' deadlock detection waits a
	// second (PostgreSQL's deadlock_timeout) before it picks a victim;
	// writers take their rows in key order, as the workloads do, to keep
	// the test quick. The container's own locks (exclusive) detect cycles
	// at once and keep the random order.
	sorted := s.Concurrency == container.Database
	log := &modelLog{}
	var wg sync.WaitGroup
	for th := range threads {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(th)))
		wg.Go(func() {
			for n := range perThread {
				if err := runPlan(ctx, f, log, th, n, randomPlan(rng, sorted)); err != nil {
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
	if st := f.h.Stats(); st.FinderHits+st.FinderMisses > 0 {
		t.Logf("finder cache: %d hits, %d misses, %d invalidations", st.FinderHits, st.FinderMisses, st.FinderInvalidations)
	}
}

// The model's checks catch what they are for: a lost update, a stale read
// and a value nobody committed, each planted in an otherwise correct log.
func TestSerialModelCatchesCorruption(t *testing.T) {
	f := newFixture(t, storetest.SQLite(t), 1, settings(container.OptionC, 0, 10))
	good := func() *modelLog {
		l := &modelLog{}
		l.writes = []modelWrite{{key: 1, read: 100, wrote: 110, ended: 2}, {key: 1, read: 110, wrote: 125, ended: 4}}
		l.reads = []modelRead{{key: 1, value: 110, began: 3, ended: 5}}
		return l
	}
	if _, err := f.db.Exec(context.Background(), storePrepare(t, f.db, "UPDATE acct SET credit = 125 WHERE id = 1")); err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(*modelLog){
		"correct":     func(*modelLog) {},
		"lost update": func(l *modelLog) { l.writes[1].read = 100 },
		"stale read":  func(l *modelLog) { l.reads[0].value = 100; l.reads[0].began = 5 },
		"dirty read":  func(l *modelLog) { l.reads[0].value = 117 },
		"stale finder result": func(l *modelLog) {
			l.finders = append(l.finders, finderRead{threshold: 105, keys: []int64{2, 3}, began: 3, ended: 5})
		},
		"phantom in a finder result": func(l *modelLog) {
			l.finders = append(l.finders, finderRead{threshold: 200, keys: []int64{1, 3}, began: 3, ended: 5})
		},
	}
	for name, corrupt := range tests {
		l := good()
		corrupt(l)
		problems := l.check(t, f.db)
		if want := name != "correct"; (len(problems) > 0) != want || len(problems) > 1 {
			t.Errorf("%s: the model found %q; want exactly one problem: %v", name, problems, want)
		}
	}
}
