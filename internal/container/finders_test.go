package container_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// finderKeys runs a finder in its own transaction on thread 0 and returns
// the keys it found.
func finderKeys(t *testing.T, f fixture, name string, args ...any) []int64 {
	t.Helper()
	tx, err := f.ctr.BeginReadOnly(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	found, err := tx.FindMany(f.h, name, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	var keys []int64
	for _, i := range found {
		keys = append(keys, i.Key().A)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// write runs fn in a read-write transaction on thread 0.
func write(t *testing.T, f fixture, fn func(tx *container.Tx)) {
	t.Helper()
	tx, err := f.ctr.Begin(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	fn(tx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// The finder cache under option A, exactly: a finder's second call costs
// no statement, a write invalidates exactly the entries it can change
// (a credit changes richerThan's results, not byName's; a create of "six"
// only byName("six")'s), and every answer is the database's.
func TestFinderCacheCountsAndInvalidation(t *testing.T) {
	for _, c := range []container.Concurrency{container.Exclusive, container.Optimistic} {
		for _, p := range []container.Persistence{container.CMP, container.BMP} {
			t.Run(string(c)+"/"+string(p), func(t *testing.T) {
				s := settings(container.OptionA, 10, 10)
				s.Concurrency, s.Persistence = c, p
				f := newFixture(t, storetest.SQLite(t), 1, s)
				// step checks a call's keys and the counters after it; a warm
				// call (hit) must cost no statement.
				step := func(what string, got []int64, want []int64, hits, misses, invalidations int64) {
					t.Helper()
					st := f.h.Stats()
					if !slices.Equal(got, want) {
						t.Errorf("%s: keys %v, want %v", what, got, want)
					}
					if st.FinderHits != hits || st.FinderMisses != misses || st.FinderInvalidations != invalidations {
						t.Errorf("%s: finder hits %d, misses %d, invalidations %d; want %d, %d, %d", what, st.FinderHits, st.FinderMisses, st.FinderInvalidations, hits, misses, invalidations)
					}
				}
				warm := func(what, finder string, arg any, want []int64, hits, misses, invalidations int64) {
					t.Helper()
					before := f.db.Stats().Statements
					step(what, finderKeys(t, f, finder, arg), want, hits, misses, invalidations)
					if n := f.db.Stats().Statements - before; n != 0 {
						t.Errorf("%s: %d statements, want none (finder and instances cached)", what, n)
					}
				}

				step("byName one, cold", finderKeys(t, f, "byName", "one"), []int64{1}, 0, 1, 0)
				warm("byName one, warm", "byName", "one", []int64{1}, 1, 1, 0)
				step("richerThan 250, cold", finderKeys(t, f, "richerThan", int64(250)), []int64{3, 4, 5}, 1, 2, 0)
				warm("richerThan 250, warm", "richerThan", int64(250), []int64{3, 4, 5}, 2, 2, 0)

				// Account 1's credit rises above 250: richerThan's entry
				// goes, byName's stays.
				write(t, f, func(tx *container.Tx) {
					a, err := tx.Find(f.h, container.Key{A: 1})
					if err != nil {
						t.Fatal(err)
					}
					a.SetInt(fCredit, 1000)
				})
				step("after a credit write", nil, nil, 2, 2, 1)
				warm("byName one, still warm", "byName", "one", []int64{1}, 3, 2, 1)
				step("richerThan 250, after the write", finderKeys(t, f, "richerThan", int64(250)), []int64{1, 3, 4, 5}, 3, 3, 1)

				// A create changes byName("six") (not cached) and every
				// richerThan entry; byName("one") stays.
				write(t, f, func(tx *container.Tx) {
					a, err := tx.Create(f.h, container.Key{A: 6})
					if err != nil {
						t.Fatal(err)
					}
					a.SetString(fName, "six")
					a.SetInt(fCredit, 600)
				})
				step("after a create", nil, nil, 3, 3, 2)
				warm("byName one, warm after the create", "byName", "one", []int64{1}, 4, 3, 2)
				step("richerThan 250 sees the create", finderKeys(t, f, "richerThan", int64(250)), []int64{1, 3, 4, 5, 6}, 4, 4, 2)
				step("byName six", finderKeys(t, f, "byName", "six"), []int64{6}, 4, 5, 2)

				// A remove takes its byName entry and richerThan's.
				write(t, f, func(tx *container.Tx) {
					a, err := tx.Find(f.h, container.Key{A: 6})
					if err != nil {
						t.Fatal(err)
					}
					tx.Remove(a)
				})
				step("after a remove", nil, nil, 4, 5, 4)
				step("byName six is gone", finderKeys(t, f, "byName", "six"), nil, 4, 6, 4)
				step("richerThan 250 without six", finderKeys(t, f, "richerThan", int64(250)), []int64{1, 3, 4, 5}, 4, 7, 4)
				// A rename moves the instance between byName entries: all go,
				// "one" and the empty result of "six".
				warm("byName one before the rename", "byName", "one", []int64{1}, 5, 7, 4)
				write(t, f, func(tx *container.Tx) {
					a, err := tx.Find(f.h, container.Key{A: 1})
					if err != nil {
						t.Fatal(err)
					}
					a.SetString(fName, "uno")
				})
				step("byName one after the rename", finderKeys(t, f, "byName", "one"), nil, 5, 8, 6)
				step("byName uno", finderKeys(t, f, "byName", "uno"), []int64{1}, 5, 9, 6)
			})
		}
	}
}

// Under B and C, and under database concurrency, there is no finder cache:
// every finder reads the database.
func TestNoFinderCacheWithoutCaching(t *testing.T) {
	for _, opt := range []container.CommitOption{container.OptionB, container.OptionC} {
		f := newFixture(t, storetest.SQLite(t), 1, settings(opt, 10, 10))
		for range 3 {
			finderKeys(t, f, "byName", "one")
		}
		if st := f.h.Stats(); st.FinderHits != 0 || st.FinderMisses != 0 {
			t.Errorf("option %s: finder hits %d, misses %d; want none", opt, st.FinderHits, st.FinderMisses)
		}
	}
	// Option D's entries last its refresh interval.
	s := settings(container.OptionD, 10, 10)
	s.Refresh = 50 * time.Millisecond
	f := newFixture(t, storetest.SQLite(t), 1, s)
	finderKeys(t, f, "byName", "one")
	finderKeys(t, f, "byName", "one")
	time.Sleep(60 * time.Millisecond)
	finderKeys(t, f, "byName", "one")
	if st := f.h.Stats(); st.FinderHits != 1 || st.FinderMisses != 2 {
		t.Errorf("option D: finder hits %d, misses %d; want 1 (within the interval) and 2 (cold, expired)", st.FinderHits, st.FinderMisses)
	}
}
