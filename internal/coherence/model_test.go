package coherence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// plan is one random transaction over the hot accounts.
type plan struct {
	readOnly bool
	richer   int64 // richerThan(richer) first, when not 0 (read-only)
	keys     []int64
	adds     []int64
	byName   []bool
	pause    time.Duration
	// create: the writer also creates an account, under a new key, whose
	// creation its peers hear of through the finder entries it changes
	// only (decision 0044).
	create bool
}

func randomPlan(rng *rand.Rand) plan {
	p := plan{readOnly: rng.IntN(10) < 5}
	if p.readOnly && rng.IntN(2) == 0 {
		p.richer = 100 + rng.Int64N(8)*250
	}
	keys := []int64{1, 2, 3}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	p.keys = keys[:1+rng.IntN(2)]
	if !p.readOnly {
		// Writers take their rows in key order, as the workloads do:
		// across servers the database's locks arbitrate, and a deadlock
		// waits for its detection (a second on PostgreSQL).
		slices.Sort(p.keys)
	}
	for range p.keys {
		p.adds = append(p.adds, 1+rng.Int64N(1000))
		p.byName = append(p.byName, rng.IntN(3) == 0)
	}
	// A pause inside the transaction widens the windows in which
	// transactions on different servers overlap; it synchronises nothing.
	p.pause = time.Duration(rng.IntN(500)) * time.Microsecond
	p.create = !p.readOnly && rng.IntN(4) == 0
	return p
}

// run runs p on n's thread until it commits, retrying what is retryable,
// and logs it.
func (p plan) run(ctx context.Context, n *node, thread int, h *history) error {
	for attempt := 0; ; attempt++ {
		err := p.try(ctx, n, thread, h)
		if err == nil {
			return nil
		}
		if !store.Retryable(err) || attempt == 200 {
			return fmt.Errorf("%s thread %d (attempt %d): %w", n.name, thread, attempt+1, err)
		}
		time.Sleep(store.Backoff(nil, attempt+1))
	}
}

func (p plan) try(ctx context.Context, n *node, thread int, h *history) error {
	began := h.now()
	begin := n.ctr.Begin
	if p.readOnly {
		begin = n.ctr.BeginReadOnly
	}
	tx, err := begin(ctx, thread)
	if err != nil {
		return err
	}
	var found *finderRead
	if p.richer > 0 {
		all, err := tx.FindMany(n.h, "richerThan", nil, p.richer)
		if err != nil {
			tx.Rollback()
			return err
		}
		found = &finderRead{server: n.name, threshold: p.richer}
		for _, a := range all {
			found.keys = append(found.keys, a.Key().A)
		}
	}
	var created []write
	if p.create {
		key := h.newKey()
		a, err := tx.Create(n.h, container.Key{A: key})
		if err != nil {
			tx.Rollback()
			return err
		}
		a.SetString(0, fmt.Sprintf("n%d", key))
		a.SetInt(fCredit, initialCredit(key))
		created = append(created, write{key: key, read: absent, wrote: initialCredit(key)})
	}
	var reads []read
	var writes []write
	for i, key := range p.keys {
		var a *container.Instance
		if p.byName[i] {
			a, err = tx.FindOne(n.h, "byName", hotNames[key])
		} else {
			a, err = tx.Find(n.h, container.Key{A: key})
		}
		if err != nil {
			tx.Rollback()
			return err
		}
		credit := a.Int(fCredit)
		reads = append(reads, read{server: n.name, key: key, value: credit})
		if !p.readOnly {
			a.SetInt(fCredit, credit+p.adds[i])
			writes = append(writes, write{key: key, read: credit, wrote: credit + p.adds[i]})
		}
		time.Sleep(p.pause)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	ended := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if found != nil {
		found.began, found.ended = began, ended
		h.finders = append(h.finders, *found)
	}
	for _, r := range reads {
		r.began, r.ended = began, ended
		h.reads = append(h.reads, r)
	}
	for _, w := range append(writes, created...) {
		w.began, w.ended = began, ended
		h.writes = append(h.writes, w)
	}
	return nil
}

// runRandom runs perThread random plans on each thread of each node.
func runRandom(t *testing.T, nodes []*node, threads, perThread int, seed uint64) *history {
	t.Helper()
	h := &history{}
	ctx := context.Background()
	var wg sync.WaitGroup
	for ni, n := range nodes {
		for th := range threads {
			rng := rand.New(rand.NewPCG(seed, uint64(ni*threads+th)))
			wg.Go(func() {
				for range perThread {
					if err := randomPlan(rng).run(ctx, n, th, h); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return h
}

// acrossServers is every commit option × persistence × concurrency the
// container accepts for an updated type, with each coherence mode that
// applies: A and D with invalidate and invalidate-async (none is
// refused across servers), B and C with none (they cache no data).
func acrossServers(t *testing.T) []container.Settings {
	var out []container.Settings
	for _, opt := range []container.CommitOption{container.OptionA, container.OptionD, container.OptionB, container.OptionC} {
		modes := []container.Coherence{container.Invalidate, container.InvalidateAsync}
		if opt == container.OptionB || opt == container.OptionC {
			modes = []container.Coherence{container.NoCoherence}
		}
		for _, p := range []container.Persistence{container.CMP, container.BMP, container.BMPChecked} {
			for _, c := range []container.Concurrency{container.Database, container.Exclusive, container.Optimistic} {
				for _, m := range modes {
					run := container.Settings{CommitOption: opt, Cache: container.Size{N: 2}, Pool: container.Size{N: 2}, Persistence: p,
						Concurrency: c, Refresh: time.Hour, LockTimeout: 2 * time.Second, Coherence: m, Servers: 2}
					s, err := container.Resolve(run, account(), nil)
					if err != nil {
						continue
					}
					out = append(out, s)
				}
			}
		}
	}
	// A and D: 3 persistences × 2 concurrencies × 2 modes each; B and C:
	// 3 × 3.
	if want := 2*3*2*2 + 2*3*3; len(out) != want {
		t.Fatalf("%d accepted settings across servers, want %d", len(out), want)
	}
	return out
}

// promiseOf is what the settings promise of reads across servers.
func promiseOf(s container.Settings, deadline time.Duration) promise {
	if s.Coherence == container.InvalidateAsync {
		// A stale read is at most a lease old: a server whose peer's
		// messages are late renews no lease and serves from the
		// database; the lease is shorter than the deadline.
		return promise{maxAge: deadline}
	}
	return promise{noStale: true}
}

// Random concurrent transactions on three hot accounts, on two app
// servers (three in the long run) over one database, under every
// accepted setting across servers, checked against the serial model of
// the committed history: no lost update, no stale read under invalidate
// and the data-less options, and under invalidate-async each stale read
// counted and no older than the mode promises.
func TestClusterMatchesTheSerialModel(t *testing.T) {
	url := testNATS(t)
	const deadline = 400 * time.Millisecond
	storetest.Each(t, func(t *testing.T, dsn string) {
		for i, s := range acrossServers(t) {
			name := fmt.Sprintf("%s/%s/%s/%s", s.CommitOption, s.Persistence, s.Concurrency, s.Coherence)
			t.Run(name, func(t *testing.T) {
				// make test runs every fifth cell, each on one backend
				// (storetest.ShareCell's share); make test-all
				// (TIERBENCH_LONG=rest) the others and the quick cells'
				// other backends; TIERBENCH_LONG=1 every cell on every
				// backend. The gates are here, in the test's body, where
				// internal/testsvc/longtests finds them.
				quick := i%5 == 0
				switch os.Getenv(testsvc.LongEnv) {
				case "1":
				case "rest":
					if quick {
						storetest.ShareCell(t, dsn, i)
					}
				default:
					if !quick {
						t.Skipf("long test (a cell of the coherence matrix): make test-all runs it (%s=rest)", testsvc.LongEnv)
					}
					storetest.ShareCell(t, dsn, i)
				}
				servers := 2
				if testsvc.Long() && i%2 == 1 {
					servers = 3
				}
				const threads = 3
				// The claims are left to the first reads, so that commits
				// race with them (decision 0044).
				nodes := newCluster(t, dsn, url, s, clusterOpts{servers: servers, threads: threads, deadline: deadline, lazyClaims: true})
				h := runRandom(t, nodes, threads, 15, uint64(i))
				v := h.check(t, nodes[0].db, promiseOf(s, deadline))
				for _, p := range v.problems {
					t.Error(p)
				}
				var st container.Stats
				for _, n := range nodes {
					x := n.h.Stats()
					st.CacheHits += x.CacheHits
					st.InvalidationsSent += x.InvalidationsSent
					st.InvalidationsReceived += x.InvalidationsReceived
					st.StaleReads += x.StaleReads
					st.ReadBacks += x.ReadBacks
				}
				t.Logf("%d servers: %d writes, %d reads, %d finder results; %d stale (ages %v); cache hits %d; invalidations sent %d, received %d; read-backs %d, stale %d",
					servers, len(h.writes), len(h.reads), len(h.finders), len(v.stale), v.stale, st.CacheHits, st.InvalidationsSent, st.InvalidationsReceived, st.ReadBacks, st.StaleReads)
			})
		}
	})
}
