package container_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// BenchmarkFindCacheHit is a read-only transaction whose find is served by
// the ready cache under option A: begin, find (exclusive lock, cache
// lookup, LRU unlink), commit (LRU relink, unlock). The target is
// at most 1 µs and 2 allocations.
func BenchmarkFindCacheHit(b *testing.B) {
	for _, c := range []container.Concurrency{container.Exclusive, container.Optimistic} {
		b.Run(string(c), func(b *testing.B) {
			s := settings(container.OptionA, 10, 10)
			s.Concurrency = c
			f := newFixture(b, storetest.SQLite(b), 1, s)
			ctx := context.Background()
			keys := []container.Key{{A: 1}, {A: 2}, {A: 3}, {A: 4}, {A: 5}}
			warm, _ := f.ctr.BeginReadOnly(ctx, 0)
			for _, k := range keys {
				if _, err := warm.Find(f.h, k); err != nil {
					b.Fatal(err)
				}
			}
			warm.Commit()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tx, err := f.ctr.BeginReadOnly(ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Find(f.h, keys[i%len(keys)]); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if st := f.h.Stats(); st.Loads != int64(len(keys)) {
				b.Fatalf("%d loads: the finds were not all cache hits", st.Loads)
			}
		})
	}
}

// BenchmarkFinderCacheHit is a read-only transaction whose finder is
// answered by the finder cache and its instance by the ready cache, under
// option A: no statement. The one allocation left is the finder's
// arguments (...any), which escape to the database query of a miss.
func BenchmarkFinderCacheHit(b *testing.B) {
	f := newFixture(b, storetest.SQLite(b), 1, settings(container.OptionA, 10, 10))
	ctx := context.Background()
	for range 2 { // the first call fills the cache
		tx, _ := f.ctr.BeginReadOnly(ctx, 0)
		if _, err := tx.FindOne(f.h, "byName", "one"); err != nil {
			b.Fatal(err)
		}
		tx.Commit()
	}
	b.ReportAllocs()
	for b.Loop() {
		tx, err := f.ctr.BeginReadOnly(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.FindOne(f.h, "byName", "one"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if st := f.h.Stats(); st.FinderMisses != 1 {
		b.Fatalf("%d finder misses: the calls were not all answered by the cache", st.FinderMisses)
	}
}

// BenchmarkFindCacheHitParallel is BenchmarkFindCacheHit on every server
// thread at once (one per P, each on keys of its own) against one home:
// what sharing it costs when finds on a hot type run in parallel.
// Compare ns/op at -cpu 1 and -cpu N: with no contention it falls by N.
// The cache and the keys are sized as a real workload's would be
// (thousands of instances), not to a handful of rows.
func BenchmarkFindCacheHitParallel(b *testing.B) {
	const keysPerThread = 1000
	threads := runtime.GOMAXPROCS(0)
	s := settings(container.OptionA, 4096, 4096)
	f := newFixture(b, storetest.SQLite(b), threads, s)
	ctx := context.Background()
	var insert strings.Builder
	for k := 6; k <= threads*keysPerThread; k++ { // the schema holds 1 to 5
		fmt.Fprintf(&insert, "INSERT INTO acct (id, name, credit) VALUES (%d, 'n%d', 0);\n", k, k)
	}
	if err := f.db.ExecScript(ctx, insert.String()); err != nil {
		b.Fatal(err)
	}
	warm, _ := f.ctr.BeginReadOnly(ctx, 0)
	for k := range threads * keysPerThread {
		if _, err := warm.Find(f.h, container.Key{A: int64(k + 1)}); err != nil {
			b.Fatal(err)
		}
	}
	warm.Commit()
	var next atomic.Int32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		thread := int(next.Add(1)) - 1
		if thread >= threads {
			b.Errorf("%d goroutines for %d threads", thread+1, threads)
			return
		}
		i := 0
		for pb.Next() {
			tx, err := f.ctr.BeginReadOnly(ctx, thread)
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := tx.Find(f.h, container.Key{A: int64(thread*keysPerThread + i%keysPerThread + 1)}); err != nil {
				b.Error(err)
				return
			}
			if err := tx.Commit(); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	if st := f.h.Stats(); st.Loads != int64(threads*keysPerThread) {
		b.Fatalf("%d loads: the finds were not all cache hits", st.Loads)
	}
}

// BenchmarkDispatch is --dispatch's cost in the container, generated
// against reflect, alternating in one run: fields reads and writes every
// field of a cached instance once (five kinds, no statement); loadStore
// is a transaction that loads one instance (option C, a statement), sets
// every field and stores it at commit, on SQLite.
func BenchmarkDispatch(b *testing.B) {
	ctx := context.Background()
	when := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	blob := []byte("blob")
	for _, d := range []container.Dispatch{container.Generated, container.Reflect} {
		b.Run("fields/"+string(d), func(b *testing.B) {
			s := settings(container.OptionA, 10, 10)
			s.Dispatch = d
			_, ctr := newEvery(b, storetest.SQLite(b), s)
			tx, err := ctr.Begin(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer tx.Rollback()
			i, err := tx.Find(ctr.Home("Every"), container.Key{A: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				i.SetInt(eInt, i.Int(eInt)+1)
				i.SetFloat(eFloat, i.Float(eFloat)+1)
				i.SetString(eString, i.String(eString))
				i.SetTime(eTime, i.Time(eTime).Add(time.Second))
				i.SetBytes(eBytes, i.Bytes(eBytes))
			}
		})
		b.Run("loadStore/"+string(d), func(b *testing.B) {
			s := settings(container.OptionC, 0, 10)
			s.Concurrency = container.Database
			s.Dispatch = d
			_, ctr := newEvery(b, storetest.SQLite(b), s)
			h := ctr.Home("Every")
			b.ReportAllocs()
			for b.Loop() {
				tx, err := ctr.Begin(ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				i, err := tx.Find(h, container.Key{A: 1})
				if err != nil {
					b.Fatal(err)
				}
				i.SetInt(eInt, i.Int(eInt)+1)
				i.SetFloat(eFloat, i.Float(eFloat)+1)
				i.SetString(eString, i.String(eString))
				i.SetTime(eTime, when)
				i.SetBytes(eBytes, blob)
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
