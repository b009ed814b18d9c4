package storetest

import (
	"context"
	"testing"

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
	t.Run("statements", func(t *testing.T) { exerciseStatements(t, newDSN, setup) })
	t.Run("transactions", func(t *testing.T) { exerciseTransactions(t, newDSN, setup) })
	t.Run("concurrency", func(t *testing.T) { exerciseConcurrency(t, newDSN, setup) })
}

// setupFunc opens a fresh database with opts, creates the suite's tables
// and prepares its statements.
type setupFunc func(t *testing.T, opts store.Options) (*store.DB, stmts)

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
