package container_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// every is a type with a field of every kind, to read and write each
// one under both dispatches.
func every() *container.Type {
	return &container.Type{
		Name:  "Every",
		Table: "every",
		Key:   []container.Column{{Name: "id", Kind: container.Int}},
		Fields: []container.Column{{Name: "i", Kind: container.Int}, {Name: "f", Kind: container.Float},
			{Name: "s", Kind: container.String}, {Name: "t", Kind: container.Time}, {Name: "b", Kind: container.Bytes}},
		Updated: true,
		Finders: []container.Finder{{Name: "above", Where: "i > ?", OrderBy: "id", Many: true}},
	}
}

const (
	eInt = iota
	eFloat
	eString
	eTime
	eBytes
)

func everySchema(dsn string) string {
	ts, blob := "TIMESTAMP", "BLOB"
	switch {
	case strings.HasPrefix(dsn, "postgres"):
		blob = "BYTEA"
	case strings.HasPrefix(dsn, "mysql"):
		ts = "DATETIME(6)"
	}
	return fmt.Sprintf(`DROP TABLE IF EXISTS every;
CREATE TABLE every (id BIGINT PRIMARY KEY, i BIGINT NOT NULL, f DOUBLE PRECISION NOT NULL, s VARCHAR(64) NOT NULL, t %s NOT NULL, b %s);
INSERT INTO every (id, i, f, s, t, b) VALUES (1, 10, 1.5, 'one', '2026-01-02 03:04:05', NULL), (2, 20, 2.5, 'two', '2026-02-03 04:05:06', NULL), (3, 30, 3.5, 'three', '2026-03-04 05:06:07', NULL);`, ts, blob)
}

// newEvery is a container of every() with settings s, on one thread of a
// fresh table at dsn.
func newEvery(t testing.TB, dsn string, s container.Settings) (*store.DB, *container.Container) {
	t.Helper()
	db := storetest.Open(t, dsn, store.Options{Threads: 1})
	if err := db.ExecScript(context.Background(), everySchema(dsn)); err != nil {
		t.Fatal(err)
	}
	ctr, err := container.New(context.Background(), db, []*container.Type{every()}, map[string]container.Settings{"Every": s})
	if err != nil {
		t.Fatal(err)
	}
	return db, ctr
}

// dispatchRun is what a fixed sequence of transactions under one dispatch
// read, left in the table, and counted.
type dispatchRun struct {
	read  []string
	table []string
	stats container.Stats
}

// runDispatch runs the same transactions on a fresh table under d: finds
// by key and by finder (loads, and a collection finder's rows), every
// field read, every field of an instance set, a create, a remove.
func runDispatch(t *testing.T, dsn string, d container.Dispatch, cacheA bool) dispatchRun {
	t.Helper()
	ctx := context.Background()
	s := settings(container.OptionC, 0, 10)
	s.Concurrency = container.Database
	if cacheA {
		s = settings(container.OptionA, 10, 10)
	}
	s.Dispatch = d
	db, ctr := newEvery(t, dsn, s)
	h := ctr.Home("Every")
	var out dispatchRun
	read := func(i *container.Instance) {
		out.read = append(out.read, fmt.Sprintf("%v %d %g %q %s %x", i.Key(), i.Int(eInt), i.Float(eFloat), i.String(eString),
			i.Time(eTime).UTC().Format(time.RFC3339Nano), i.Bytes(eBytes)))
	}
	when := time.Date(2026, 12, 2, 10, 11, 12, 0, time.UTC)
	for round := range 2 { // under A, the second round reads the cache
		tx, err := ctr.Begin(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		one, err := tx.Find(h, container.Key{A: 1})
		if err != nil {
			t.Fatal(err)
		}
		read(one)
		one.SetInt(eInt, one.Int(eInt)+1)
		one.SetFloat(eFloat, one.Float(eFloat)*2)
		one.SetString(eString, one.String(eString)+"!")
		one.SetTime(eTime, when.Add(time.Duration(round)*time.Hour))
		one.SetBytes(eBytes, []byte{byte(round), 0xfe})
		many, err := tx.FindMany(h, "above", nil, int64(15))
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range many {
			read(i)
		}
		if round == 0 {
			n, err := tx.Create(h, container.Key{A: 9})
			if err != nil {
				t.Fatal(err)
			}
			n.SetInt(eInt, 90)
			n.SetFloat(eFloat, 9.25)
			n.SetString(eString, "nine")
			n.SetTime(eTime, when)
			n.SetBytes(eBytes, []byte("nine"))
		} else {
			two, err := tx.Find(h, container.Key{A: 2})
			if err != nil {
				t.Fatal(err)
			}
			tx.Remove(two)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	out.table = everyRows(t, db)
	out.stats = h.Stats()
	return out
}

// everyRows is the table's content, row by row.
func everyRows(t *testing.T, db *store.DB) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), storePrepare(t, db, "SELECT id, i, f, s, t, b FROM every ORDER BY id"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, i int64
		var f float64
		var s string
		var ts time.Time
		var b []byte
		if err := rows.Scan(&id, &i, &f, &s, &ts, &b); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %d %g %q %s %x", id, i, f, s, ts.UTC().Format(time.RFC3339Nano), b))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameRun says how two runs differ; "" when they do not.
func sameRun(a, b dispatchRun) string {
	var diff bytes.Buffer
	for _, p := range []struct {
		what string
		a, b []string
	}{{"read", a.read, b.read}, {"table", a.table, b.table}} {
		if fmt.Sprint(p.a) != fmt.Sprint(p.b) {
			fmt.Fprintf(&diff, "%s:\n  %q\n  %q\n", p.what, p.a, p.b)
		}
	}
	if a.stats != b.stats {
		fmt.Fprintf(&diff, "counters:\n  %+v\n  %+v\n", a.stats, b.stats)
	}
	return diff.String()
}

// TestDispatchesLeaveTheSameState: reflection reaches the same members as
// the compiled accessors, so the same transactions read the same values,
// leave the same rows and count the same lifecycle under both, with
// loads and finder rows (option C) and the ready cache (option A).
func TestDispatchesLeaveTheSameState(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		for _, cacheA := range []bool{false, true} {
			gen := runDispatch(t, dsn, container.Generated, cacheA)
			refl := runDispatch(t, dsn, container.Reflect, cacheA)
			if d := sameRun(gen, refl); d != "" {
				t.Errorf("option A %v: generated and reflect differ:\n%s", cacheA, d)
			}
			if len(gen.table) != 3 || !strings.Contains(gen.table[0], `12 6 "one!!"`) || !strings.HasPrefix(gen.table[2], `9 90 9.25 "nine"`) {
				t.Errorf("option A %v: the table after the transactions is %q; want row 1 changed twice, row 2 removed, row 9 created", cacheA, gen.table)
			}
			// The comparison sees a difference of one value.
			bad := refl
			bad.table = append([]string(nil), refl.table...)
			bad.table[1] = strings.Replace(bad.table[1], "30", "31", 1)
			if sameRun(gen, bad) == "" {
				t.Errorf("a changed row went unseen")
			}
		}
	})
}
