package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// Exercise is the store seam's conformance suite: every backend runs it
// against a real server, each subtest on a fresh database from newDSN.
func Exercise(t *testing.T, newDSN func(testing.TB) string) {
	ctx := context.Background()
	setup := func(t *testing.T, opts store.Options) (*store.DB, stmts) {
		t.Helper()
		db := Open(t, newDSN(t), opts)
		if err := db.ExecScript(ctx, "CREATE TABLE conf (id BIGINT PRIMARY KEY, name VARCHAR(32) NOT NULL, n BIGINT NOT NULL);\nCREATE TABLE conf2 (id BIGINT PRIMARY KEY, n BIGINT NOT NULL);"); err != nil {
			t.Fatal(err)
		}
		return db, prepareAll(t, db)
	}

	t.Run("statements round trip and are counted", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		before := db.Stats()
		for i := int64(1); i <= 3; i++ {
			r, err := db.Exec(ctx, s.insert, i, fmt.Sprintf("row %d", i), i*10)
			if err != nil || r.RowsAffected != 1 {
				t.Fatalf("insert %d: %v, %d rows", i, err, r.RowsAffected)
			}
		}
		var name string
		var n int64
		if err := db.QueryRow(ctx, s.byID, 2).Scan(&name, &n); err != nil || name != "row 2" || n != 20 {
			t.Fatalf("select 2 = %q %d %v; want row 2, 20", name, n, err)
		}
		// Two placeholders, and a quoted '?' that is not one.
		rows, err := db.Query(ctx, s.between, 15, 35)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var x string
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil || fmt.Sprint(got) != "[row 2? row 3?]" {
			t.Fatalf("between 15 and 35 = %v, %v; want [row 2? row 3?]", got, err)
		}
		err = db.QueryRow(ctx, s.byID, 99).Scan(&name, &n)
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("select of a missing row: %v, want ErrNotFound", err)
		}
		if st := db.Stats().Sub(before); st.Statements != 6 || st.Transactions != 0 {
			t.Errorf("counted %d statements, %d transactions; want 6, 0", st.Statements, st.Transactions)
		}
	})

	t.Run("unique violation is classified and counted", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		if _, err := db.Exec(ctx, s.insert, 1, "a", 1); err != nil {
			t.Fatal(err)
		}
		_, err := db.Exec(ctx, s.insert, 1, "b", 2)
		if !errors.Is(err, store.ErrUniqueViolation) {
			t.Fatalf("duplicate key: %v, want ErrUniqueViolation", err)
		}
		if store.Retryable(err) {
			t.Error("a unique violation must not be retryable")
		}
		if got := db.Stats().UniqueViolations; got != 1 {
			t.Errorf("unique violations counted = %d, want 1", got)
		}
	})

	t.Run("transactions commit, roll back and are counted", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		before := db.Stats()
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, s.insert, 1, "kept", 1)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		errBusiness := errors.New("business rule")
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, s.insert, 2, "undone", 2); err != nil {
				return err
			}
			var n int64
			if err := tx.QueryRow(ctx, s.count).Scan(&n); err != nil || n != 2 {
				t.Errorf("inside the transaction: %d rows, %v; want 2", n, err)
			}
			return errBusiness
		})
		if err != errBusiness {
			t.Fatalf("InTx returned %v, want the function's own error unchanged", err)
		}
		var n int64
		if err := db.QueryRow(ctx, s.count).Scan(&n); err != nil || n != 1 {
			t.Fatalf("after commit and rollback: %d rows, %v; want 1", n, err)
		}
		st := db.Stats().Sub(before)
		if st.Transactions != 2 || st.Commits != 1 || st.Rollbacks != 1 || st.Statements != 4 {
			t.Errorf("counted %+v; want 2 transactions, 1 commit, 1 rollback, 4 statements", st)
		}
	})

	t.Run("queued statements run at commit, in order, or not at all", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		before := db.Stats()
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			tx.Queue(s.insert2, 7, 1)
			tx.Queue(s.increment, 7) // sees the queued insert: order is kept
			var n int64
			if err := tx.QueryRow(ctx, s.count2).Scan(&n); err != nil || n != 0 {
				t.Errorf("before commit: %d rows, %v; queued statements must not have run yet", n, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := db.QueryRow(ctx, s.get2, 7).Scan(&n); err != nil || n != 2 {
			t.Fatalf("after commit: n = %d, %v; want 2 (insert then increment)", n, err)
		}
		// A queued statement that fails rolls the whole transaction back.
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, s.increment, 7); err != nil {
				return err
			}
			tx.Queue(s.insert2, 7, 1) // duplicate key
			return nil
		})
		if !errors.Is(err, store.ErrUniqueViolation) {
			t.Fatalf("commit with a failing queued statement: %v, want ErrUniqueViolation", err)
		}
		if err := db.QueryRow(ctx, s.get2, 7).Scan(&n); err != nil || n != 2 {
			t.Errorf("after the failed commit: n = %d, %v; want 2 (the increment rolled back)", n, err)
		}
		st := db.Stats().Sub(before)
		if st.Commits != 1 || st.Rollbacks != 1 || st.Statements != 7 {
			t.Errorf("counted %+v; want 1 commit, 1 rollback, 7 statements (queued ones included)", st)
		}
		// The session stays usable after the failed commit.
		if err := db.QueryRow(ctx, s.get2, 7).Scan(&n); err != nil {
			t.Errorf("session after a failed commit: %v", err)
		}
	})

	// A relay or a terminal committing queued statements as its run ends
	// (its context canceled) found that the transaction could not begin:
	// the commit must fail with the context's error and leave nothing, not
	// panic on a transaction that never began.
	t.Run("a commit of queued statements whose context ended fails cleanly", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		ended, cancel := context.WithCancel(ctx)
		err := db.InTx(ended, func(tx *store.Tx) error {
			tx.Queue(s.insert2, 8, 1)
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("commit after the context ended: %v, want context.Canceled", err)
		}
		if n := (Querier{t, db}).Int("SELECT COUNT(*) FROM conf2 WHERE id = 8"); n != 0 {
			t.Errorf("%d rows of the failed commit in the database, want 0", n)
		}
		if err := db.InTx(ctx, func(tx *store.Tx) error { tx.Queue(s.insert2, 8, 1); return nil }); err != nil {
			t.Errorf("session after the failed commit: %v", err)
		}
	})

	t.Run("transactions begin lazily", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 1})
		before := db.Stats()
		if err := db.InTx(ctx, func(*store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if st := db.Stats().Sub(before); st != (store.Stats{}) {
			t.Errorf("an empty transaction reached the database: %+v", st)
		}
		// Queued writes alone: one transaction, begun at the commit.
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			tx.Queue(s.insert2, 1, 10)
			tx.Queue(s.insert2, 2, 20)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := db.QueryRow(ctx, s.count2).Scan(&n); err != nil || n != 2 {
			t.Fatalf("after a write-only transaction: %d rows, %v; want 2", n, err)
		}
		if st := db.Stats().Sub(before); st.Transactions != 1 || st.Commits != 1 || st.Statements != 3 {
			t.Errorf("counted %+v; want 1 transaction, 1 commit, 3 statements", st)
		}
	})

	t.Run("an expected row count that does not hold rolls back", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 1})
		if _, err := db.Exec(ctx, s.insert2, 1, 0); err != nil {
			t.Fatal(err)
		}
		err := db.InTx(ctx, func(tx *store.Tx) error {
			tx.QueueExpect(s.increment, 1, 1) // row 1 exists: holds
			tx.Queue(s.insert2, 5, 0)
			tx.QueueExpect(s.increment, 1, 2) // row 2 does not: stale
			return nil
		})
		if !errors.Is(err, store.ErrStale) {
			t.Fatalf("commit: %v, want ErrStale", err)
		}
		var n int64
		if err := db.QueryRow(ctx, s.get2, 1).Scan(&n); err != nil || n != 0 {
			t.Errorf("row 1 = %d, %v; want 0: the transaction must have rolled back", n, err)
		}
		if err := db.QueryRow(ctx, s.count2).Scan(&n); err != nil || n != 1 {
			t.Errorf("%d rows, %v; want 1: the queued insert must have rolled back", n, err)
		}
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			tx.QueueExpect(s.increment, 1, 1)
			return nil
		}); err != nil {
			t.Errorf("a count that holds: %v", err)
		}
	})

	t.Run("every server thread has a working session", func(t *testing.T) {
		const threads = 3
		db, s := setup(t, store.Options{Threads: threads})
		if db.Threads() != threads || db.Thread(0) == db.Thread(1) || db.Thread(threads) != db.Thread(-1) {
			t.Fatalf("%d thread sessions; distinct per thread and shared out of range expected", db.Threads())
		}
		var wg sync.WaitGroup
		for i := range threads {
			wg.Go(func() {
				th := db.Thread(i)
				for k := 0; k < 20; k++ {
					id := int64(i*100 + k)
					if err := th.InTx(ctx, func(tx *store.Tx) error {
						tx.Queue(s.insert2, id, 0)
						return nil
					}); err != nil {
						t.Error(err)
						return
					}
					var n int64
					if err := th.QueryRow(ctx, s.get2, id).Scan(&n); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		var n int64
		if err := db.QueryRow(ctx, s.count2).Scan(&n); err != nil || n != threads*20 {
			t.Errorf("%d rows written through the thread sessions, %v; want %d", n, err, threads*20)
		}
	})

	t.Run("bulk insert writes every row", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		const rows = 1234 // not a multiple of any backend's batch
		n, err := db.BulkInsert(ctx, "conf", []string{"id", "name", "n"}, &counting{n: rows})
		if err != nil || n != rows {
			t.Fatalf("bulk insert: %d rows, %v; want %d", n, err, rows)
		}
		var got, sum int64
		if err := db.QueryRow(ctx, s.count).Scan(&got); err != nil || got != rows {
			t.Fatalf("count after bulk insert = %d, %v; want %d", got, err, rows)
		}
		if err := db.QueryRow(ctx, s.sum).Scan(&sum); err != nil || sum != rows*(rows+1)/2 {
			t.Fatalf("sum after bulk insert = %d, %v; want %d", sum, err, rows*(rows+1)/2)
		}
	})

	t.Run("concurrent writers of one row lose no update", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 4})
		if _, err := db.Exec(ctx, s.insert2, 1, 0); err != nil {
			t.Fatal(err)
		}
		const writers, each = 4, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := 0; w < writers; w++ {
			wg.Go(func() {
				for i := 0; i < each; i++ {
					errs <- db.InTx(ctx, func(tx *store.Tx) error {
						_, err := tx.Exec(ctx, s.increment, 1)
						return err
					})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var n int64
		if err := db.QueryRow(ctx, s.get2, 1).Scan(&n); err != nil || n != writers*each {
			t.Fatalf("counter = %d, %v; want %d", n, err, writers*each)
		}
	})

	t.Run("deadlocks are classified as retryable", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		if db.Dialect() == store.SQLite {
			t.Skip("SQLite runs one writer at a time: transactions cannot deadlock")
		}
		for id := int64(1); id <= 2; id++ {
			if _, err := db.Exec(ctx, s.insert2, id, 0); err != nil {
				t.Fatal(err)
			}
		}
		// Each transaction locks its own row, waits for the other to do
		// the same, then asks for the other's row.
		var locked sync.WaitGroup
		locked.Add(2)
		results := make(chan error, 2)
		for _, order := range [][2]int64{{1, 2}, {2, 1}} {
			go func() {
				results <- db.InTx(ctx, func(tx *store.Tx) error {
					if _, err := tx.Exec(ctx, s.increment, order[0]); err != nil {
						locked.Done()
						return err
					}
					locked.Done()
					locked.Wait()
					_, err := tx.Exec(ctx, s.increment, order[1])
					return err
				})
			}()
		}
		var victims int
		for i := 0; i < 2; i++ {
			select {
			case err := <-results:
				if err != nil {
					if !errors.Is(err, store.ErrDeadlock) || !store.Retryable(err) {
						t.Fatalf("deadlock victim got %v, want a retryable ErrDeadlock", err)
					}
					victims++
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no deadlock detected in 30 s")
			}
		}
		if victims != 1 {
			t.Fatalf("%d deadlock victims, want exactly 1", victims)
		}
		if got := db.Stats().Deadlocks; got != 1 {
			t.Errorf("deadlocks counted = %d, want 1", got)
		}
	})

	t.Run("isolation level is the one asked for", func(t *testing.T) {
		for _, iso := range []store.Isolation{store.ReadCommitted, store.RepeatableRead, store.Serializable} {
			db := Open(t, newDSN(t), store.Options{Threads: 1, Isolation: iso})
			if db.Dialect() == store.SQLite {
				if db.Isolation() != store.Serializable {
					t.Errorf("SQLite reports %s, want serializable (its only level)", db.Isolation())
				}
				continue
			}
			q := map[store.Dialect]string{
				store.Postgres: "SELECT current_setting('transaction_isolation')",
				store.MySQL:    "SELECT @@tx_isolation",
			}[db.Dialect()]
			p, err := db.Prepare(ctx, store.Statement{Name: "isolation", SQL: q})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.QueryRow(ctx, p).Scan(&got) }); err != nil {
				t.Fatal(err)
			}
			if norm := normalizeIsolation(got); norm != iso.SQL() {
				t.Errorf("asked for %s, transactions run at %q", iso, got)
			}
		}
	})
}

func normalizeIsolation(s string) string {
	out := []byte(s)
	for i, c := range out {
		switch {
		case c == '-':
			out[i] = ' '
		case c >= 'a' && c <= 'z':
			out[i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

type stmts struct {
	insert, byID, between, count, sum, insert2, increment, get2, count2 *store.Stmt
}

func prepareAll(t *testing.T, db *store.DB) stmts {
	t.Helper()
	var s stmts
	for _, p := range []struct {
		dst  **store.Stmt
		name string
		sql  string
	}{
		{&s.insert, "insert", "INSERT INTO conf (id, name, n) VALUES (?, ?, ?)"},
		{&s.byID, "by-id", "SELECT name, n FROM conf WHERE id = ?"},
		{&s.between, "between", "SELECT name || '?' FROM conf WHERE n >= ? AND n <= ? ORDER BY id"},
		{&s.count, "count", "SELECT COUNT(*) FROM conf"},
		{&s.sum, "sum", "SELECT SUM(n) FROM conf"},
		{&s.insert2, "insert2", "INSERT INTO conf2 (id, n) VALUES (?, ?)"},
		{&s.increment, "increment", "UPDATE conf2 SET n = n + 1 WHERE id = ?"},
		{&s.get2, "get2", "SELECT n FROM conf2 WHERE id = ?"},
		{&s.count2, "count2", "SELECT COUNT(*) FROM conf2"},
	} {
		q := store.Statement{Name: p.name, SQL: p.sql}
		if p.name == "between" {
			// MySQL spells concatenation CONCAT unless in ANSI mode.
			q.Dialects = map[store.Dialect]string{store.MySQL: "SELECT CONCAT(name, '?') FROM conf WHERE n >= ? AND n <= ? ORDER BY id"}
		}
		st, err := db.Prepare(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		*p.dst = st
	}
	return s
}

// counting yields rows (i, "name i", i) for i = 1..n.
type counting struct {
	n, i int64
	row  [3]any
}

func (c *counting) Next() bool {
	if c.i == c.n {
		return false
	}
	c.i++
	c.row = [3]any{c.i, fmt.Sprintf("name %d", c.i), c.i}
	return true
}

func (c *counting) Values() []any { return c.row[:] }
