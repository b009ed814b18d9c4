package messaging

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// outboxFixture is a database with an empty outbox table and a queue on an
// embedded broker.
type outboxFixture struct {
	db     *store.DB
	q      *Queue
	insert *store.Stmt
	count  *store.Stmt
}

func setupOutbox(t *testing.T, dsn string) outboxFixture {
	t.Helper()
	ctx := testContext(t)
	db := storetest.Open(t, dsn, store.Options{Threads: 1})
	if err := db.ExecScript(ctx, "CREATE TABLE po_outbox (po_id BIGINT PRIMARY KEY);"); err != nil {
		t.Fatal(err)
	}
	f := outboxFixture{db: db, q: newQueue(t, embedded(t, t.TempDir()))}
	var err error
	if f.insert, err = db.Prepare(ctx, store.Statement{Name: "insert", SQL: "INSERT INTO po_outbox (po_id) VALUES (?)"}); err != nil {
		t.Fatal(err)
	}
	if f.count, err = db.Prepare(ctx, store.Statement{Name: "count", SQL: "SELECT COUNT(*) FROM po_outbox"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// commit writes outbox rows as committed transactions would.
func (f outboxFixture) commit(t *testing.T, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := f.db.Exec(testContext(t), f.insert, id); err != nil {
			t.Fatalf("insert %d: %v", id, err)
		}
	}
}

func (f outboxFixture) rows(t *testing.T) int64 {
	t.Helper()
	var n int64
	if err := f.db.QueryRow(testContext(t), f.count).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// receive consumes the queue until it has n messages and returns how often
// each came.
func (f outboxFixture) receive(t *testing.T, n int) map[string]int {
	t.Helper()
	got := consumeN(t, n, fmt.Sprintf("%d deliveries", n), func(h handler) (*Consumer, error) { return f.q.Consume(testContext(t), "mdb", h) })
	if p := pending(t, f.q, "mdb"); p != 0 {
		t.Errorf("%d messages pending after %d were received; want 0", p, n)
	}
	return got
}

func newOutbox(t *testing.T, f outboxFixture) *Outbox {
	t.Helper()
	o, err := NewOutbox(testContext(t), f.db, f.q, OutboxConfig{Table: "po_outbox", IDColumn: "po_id"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOutboxRelaysLeftRowsOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := setupOutbox(t, dsn)
		// Rows of a process killed after its commits: more than two
		// batches, ids with gaps and inserted out of order.
		const rows = 2*outboxBatch + 50
		want := map[string]int{}
		for i := int64(rows); i >= 1; i-- {
			f.commit(t, i*3)
			want[strconv.FormatInt(i*3, 10)] = 1
		}
		o := newOutbox(t, f)
		n, err := o.RelayOnce(testContext(t))
		if err != nil || n != rows {
			t.Fatalf("RelayOnce: %d rows, %v; want %d", n, err, rows)
		}
		if st := o.Stats(); st != (OutboxStats{Published: rows, Batches: 3}) {
			t.Errorf("stats %+v; want %d published in 3 batches", st, rows)
		}
		if left := f.rows(t); left != 0 {
			t.Errorf("%d outbox rows left; want 0", left)
		}
		if n, err := o.RelayOnce(testContext(t)); err != nil || n != 0 {
			t.Errorf("second RelayOnce: %d rows, %v; want 0", n, err)
		}
		if st := o.Stats(); st.Published != rows || st.Duplicates != 0 {
			t.Errorf("stats after the second pass %+v; want unchanged", st)
		}
		if n := length(t, f.q); n != rows {
			t.Fatalf("queue holds %d messages; want %d", n, rows)
		}
		if got := f.receive(t, rows); !maps.Equal(got, want) {
			t.Errorf("received %d distinct ids (%v); want each of the %d once", len(got), got, rows)
		}
	})
}

func TestOutboxRepublishAfterCrashIsDropped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := setupOutbox(t, dsn)
		f.commit(t, 1, 2, 3, 4, 5)
		// A relay published 3 and died before deleting its row.
		publish(t, f.q, "3", "3")
		o := newOutbox(t, f)
		n, err := o.RelayOnce(testContext(t))
		if err != nil || n != 5 {
			t.Fatalf("RelayOnce: %d rows, %v; want 5", n, err)
		}
		if st := o.Stats(); st != (OutboxStats{Published: 4, Duplicates: 1, Batches: 1}) {
			t.Errorf("stats %+v; want 4 published, 1 duplicate, 1 batch", st)
		}
		if left := f.rows(t); left != 0 {
			t.Errorf("%d outbox rows left; want 0", left)
		}
		want := map[string]int{"1": 1, "2": 1, "3": 1, "4": 1, "5": 1}
		if got := f.receive(t, 5); !maps.Equal(got, want) {
			t.Errorf("received %v; want 1 to 5 once each", got)
		}
	})
}

// Under another prefix the same row ids are new messages: a table reloaded
// from 1, relayed by a new process, loses nothing to the stream's memory of
// the old one.
func TestOutboxPrefixKeepsRepeatedIDsApart(t *testing.T) {
	t.Parallel()
	f := setupOutbox(t, storetest.SQLite(t))
	relay := func(prefix string) OutboxStats {
		t.Helper()
		o, err := NewOutbox(testContext(t), f.db, f.q, OutboxConfig{Table: "po_outbox", IDColumn: "po_id", MessageIDPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		f.commit(t, 1, 2)
		if _, err := o.RelayOnce(testContext(t)); err != nil {
			t.Fatal(err)
		}
		return o.Stats()
	}
	if st := relay("run-a/"); st.Published != 2 || st.Duplicates != 0 {
		t.Fatalf("first process: %+v; want 2 published", st)
	}
	if st := relay("run-b/"); st.Published != 2 || st.Duplicates != 0 {
		t.Errorf("second process, ids again 1 and 2: %+v; want 2 published, none taken for a copy", st)
	}
	if st := relay("run-b/"); st.Published != 0 || st.Duplicates != 2 {
		t.Errorf("the same prefix again: %+v; want both dropped as copies", st)
	}
	if got := f.receive(t, 4); !maps.Equal(got, map[string]int{"1": 2, "2": 2}) {
		t.Errorf("received %v; want 1 and 2 twice each (once per process)", got)
	}
}

func TestOutboxRunRelaysOnKick(t *testing.T) {
	t.Parallel()
	f := setupOutbox(t, storetest.SQLite(t))
	f.commit(t, 1) // left over: relayed by Run's first pass
	o := newOutbox(t, f)

	got := newDeliveries()
	arrived := make(chan string, 2)
	c, err := f.q.Consume(testContext(t), "mdb", func(_ context.Context, data []byte) error {
		got.add(data)
		arrived <- string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithCancel(testContext(t))
	stopped := make(chan struct{})
	go func() {
		// An interval longer than the test: only the first pass and Kick
		// can relay anything.
		o.Run(ctx, time.Hour)
		close(stopped)
	}()
	next := func(want string) {
		t.Helper()
		select {
		case id := <-arrived:
			if id != want {
				t.Fatalf("received %s; want %s", id, want)
			}
		case <-time.After(testTimeout):
			t.Fatalf("timed out waiting for %s", want)
		}
	}
	next("1")
	f.commit(t, 2)
	o.Kick()
	next("2")
	// Message 2 can arrive before its publish is acknowledged to the relay;
	// a pass of our own waits for Run's to finish, and finds nothing left.
	if n, err := o.RelayOnce(testContext(t)); err != nil || n != 0 {
		t.Errorf("RelayOnce after Run's passes: %d rows, %v; want 0", n, err)
	}
	cancel()
	wait(t, stopped, "Run to return")
	if st := o.Stats(); st.Published != 2 || st.Errors != 0 || o.LastErr() != nil {
		t.Errorf("stats %+v, last error %v; want 2 published, no errors", st, o.LastErr())
	}
}

func TestNewOutboxRejectsNonIdentifiers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ table, column string }{
		{"", "id"},
		{"po_outbox", ""},
		{"po_outbox; DROP TABLE x", "id"},
		{"po_outbox", "1id"},
		{"po.outbox", "id"},
	} {
		// Names are checked before the database is touched.
		if _, err := NewOutbox(context.Background(), nil, nil, OutboxConfig{Table: c.table, IDColumn: c.column}); err == nil {
			t.Errorf("NewOutbox(%q, %q) accepted; want an error", c.table, c.column)
		}
	}
}

// A pass that fails, whoever calls it (Run's loop or a drain's RelayOnce),
// is counted and its error kept, and its rows stay for the next pass.
func TestFailedRelayPassIsCountedAndKeepsItsRows(t *testing.T) {
	t.Parallel()
	f := setupOutbox(t, storetest.SQLite(t))
	b := embedded(t, t.TempDir())
	f.q = newQueue(t, b)
	o := newOutbox(t, f)
	f.commit(t, 1, 2)
	if err := b.DeleteQueue(testContext(t), f.q.Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := o.RelayOnce(testContext(t)); err == nil {
		t.Fatal("relay to a deleted stream succeeded")
	}
	if st := o.Stats(); st.Errors != 1 || st.Published != 0 || o.LastErr() == nil {
		t.Errorf("after a failed pass: %+v, last error %v; want 1 error recorded", st, o.LastErr())
	}
	if n := f.rows(t); n != 2 {
		t.Errorf("%d rows left; want both, for the next pass", n)
	}
}

// A relay pass waiting for the one under way (the drain's behind Run's)
// gives up when its context ends instead of waiting for it.
func TestRelayOnceWaitsForThePassUnderWayOnlyUntilItsContextEnds(t *testing.T) {
	t.Parallel()
	f := setupOutbox(t, storetest.SQLite(t))
	o, err := NewOutbox(testContext(t), f.db, f.q, OutboxConfig{Table: "po_outbox", IDColumn: "po_id"})
	if err != nil {
		t.Fatal(err)
	}
	o.running <- struct{}{} // a pass under way
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	if n, err := o.RelayOnce(ctx); !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("RelayOnce behind a pass under way, its context over: %d, %v; want 0, context.Canceled", n, err)
	}
	if s := o.Stats(); s.Errors != 0 {
		t.Errorf("%d errors counted; a pass given up by its context is not a failure", s.Errors)
	}
	<-o.running
	f.commit(t, 1)
	if n, err := o.RelayOnce(testContext(t)); err != nil || n != 1 {
		t.Errorf("RelayOnce after the pass under way ended: %d, %v; want 1, nil", n, err)
	}
}
