package mysql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// TestTableLocks: under TableLocks a transaction that changed one row of
// a table keeps another from changing a different row of it (the second
// waits for the first's table lock, here until the 1 s lock_wait_timeout
// the DSN sets, and is refused); under the engine's row locks both
// proceed at once. After the first commits, the second's retry goes
// through.
func TestTableLocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tables bool
	}{{"engine", false}, {"table", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := storetest.MySQL(t) + "?lock_wait_timeout=1&innodb_lock_wait_timeout=1"
			db := storetest.Open(t, dsn, store.Options{Threads: 2, Isolation: store.RepeatableRead, TableLocks: tc.tables})
			if got, want := db.TableLocks(), tc.tables; got != want {
				t.Fatalf("TableLocks() = %v, want %v", got, want)
			}
			if err := db.ExecScript(ctx, "CREATE TABLE acct (id BIGINT PRIMARY KEY, n BIGINT NOT NULL);\nCREATE TABLE other (id BIGINT PRIMARY KEY);"); err != nil {
				t.Fatal(err)
			}
			q := storetest.Querier{T: t, DB: db}
			q.Exec("INSERT INTO acct VALUES (1, 0), (2, 0)")
			bump := q.Stmt("UPDATE acct SET n = n + 1 WHERE id = ?")

			first, err := db.Thread(0).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Rollback(ctx)
			if _, err := first.Exec(ctx, bump, 1); err != nil {
				t.Fatalf("first transaction, row 1: %v", err)
			}
			second, err := db.Thread(1).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = second.Exec(ctx, bump, 2)
			if tc.tables {
				if !errors.Is(err, store.ErrLockTimeout) {
					t.Fatalf("second transaction, row 2, while the first holds the table: err = %v, want a lock timeout", err)
				}
				second.Rollback(ctx)
			} else {
				if err != nil {
					t.Fatalf("second transaction, row 2, beside the first (row locks): %v", err)
				}
				if err := second.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := first.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.tables {
				// The retry, after the first committed, goes through.
				if err := db.Thread(1).InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.Exec(ctx, bump, 2)
					return err
				}); err != nil {
					t.Fatalf("second transaction's retry: %v", err)
				}
			}
			if got := q.Ints("SELECT n FROM acct ORDER BY id"); len(got) != 2 || got[0] != 1 || got[1] != 1 {
				t.Fatalf("rows after both = %v, want [1 1]", got)
			}
			var want int64
			if tc.tables {
				want = 1
			}
			if got := db.Stats().LockTimeouts; got != want {
				t.Fatalf("lock timeouts = %d, want %d", got, want)
			}
			// The connections went back unlocked, with autocommit on: a
			// statement outside a transaction on either is committed at
			// once, and the tables are free.
			q.Exec("UPDATE acct SET n = 5 WHERE id = 1")
			q.Exec("UPDATE acct SET n = 5 WHERE id = 2")
			if got := q.Int("SELECT SUM(n) FROM acct"); got != 10 {
				t.Fatalf("sum after autocommit updates = %d, want 10", got)
			}
		})
	}
}

// TestTableLocksRefusedElsewhere: only MariaDB and MySQL lock tables.
func TestTableLocksRefusedElsewhere(t *testing.T) {
	t.Parallel()
	_, err := storetest.Backends().Open(context.Background(), store.MustParseDSN(storetest.SQLite(t)), store.Options{TableLocks: true})
	var ue *store.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("TableLocks on SQLite: err = %v, want a usage error", err)
	}
}
