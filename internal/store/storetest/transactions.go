package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
)

// exerciseTransactions: transactions commit, roll back and are counted,
// run their queued statements at commit, begin lazily, roll back on an
// expected row count that does not hold, and run at the isolation level
// asked for.
func exerciseTransactions(t *testing.T, newDSN func(testing.TB) string, setup setupFunc) {
	ctx := context.Background()
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
		if st := db.Stats().Sub(before); !reflect.DeepEqual(st, store.Stats{}) {
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
