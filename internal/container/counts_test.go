package container_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// Each server thread counts on its own; Stats sums the threads exactly,
// and ResetStats starts every counter from zero again while the threads'
// own counts go on.
func TestStatsSumThreadsAndReset(t *testing.T) {
	f := newFixture(t, storetest.SQLite(t), 2, settings(container.OptionA, 10, 10))
	ctx := context.Background()
	find := func(thread int, key int64) {
		t.Helper()
		tx, err := f.ctr.BeginReadOnly(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Find(f.h, container.Key{A: key}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	find(0, 1)
	find(0, 1)
	find(1, 2)
	find(1, 1)
	st := f.h.Stats()
	if st.Finds != 4 || st.CacheHits != 2 || st.Loads != 2 || st.Activations != 2 || st.Instantiations != 2 {
		t.Fatalf("finds %d, hits %d, loads %d, activations %d, instantiations %d; want 4, 2, 2, 2, 2",
			st.Finds, st.CacheHits, st.Loads, st.Activations, st.Instantiations)
	}
	f.ctr.ResetStats()
	if st := f.h.Stats(); st.Finds != 0 || st.CacheHits != 0 || st.Loads != 0 || st.Activations != 0 || st.Instantiations != 0 {
		t.Fatalf("after reset: %+v; want every count 0", st)
	}
	find(1, 1)
	find(0, 3)
	if st := f.h.Stats(); st.Finds != 2 || st.CacheHits != 1 || st.Loads != 1 || st.Activations != 1 || st.ReadyAtEnd != 3 {
		t.Fatalf("after reset and two finds: finds %d, hits %d, loads %d, activations %d, ready %d; want 2, 1, 1, 1, 3",
			st.Finds, st.CacheHits, st.Loads, st.Activations, st.ReadyAtEnd)
	}
}

// A transaction that locks more identities than the lock table keeps
// free leaves at most that many behind, and every lock it held is free:
// another thread takes them all without waiting.
func TestLockTableKeepsBoundedFreeLocks(t *testing.T) {
	f := newFixture(t, storetest.SQLite(t), 2, settings(container.OptionA, 10, 10))
	ctx := context.Background()
	n := int64(container.IdleLocks + 500)
	lockAll := func(thread int) {
		t.Helper()
		tx, err := f.ctr.BeginReadOnly(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		// The table's five rows, cached (and so, from the second pass,
		// their locks pinned by their instances), then keys past them:
		// each find takes the lock, then finds no row and keeps the lock
		// to the end of the transaction.
		for k := int64(1); k <= 5; k++ {
			if _, err := tx.Find(f.h, container.Key{A: k}); err != nil {
				t.Fatal(err)
			}
		}
		for k := int64(100); k < 100+n; k++ {
			if _, err := tx.Find(f.h, container.Key{A: k}); !errors.Is(err, container.ErrNotFound) {
				t.Fatalf("find %d: %v; want ErrNotFound", k, err)
			}
		}
		if got := container.LockTableSize(f.h); got != int(n)+5 {
			t.Fatalf("%d locks in the table while %d are held", got, n+5)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := container.LockTableSize(f.h); got > container.IdleLocks+5 {
			t.Fatalf("%d locks left in the table; at most %d free ones are kept, and the 5 cached rows' pinned ones", got, container.IdleLocks)
		}
		if err := container.CheckLockPins(f.h); err != nil {
			t.Fatal(err)
		}
	}
	lockAll(0)
	lockAll(1)
	if st := f.h.Stats(); st.LockWaits != 0 || st.LockTimeouts != 0 {
		t.Fatalf("lock waits %d, timeouts %d; want none: every lock was released", st.LockWaits, st.LockTimeouts)
	}
}

// A cache large enough to be sharded holds exactly its capacity, however
// its instances fall into shards: past it, each find evicts one and the
// found instance takes its place; a small cache is one shard, one exact
// LRU.
func TestShardedCacheHoldsItsCapacity(t *testing.T) {
	const capacity, rows = 512, 600
	f := newFixture(t, storetest.SQLite(t), 1, settings(container.OptionA, capacity, 0))
	if n := container.Shards(f.h); n < 2 {
		t.Fatalf("%d shards for a cache of %d; want several", n, capacity)
	}
	if n := container.Shards(newFixture(t, storetest.SQLite(t), 1, settings(container.OptionA, 2, 0)).h); n != 1 {
		t.Fatalf("%d shards for a cache of 2; want 1", n)
	}
	ctx := context.Background()
	var insert strings.Builder
	for k := 6; k <= rows; k++ { // the schema holds 1 to 5
		fmt.Fprintf(&insert, "INSERT INTO acct (id, name, credit) VALUES (%d, 'n%d', 0);\n", k, k)
	}
	if err := f.db.ExecScript(ctx, insert.String()); err != nil {
		t.Fatal(err)
	}
	for k := int64(1); k <= rows; k++ {
		f.findIn(t, k)
	}
	st := f.h.Stats()
	if st.Loads != rows || st.ReadyAtEnd != capacity || st.Passivations != rows-capacity || st.Discards != rows-capacity {
		t.Fatalf("%d finds of distinct rows through a cache of %d: %d loads, %d ready, %d passivated, %d discarded; want %d, %d, %d, %d",
			rows, capacity, st.Loads, st.ReadyAtEnd, st.Passivations, st.Discards, rows, capacity, rows-capacity, rows-capacity)
	}
	// The last row found evicted another rather than staying out of a
	// full cache: finding it again is a hit.
	f.findIn(t, rows)
	if got := f.h.Stats().CacheHits; got != st.CacheHits+1 {
		t.Fatalf("finding row %d again: %d cache hits, want %d: the full cache did not make room for it", rows, got, st.CacheHits+1)
	}
}

// Threads creating and removing identities of a sharded home at once: a
// removed instance goes back to the home's one pool as its transaction
// finishes, and another shard's thread may take it from there at once,
// so finishing must not touch an instance after releasing it (the race
// detector's part), and every count must add up.
func TestShardedHomeChurnsThroughOnePool(t *testing.T) {
	const threads, rounds = 4, 150
	f := newFixture(t, storetest.SQLite(t), threads, settings(container.OptionA, 4096, 64))
	if n := container.Shards(f.h); n < 2 {
		t.Fatalf("%d shards for a cache of 4096; want several", n)
	}
	ctx := context.Background()
	// churn creates key on thread th and removes it again, in two
	// transactions.
	churn := func(th int, key container.Key) error {
		tx, err := f.ctr.Begin(ctx, th)
		if err != nil {
			return err
		}
		i, err := tx.Create(f.h, key)
		if err != nil {
			return err
		}
		i.SetString(fName, "churn")
		if err := tx.Commit(); err != nil {
			return err
		}
		if tx, err = f.ctr.Begin(ctx, th); err != nil {
			return err
		}
		if i, err = tx.Find(f.h, key); err != nil {
			return err
		}
		tx.Remove(i)
		return tx.Commit()
	}
	var wg sync.WaitGroup
	for th := range threads {
		wg.Go(func() {
			for r := range rounds {
				key := container.Key{A: int64(1000 + th*rounds + r)}
				if err := churn(th, key); err != nil {
					t.Errorf("thread %d, key %v: %v", th, key, err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := f.h.Stats()
	if n := int64(threads * rounds); st.Creates != n || st.Removes != n || st.ReadyAtEnd != 0 || st.CacheHits != n {
		t.Errorf("%d creates and removes: %+v; want %d creates, %d removes, %d hits (each find of a created instance), 0 ready at the end", n, st, n, n, n)
	}
	if n := queryInt(t, f.db, "SELECT COUNT(*) FROM acct WHERE id >= 1000"); n != 0 {
		t.Errorf("%d churned rows left in the table; want 0", n)
	}
}
