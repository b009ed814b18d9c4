package coherence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// Each mode's checker catches what the mode prevents once its mechanism
// is switched off: the same steps, with invalidation on, pass, and with
// the messages dropped (Bus.Drop), fail with the mode's own complaint.

func cachingSettings(opt container.CommitOption, mode container.Coherence, refresh time.Duration) container.Settings {
	return container.Settings{CommitOption: opt, Cache: container.Size{N: 10}, Pool: container.Size{N: 10}, Persistence: container.CMP,
		Concurrency: container.Exclusive, Refresh: refresh, LockTimeout: 2 * time.Second, Coherence: mode}
}

// readOn logs a read-only transaction's read of account key on n.
func readOn(t *testing.T, n *node, h *history, key int64) {
	t.Helper()
	if err := (plan{readOnly: true, keys: []int64{key}, byName: []bool{false}}).try(context.Background(), n, 0, h); err != nil {
		t.Fatal(err)
	}
}

// addOn logs a read-write transaction on n that adds amount to key.
func addOn(t *testing.T, n *node, h *history, key, amount int64) {
	t.Helper()
	if err := (plan{keys: []int64{key}, adds: []int64{amount}, byName: []bool{false}}).try(context.Background(), n, 0, h); err != nil {
		t.Fatal(err)
	}
}

// staleSteps: s1 caches account 1; s0 adds to it; after wait, s1 reads
// it again.
func staleSteps(t *testing.T, nodes []*node, wait time.Duration) *history {
	h := &history{}
	readOn(t, nodes[1], h, 1)
	readOn(t, nodes[1], h, 1)
	addOn(t, nodes[0], h, 1, 10)
	time.Sleep(wait) // the age of the read to come, not a synchronisation
	readOn(t, nodes[1], h, 1)
	return h
}

func TestCheckersCatchInvalidationSwitchedOff(t *testing.T) {
	url := testNATS(t)
	// Long enough that a loaded machine's pauses fence nobody (a fenced
	// s1 would serve nothing from memory, and prove nothing).
	const deadline = 500 * time.Millisecond
	for _, tt := range []struct {
		name string
		s    container.Settings
		p    promise
		// wait before the last read: past the promise, so that a stale
		// read is one the checker must refuse.
		wait time.Duration
		// wantOn and wantOff: the problem the checker reports with
		// invalidation on and off ("": none).
		wantOn, wantOff string
	}{
		{"invalidate", cachingSettings(container.OptionA, container.Invalidate, time.Hour), promise{noStale: true}, 0, "", "the mode promises none"},
		{"invalidate-async", cachingSettings(container.OptionA, container.InvalidateAsync, time.Hour), promise{maxAge: deadline}, 2 * deadline, "", "the mode promises at most"},
		// D keeps its promise, its refresh interval, without any
		// invalidation; switched off (an hour against a promise of
		// 150ms), its checker fails.
		{"D", cachingSettings(container.OptionD, container.InvalidateAsync, 150*time.Millisecond), promise{maxAge: 150 * time.Millisecond}, 2 * deadline, "", ""},
		{"D with its refresh switched off", cachingSettings(container.OptionD, container.InvalidateAsync, time.Hour), promise{maxAge: 150 * time.Millisecond}, 2 * deadline, "", "the mode promises at most"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, off := range []bool{false, true} {
				nodes := newCluster(t, storetest.SQLite(t), url, tt.s, clusterOpts{servers: 2, threads: 1, deadline: deadline})
				for _, n := range nodes {
					n.bus.Drop(off)
				}
				h := staleSteps(t, nodes, tt.wait)
				v := h.check(t, nodes[0].db, tt.p)
				want := map[bool]string{false: tt.wantOn, true: tt.wantOff}[off]
				switch {
				case want == "" && len(v.problems) > 0:
					t.Errorf("invalidation off=%v: the checker refused a history that keeps the promise: %q", off, v.problems)
				case want != "" && (len(v.problems) != 1 || !strings.Contains(v.problems[0], want)):
					t.Errorf("invalidation off=%v: the checker found %q; want one problem saying %q", off, v.problems, want)
				}
				if hits := nodes[1].h.Stats().CacheHits; hits == 0 {
					t.Errorf("invalidation off=%v: no cache hit on s1: the steps did not exercise the cache", off)
				}
			}
		})
	}
}

// The lost-update check catches what the locking reads across servers
// prevent: two servers' transactions both change account 1 from their
// caches. With the locking reads the second waits for the first and
// reads its result; without them it writes over it.
func TestCheckerCatchesLostUpdatesWithoutClusterLocks(t *testing.T) {
	url := testNATS(t)
	storetest.Each(t, func(t *testing.T, dsn string) {
		if store.MustParseDSN(dsn).Dialect == store.SQLite {
			t.Skip("SQLite's single writer serialises the two read-write transactions whatever the container does")
		}
		for _, locks := range []bool{true, false} {
			nodes := newCluster(t, dsn, url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
				clusterOpts{servers: 2, threads: 1, deadline: 500 * time.Millisecond, noClusterLocks: !locks})
			h := &history{}
			readOn(t, nodes[0], h, 1)
			readOn(t, nodes[1], h, 1)
			ctx := context.Background()
			began := h.now()
			tx0, err := nodes[0].ctr.Begin(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			a0, err := tx0.Find(nodes[0].h, container.Key{A: 1})
			if err != nil {
				t.Fatal(err)
			}
			second := make(chan error, 1)
			go func() {
				second <- (plan{keys: []int64{1}, adds: []int64{20}, byName: []bool{false}}).run(ctx, nodes[1], 0, h)
			}()
			if !locks {
				// Without the locks nothing orders the two: let the second
				// finish first, from its cache.
				if err := <-second; err != nil {
					t.Fatal(err)
				}
			}
			read := a0.Int(fCredit)
			a0.SetInt(fCredit, read+10)
			if err := tx0.Commit(); err != nil {
				t.Fatal(err)
			}
			ended := h.now()
			h.mu.Lock()
			h.writes = append(h.writes, write{key: 1, read: read, wrote: read + 10, began: began, ended: ended})
			h.mu.Unlock()
			if locks {
				if err := <-second; err != nil {
					t.Fatal(err)
				}
			}
			v := h.check(t, nodes[0].db, promise{noStale: true})
			lost := 0
			for _, p := range v.problems {
				if strings.Contains(p, "lost update") {
					lost++
				}
			}
			if locks && len(v.problems) > 0 {
				t.Errorf("with the locking reads: %q; want none", v.problems)
			}
			if !locks && lost == 0 {
				t.Errorf("without the locking reads the checker found %q; want a lost update", v.problems)
			}
		}
	})
}

// A run sees staleness through the sampled read-backs: every 16th cache
// hit of a thread is read again from the database. With the messages
// dropped, the sampled hit serves data older than s0's commit and is
// counted stale; with them, the same steps find none.
func TestReadBacksCountStaleReads(t *testing.T) {
	url := testNATS(t)
	for _, off := range []bool{false, true} {
		nodes := newCluster(t, storetest.SQLite(t), url, cachingSettings(container.OptionA, container.InvalidateAsync, time.Hour),
			clusterOpts{servers: 2, threads: 1, deadline: 500 * time.Millisecond})
		for _, n := range nodes {
			n.bus.Drop(off)
		}
		h := &history{}
		readOn(t, nodes[1], h, 1)           // a load: s1 caches account 1
		seq := nodes[1].bus.heardFrom("s0") // (s0's claim is numbered too)
		addOn(t, nodes[0], h, 1, 10)
		waitFor(t, "s1 hears s0's commit", func() bool { return nodes[1].bus.heardFrom("s0") > seq })
		reads := 16
		if !off {
			reads++ // the first read after the invalidation loads
		}
		for range reads {
			readOn(t, nodes[1], h, 1)
		}
		st := nodes[1].h.Stats()
		wantStale := int64(0)
		if off {
			wantStale = 1
		}
		if st.CacheHits != 16 || st.ReadBacks != 1 || st.StaleReads != wantStale {
			t.Errorf("invalidation off=%v: %d hits, %d read back, %d stale; want 16, 1, %d", off, st.CacheHits, st.ReadBacks, st.StaleReads, wantStale)
		}
	}
}

// heardFrom is the last number the bus has had of peer name.
func (b *Bus) heardFrom(name string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.peers[name]; p != nil {
		return p.lastSeq
	}
	return 0
}
