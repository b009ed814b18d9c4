package container_test

import (
	"context"
	"testing"

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
