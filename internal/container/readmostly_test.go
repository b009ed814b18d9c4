package container_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// The read-mostly fixture: the acct rows mapped twice, by Acct, read-only
// with a finder by name, and by AcctRW, the read-write type its
// declaration names.
func readOnlyAcct() *container.Type {
	t := account()
	t.Name, t.Updated, t.Finders = "Acct", false, t.Finders[:1]
	return t
}

func readWriteAcct() *container.Type {
	t := account()
	t.Name, t.Finders = "AcctRW", nil
	return t
}

type readMostly struct {
	db   *store.DB
	ctr  *container.Container
	r, w *container.Home
}

// newReadMostly resolves the two types' settings as a run does: the
// run's option C, database concurrency, and Acct.read-mostly=AcctRW with
// the refresh interval given (plus user's extra settings).
func newReadMostly(t *testing.T, dsn string, refresh time.Duration, extra ...string) readMostly {
	t.Helper()
	db := storetest.Open(t, dsn, store.Options{Threads: 2})
	if err := db.ExecScript(context.Background(), schema); err != nil {
		t.Fatal(err)
	}
	run := container.Settings{CommitOption: container.OptionC, Cache: container.Size{N: 10}, Pool: container.Size{N: 10},
		Persistence: container.CMP, Refresh: refresh, LockTimeout: time.Second}
	user := []container.Setting{mustSetting(t, "Acct.read-mostly=AcctRW")}
	for _, e := range extra {
		user = append(user, mustSetting(t, e))
	}
	types := []*container.Type{readOnlyAcct(), readWriteAcct()}
	all := map[string]container.Settings{}
	for _, typ := range types {
		s, err := container.Resolve(run, typ, user)
		if err != nil {
			t.Fatal(err)
		}
		all[typ.Name] = s
	}
	if s := all["Acct"]; s.CommitOption != container.OptionD || s.Concurrency != container.ReadOnly {
		t.Fatalf("Acct resolved to option %s, %s; want the pattern's D, readonly", s.CommitOption, s.Concurrency)
	}
	ctr, err := container.New(context.Background(), db, types, all)
	if err != nil {
		t.Fatal(err)
	}
	return readMostly{db: db, ctr: ctr, r: ctr.Home("Acct"), w: ctr.Home("AcctRW")}
}

// credit reads key's credit through the read-only type in a read-only
// transaction (ErrNotFound passed on).
func (f readMostly) credit(t *testing.T, key int64) (int64, error) {
	t.Helper()
	tx, err := f.ctr.BeginReadOnly(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	i, err := tx.Find(f.r, container.Key{A: key})
	if err != nil {
		tx.Rollback()
		return 0, err
	}
	c := i.Int(fCredit)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return c, nil
}

// write runs one transaction of the read-write type on thread 1: change
// sets key's credit, create and remove make and delete key; rollback
// undoes it instead of committing.
func (f readMostly) write(t *testing.T, rollback bool, fn func(tx *container.Tx) error) {
	t.Helper()
	tx, err := f.ctr.Begin(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	if rollback {
		tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func (f readMostly) setCredit(credits map[int64]int64) func(tx *container.Tx) error {
	return func(tx *container.Tx) error {
		for _, k := range []int64{1, 2, 3, 4, 5} {
			c, ok := credits[k]
			if !ok {
				continue
			}
			i, err := tx.Find(f.w, container.Key{A: k})
			if err != nil {
				return err
			}
			i.SetInt(fCredit, c)
		}
		return nil
	}
}

// Each identity a committed commit of the writer writes is one
// invalidation of the read-only type, exactly; a rolled-back one none;
// and each read after a commit sees what it wrote (the refresh interval,
// an hour, never runs out), with every sampled read-back agreeing.
func TestReadMostlyInvalidationsAreExact(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newReadMostly(t, dsn, time.Hour)
		want := func(key, credit int64) {
			t.Helper()
			if c, err := f.credit(t, key); err != nil || c != credit {
				t.Fatalf("Acct %d read %d (%v); want %d", key, c, err, credit)
			}
		}
		invalidations := func(n int64) {
			t.Helper()
			if st := f.r.Stats(); st.WriterInvalidations != n {
				t.Fatalf("writer invalidations %d; want %d", st.WriterInvalidations, n)
			}
		}
		want(1, 100)
		want(2, 200)
		want(1, 100) // a cache hit
		invalidations(0)

		f.write(t, false, f.setCredit(map[int64]int64{1: 111}))
		invalidations(1)
		want(1, 111)
		want(2, 200)

		f.write(t, false, f.setCredit(map[int64]int64{1: 112, 2: 222}))
		invalidations(3)
		want(1, 112)
		want(2, 222)

		f.write(t, true, f.setCredit(map[int64]int64{1: 999}))
		invalidations(3)
		want(1, 112)

		f.write(t, false, func(tx *container.Tx) error {
			i, err := tx.Create(f.w, container.Key{A: 6})
			if err != nil {
				return err
			}
			i.SetString(fName, "six")
			i.SetInt(fCredit, 600)
			return nil
		})
		invalidations(4)
		want(6, 600)

		f.write(t, false, func(tx *container.Tx) error {
			i, err := tx.Find(f.w, container.Key{A: 6})
			if err == nil {
				tx.Remove(i)
			}
			return err
		})
		invalidations(5)
		if _, err := f.credit(t, 6); !errors.Is(err, container.ErrNotFound) {
			t.Fatalf("Acct 6 after the writer removed it: %v; want ErrNotFound", err)
		}
		// The finder's entries go with every write of the writer.
		tx, err := f.ctr.BeginReadOnly(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if i, err := tx.FindOne(f.r, "byName", "two"); err != nil || i.Int(fCredit) != 222 {
			t.Fatalf("byName two: %v; want credit 222", err)
		}
		tx.Commit()
		f.write(t, false, f.setCredit(map[int64]int64{2: 223}))
		invalidations(6)
		tx, _ = f.ctr.BeginReadOnly(context.Background(), 0)
		if i, err := tx.FindOne(f.r, "byName", "two"); err != nil || i.Int(fCredit) != 223 {
			t.Fatalf("byName two after the writer's commit: %v; want credit 223", err)
		}
		tx.Commit()

		for range 16 { // one read-back sample
			want(1, 112)
		}
		st := f.r.Stats()
		if st.ReadBacks == 0 || st.StaleReads != 0 || st.Stores != 0 {
			t.Errorf("read-backs %d, stale reads %d, stores %d; want some read back, none stale, none stored", st.ReadBacks, st.StaleReads, st.Stores)
		}
	})
}

// With the link switched off, the read-only type serves the writer's old
// data until its refresh interval runs out: a read after a commit sees the
// value before it, and the sampled read-back counts the stale read. With
// the link, the same steps read the new value and count none.
func TestReadMostlyStaleReadCaughtWithoutTheLink(t *testing.T) {
	for _, off := range []bool{true, false} {
		f := newReadMostly(t, storetest.SQLite(t), time.Hour)
		container.SkipReadMostlyInvalidation(f.ctr, off)
		if c, _ := f.credit(t, 1); c != 100 {
			t.Fatalf("Acct 1 read %d first; want 100", c)
		}
		f.write(t, false, f.setCredit(map[int64]int64{1: 150}))
		var last int64
		for range 17 { // with the link, a load and 16 hits: one read-back either way
			last, _ = f.credit(t, 1)
		}
		st := f.r.Stats()
		switch {
		case off && (last != 100 || st.ReadBacks != 1 || st.StaleReads != 1 || st.WriterInvalidations != 0):
			t.Errorf("link off: read %d, %d read back, %d stale, %d invalidations; want the old 100 and the one read-back stale", last, st.ReadBacks, st.StaleReads, st.WriterInvalidations)
		case !off && (last != 150 || st.ReadBacks != 1 || st.StaleReads != 0 || st.WriterInvalidations != 1):
			t.Errorf("link on: read %d, %d read back, %d stale, %d invalidations; want 150, one read-back, none stale, one invalidation", last, st.ReadBacks, st.StaleReads, st.WriterInvalidations)
		}
	}
}

// A find of cached data older than the refresh interval reloads it and
// counts a refresh (an interval of a nanosecond: every find after the
// first).
func TestRefreshesAreCounted(t *testing.T) {
	f := newReadMostly(t, storetest.SQLite(t), time.Nanosecond)
	for range 4 {
		if c, err := f.credit(t, 3); err != nil || c != 300 {
			t.Fatalf("Acct 3: %d, %v", c, err)
		}
	}
	if st := f.r.Stats(); st.Loads != 4 || st.Refreshes != 3 || st.CacheHits != 0 {
		t.Errorf("loads %d, refreshes %d, hits %d; want 4, 3, 0", st.Loads, st.Refreshes, st.CacheHits)
	}
}

// Declarations the pattern cannot honour are refused, each with one
// message naming what is wrong.
func TestReadMostlyDeclarationsRefused(t *testing.T) {
	run := container.Settings{CommitOption: container.OptionC, Cache: container.Size{N: 10}, Pool: container.Size{N: 10},
		Persistence: container.CMP, Refresh: time.Second, LockTimeout: time.Second}
	other := readWriteAcct()
	other.Name, other.Table = "Other", "other"
	for _, tt := range []struct {
		name  string
		user  []string
		types []*container.Type
		run   func(*container.Settings)
		want  string
	}{
		{"writer is not a type", []string{"Acct.read-mostly=Nope"}, nil, nil, "Nope is not an entity type; the types are Acct, AcctRW"},
		{"same type", []string{"Acct.read-mostly=Acct"}, nil, nil, "cannot be its own writer"},
		{"updated reader", []string{"AcctRW.read-mostly=Acct"}, nil, nil, "AcctRW is not read-only"},
		{"reader's concurrency", []string{"Acct.read-mostly=AcctRW", "Acct.concurrency=exclusive"}, nil, nil, "its concurrency is exclusive"},
		{"reader's option", []string{"Acct.read-mostly=AcctRW", "Acct.commit-option=A"}, nil, nil, "option D"},
		{"other rows", []string{"Acct.read-mostly=Other"}, []*container.Type{readOnlyAcct(), other}, nil, "must map the same rows"},
		{"writer reads only", []string{"Acct.read-mostly=AcctRW", "AcctRW.concurrency=readonly"}, []*container.Type{readOnlyAcct(), func() *container.Type { w := readWriteAcct(); w.Updated = false; return w }()}, nil, "nothing is written through it"},
		{"chain", []string{"Acct.read-mostly=Acct2", "Acct2.read-mostly=AcctRW"}, []*container.Type{readOnlyAcct(), func() *container.Type { r := readOnlyAcct(); r.Name = "Acct2"; return r }(), readWriteAcct()}, nil, "Acct2 is itself read-mostly (of AcctRW)"},
		{"cycle", []string{"Acct.read-mostly=Acct2", "Acct2.read-mostly=Acct"}, []*container.Type{readOnlyAcct(), func() *container.Type { r := readOnlyAcct(); r.Name = "Acct2"; return r }()}, nil, "is itself read-mostly"},
		{"servers without coherence", []string{"Acct.read-mostly=AcctRW"}, nil, func(s *container.Settings) { s.Servers = 2 }, "give --coherence invalidate or invalidate-async"},
		{"shared", []string{"Acct.read-mostly=AcctRW", "Acct.coherence=shared"}, nil, nil, "coherence shared is not built"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			types := tt.types
			if types == nil {
				types = []*container.Type{readOnlyAcct(), readWriteAcct()}
			}
			r := run
			if tt.run != nil {
				tt.run(&r)
			}
			var user []container.Setting
			for _, u := range tt.user {
				user = append(user, mustSetting(t, u))
			}
			all := map[string]container.Settings{}
			var err error
			for _, typ := range types {
				var s container.Settings
				if s, err = container.Resolve(r, typ, user); err != nil {
					break
				}
				all[typ.Name] = s
			}
			if err == nil {
				err = container.CheckReadMostly(types, all)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "--entity ") {
				t.Fatalf("got %v; want one message naming the declaration and containing %q", err, tt.want)
			}
		})
	}
}
