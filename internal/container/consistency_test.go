package container_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// Under option A or D with optimistic concurrency, a transaction that finds
// the cached instance busy works on a private copy. When that copy commits
// a change, the cached instance must not go on serving the old data.
func TestCachedDataIsNotStaleAfterAPrivateCopyCommits(t *testing.T) {
	ctx := context.Background()
	for _, opt := range []container.CommitOption{container.OptionA, container.OptionD} {
		for _, p := range []container.Persistence{container.CMP, container.BMP, container.BMPChecked} {
			t.Run(string(opt)+"/"+string(p), func(t *testing.T) {
				storetest.Each(t, func(t *testing.T, dsn string) {
					s := settings(opt, 10, 10)
					s.Concurrency, s.Persistence = container.Optimistic, p
					f := newFixture(t, dsn, 3, s)
					f.findIn(t, 1) // cache account 1 with credit 100

					// A reader holds the cached instance ...
					reader, err := f.ctr.BeginReadOnly(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					if a, err := reader.Find(f.h, container.Key{A: 1}); err != nil || a.Int(fCredit) != 100 {
						t.Fatalf("reader: credit %v, %v; want 100", a, err)
					}
					// ... while a writer changes the row through its own copy.
					writer, err := f.ctr.Begin(ctx, 1)
					if err != nil {
						t.Fatal(err)
					}
					a, err := writer.Find(f.h, container.Key{A: 1})
					if err != nil {
						t.Fatal(err)
					}
					a.SetInt(fCredit, 999)
					if err := writer.Commit(); err != nil {
						t.Fatal(err)
					}
					if err := reader.Commit(); err != nil {
						t.Fatal(err)
					}
					for range 2 {
						tx, _ := f.ctr.BeginReadOnly(ctx, 2)
						a, err := tx.Find(f.h, container.Key{A: 1})
						if err != nil {
							t.Fatal(err)
						}
						if got := a.Int(fCredit); got != 999 {
							t.Errorf("credit read after the commit: %d, want 999 (the database holds 999)", got)
						}
						tx.Commit()
					}
					// The cached instance's version is the database's: the
					// next update through it does not conflict.
					if err := increment(ctx, f, 0, container.Key{A: 1}); err != nil {
						t.Errorf("update after the private copy's commit: %v", err)
					}
				})
			})
		}
	}
}

// BMP stores every enlisted instance, clean ones too, and each store bumps
// the version: the cached version must follow, or every second clean
// commit conflicts.
func TestBMPCleanCommitsDoNotConflict(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		for _, opt := range []container.CommitOption{container.OptionA, container.OptionD} {
			t.Run(string(opt), func(t *testing.T) {
				s := settings(opt, 10, 10)
				s.Concurrency, s.Persistence = container.Optimistic, container.BMP
				f := newFixture(t, dsn, 1, s)
				for n := range 4 {
					tx, err := f.ctr.Begin(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tx.Find(f.h, container.Key{A: 1}); err != nil {
						t.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						t.Fatalf("clean commit %d: %v", n+1, err)
					}
				}
				if c := f.h.Stats().Conflicts; c != 0 {
					t.Errorf("%d conflicts in four clean commits on one thread, want 0", c)
				}
				if v := queryInt(t, f.db, "SELECT version FROM acct WHERE id = 1"); v != 4 {
					t.Errorf("version %d after four BMP stores, want 4", v)
				}
			})
		}
	})
}

// An instance taken from the pool for a new identity must not carry the
// version of the identity it had before.
func TestReusedInstanceStartsAtTheNewRowsVersion(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		s := settings(container.OptionA, 1, 10)
		s.Concurrency = container.Optimistic
		f := newFixture(t, dsn, 1, s)
		for range 3 { // account 1 reaches version 3
			if err := increment(ctx, f, 0, container.Key{A: 1}); err != nil {
				t.Fatal(err)
			}
		}
		// Finding 2 evicts 1 (a cache of one) into the pool; creating 6
		// then reuses 1's instance.
		f.findIn(t, 2)
		tx, _ := f.ctr.Begin(ctx, 0)
		six, err := tx.Create(f.h, container.Key{A: 6})
		if err != nil {
			t.Fatal(err)
		}
		six.SetString(fName, "six")
		six.SetInt(fCredit, 600)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if s := f.h.Stats(); s.Instantiations != 2 {
			t.Fatalf("%d instantiations, want 2: the test needs the created instance to be the reused one", s.Instantiations)
		}
		if err := increment(ctx, f, 0, container.Key{A: 6}); err != nil {
			t.Errorf("first update of the new entity: %v", err)
		}
		if c := f.h.Stats().Conflicts; c != 0 {
			t.Errorf("%d conflicts, want 0", c)
		}
		if credit := queryInt(t, f.db, "SELECT credit FROM acct WHERE id = 6"); credit != 601 {
			t.Errorf("credit of 6: %d, want 601", credit)
		}
	})
}

// A rolled-back private writer leaves the cached data as it was (valid or
// not, never the rolled-back value).
func TestRolledBackPrivateCopyIsNeverRead(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		s := settings(container.OptionA, 10, 10)
		s.Concurrency = container.Optimistic
		f := newFixture(t, dsn, 3, s)
		f.findIn(t, 1)
		reader, _ := f.ctr.BeginReadOnly(ctx, 0)
		if _, err := reader.Find(f.h, container.Key{A: 1}); err != nil {
			t.Fatal(err)
		}
		writer, _ := f.ctr.Begin(ctx, 1)
		a, err := writer.Find(f.h, container.Key{A: 1})
		if err != nil {
			t.Fatal(err)
		}
		a.SetInt(fCredit, 555)
		writer.Rollback()
		reader.Commit()
		tx, _ := f.ctr.BeginReadOnly(ctx, 2)
		got, err := tx.Find(f.h, container.Key{A: 1})
		if err != nil || got.Int(fCredit) != 100 {
			t.Errorf("after the rollback: %v, %v; want credit 100", got, err)
		}
		tx.Commit()
	})
}

// A transaction reads what the database held when its snapshot was taken
// (at repeatable read, its first statement), which can be older than a
// write committed while it ran. Under A and D such data must not stay in
// the cache for the transactions after it. Here the writer's own cached
// instance is evicted before the older transaction loads the row, so no
// instance of the identity is in the cache while the write commits: only
// the container's numbering of committed writes can tell that the data
// loaded afterwards is old.
func TestDataOlderThanACommittedWriteIsNotCached(t *testing.T) {
	ctx := context.Background()
	for _, b := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"postgres", storetest.Postgres}, {"mysql", storetest.MySQL}} {
		for _, opt := range []container.CommitOption{container.OptionA, container.OptionD} {
			for _, c := range []container.Concurrency{container.Exclusive, container.Optimistic} {
				t.Run(fmt.Sprintf("%s/%s/%s", b.name, opt, c), func(t *testing.T) {
					s := settings(opt, 2, 2)
					s.Concurrency = c
					f := newFixtureAt(t, b.dsn(t), 3, s, store.RepeatableRead)
					find := func(tx *container.Tx, key int64) int64 {
						t.Helper()
						a, err := tx.Find(f.h, container.Key{A: key})
						if err != nil {
							t.Fatal(err)
						}
						return a.Int(fCredit)
					}
					old, err := f.ctr.BeginReadOnly(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer old.Rollback() // if the test stops early: an open snapshot holds MariaDB's table
					find(old, 3)         // the snapshot: account 1 holds 100

					w, err := f.ctr.Begin(ctx, 1)
					if err != nil {
						t.Fatal(err)
					}
					a, err := w.Find(f.h, container.Key{A: 1})
					if err != nil {
						t.Fatal(err)
					}
					a.SetInt(fCredit, 150)
					if err := w.Commit(); err != nil {
						t.Fatal(err)
					}
					// Account 2, found on another thread, evicts account 1's idle
					// cached instance.
					other, err := f.ctr.BeginReadOnly(ctx, 2)
					if err != nil {
						t.Fatal(err)
					}
					find(other, 2)
					if err := other.Commit(); err != nil {
						t.Fatal(err)
					}

					if got := find(old, 1); got != initialCredit(1) {
						t.Fatalf("the old transaction read %d, want its snapshot's %d (the test's premise)", got, initialCredit(1))
					}
					if err := old.Commit(); err != nil {
						t.Fatal(err)
					}
					r, err := f.ctr.BeginReadOnly(ctx, 2)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Rollback()
					if got := find(r, 1); got != 150 {
						t.Errorf("a transaction begun after the write read %d, want 150: the older transaction's data stayed in the cache", got)
					}
				})
			}
		}
	}
}
