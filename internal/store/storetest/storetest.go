// Package storetest gives tests isolated databases on every backend and the
// conformance suite each backend runs (Exercise).
//
// A test's database is a fresh SQLite file, a fresh PostgreSQL schema or a
// fresh MariaDB/MySQL database, dropped when the test ends. Servers are found
// through TIERBENCH_TEST_POSTGRES and TIERBENCH_TEST_MYSQL (defaulting to the
// development machines' services); an unreachable server skips the test,
// unless TIERBENCH_REQUIRE_SERVICES=1, when it fails.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/mysql"
	"github.com/tierbench/tierbench/internal/store/postgres"
	"github.com/tierbench/tierbench/internal/store/sqlite"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// Default server URLs of the development machines.
const (
	DefaultPostgres = "postgres://root@127.0.0.1:5432/test"
	DefaultMySQL    = "mysql://root@127.0.0.1:3306/test"
)

// Backends registers all three backends, as main does.
func Backends() *store.Backends {
	b := &store.Backends{}
	b.Add(store.SQLite, sqlite.Open)
	b.Add(store.Postgres, postgres.Open)
	b.Add(store.MySQL, mysql.Open)
	return b
}

// Each runs fn as a subtest on every backend, each with a fresh database;
// a backend whose server is unreachable skips its subtest.
func Each(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Helper()
	for _, b := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", SQLite}, {"postgres", Postgres}, {"mysql", MySQL}} {
		t.Run(b.name, func(t *testing.T) { fn(t, b.dsn(t)) })
	}
}

// ShareCell skips cell i of a matrix that a test runs on every backend
// (inside Each) unless the cell is the share of dsn's backend: make test
// runs each cell on one backend and each backend a third of the cells;
// make test-all (TIERBENCH_LONG=1) and make test-race (which runs SQLite
// alone) run every cell on every backend they run. See testsvc.Share.
func ShareCell(t testing.TB, dsn string, i int) {
	t.Helper()
	if testing.Short() {
		return
	}
	dialects := []store.Dialect{store.SQLite, store.Postgres, store.MySQL}
	mine := slices.Index(dialects, store.MustParseDSN(dsn).Dialect)
	if !testsvc.Share(mine, len(dialects), i) {
		t.Skipf("make test runs this cell on %s; make test-all runs every cell on every backend (%s=1)",
			dialects[i%len(dialects)], testsvc.LongEnv)
	}
}

// Fresh returns a DSN of another fresh database on dsn's backend: for the
// cases of a test that run side by side, each on a database of its own.
func Fresh(t testing.TB, dsn string) string {
	t.Helper()
	switch store.MustParseDSN(dsn).Dialect {
	case store.Postgres:
		return Postgres(t)
	case store.MySQL:
		return MySQL(t)
	}
	return SQLite(t)
}

// SQLite returns a DSN of a fresh file in the test's temporary directory.
func SQLite(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
}

// skipServersWhenShort skips a test's server backends under -short, which
// make test-race gives: the race detector watches tierbench's goroutines,
// the same whichever database answers, so it runs each test on SQLite
// alone, and make test runs every backend.
func skipServersWhenShort(t testing.TB, server string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short (make test-race): %s's run is make test's", server)
	}
}

// Postgres returns a DSN whose search_path is a fresh schema.
func Postgres(t testing.TB) string {
	t.Helper()
	skipServersWhenShort(t, "PostgreSQL")
	base := env("TIERBENCH_TEST_POSTGRES", DefaultPostgres)
	schema := uniqueName()
	admin(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { admin(t, base, "DROP SCHEMA "+schema+" CASCADE") })
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// MySQL returns a DSN of a fresh database.
func MySQL(t testing.TB) string {
	t.Helper()
	skipServersWhenShort(t, "MariaDB")
	base := env("TIERBENCH_TEST_MYSQL", DefaultMySQL)
	name := uniqueName()
	admin(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { admin(t, base, "DROP DATABASE "+name) })
	u, _ := url.Parse(base)
	u.Path = "/" + name
	return u.String()
}

// Require reports whether unreachable services fail tests instead of
// skipping them.
func Require() bool { return os.Getenv("TIERBENCH_REQUIRE_SERVICES") == "1" }

// admin runs ddl on a server's base database, or skips the test (fails it
// when services are required). It connects for the statement alone: a
// backend holds its connections open, and tests side by side would
// otherwise keep one base connection pool per database they made, for
// nothing but the drop at the end, against the server's connection limit
// (PostgreSQL's 100 by default).
func admin(t testing.TB, dsn, ddl string) {
	t.Helper()
	if err := adminErr(dsn, ddl); err != nil {
		var unreachable *unreachableError
		switch {
		case !errors.As(err, &unreachable):
			t.Fatal(err)
		case Require():
			t.Fatalf("%v and TIERBENCH_REQUIRE_SERVICES=1", err)
		default:
			t.Skipf("skipping: %v; set TIERBENCH_REQUIRE_SERVICES=1 to fail instead", err)
		}
	}
}

// adminErr is admin's work, for what outlives a test (Populate's origins).
func adminErr(dsn, ddl string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := Backends().Open(ctx, store.MustParseDSN(dsn), store.Options{Threads: 1})
	if err != nil {
		return &unreachableError{dsn: dsn, err: err}
	}
	defer db.Close()
	if err := db.ExecScript(context.Background(), ddl); err != nil {
		return fmt.Errorf("%s: %w", ddl, err)
	}
	return nil
}

// unreachableError is a server that could not be reached.
type unreachableError struct {
	dsn string
	err error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%s unreachable (%v)", store.Redact(e.dsn), e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

func uniqueName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "tb_" + hex.EncodeToString(b)
}

func env(key, def string) string {
	if v := strings.TrimSpace(os.Getenv(key)); v != "" {
		return v
	}
	return def
}

// Open opens dsn for a test and closes it at the end.
func Open(t testing.TB, dsn string, opts store.Options) *store.DB {
	t.Helper()
	db, err := Backends().Open(context.Background(), store.MustParseDSN(dsn), opts)
	if err != nil {
		t.Fatalf("open %s: %v", store.Redact(dsn), err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Querier runs a test's ad hoc SQL on DB, failing the test on any error.
type Querier struct {
	T  testing.TB
	DB *store.DB
}

// Stmt prepares sql.
func (q Querier) Stmt(sql string) *store.Stmt {
	q.T.Helper()
	s, err := q.DB.Prepare(context.Background(), store.Statement{Name: "test", SQL: sql})
	if err != nil {
		q.T.Fatalf("%s: %v", sql, err)
	}
	return s
}

// Row runs sql for one row.
func (q Querier) Row(sql string, args ...any) store.Row {
	q.T.Helper()
	return q.DB.QueryRow(context.Background(), q.Stmt(sql), args...)
}

// Int is the single integer sql returns.
func (q Querier) Int(sql string, args ...any) int64 {
	q.T.Helper()
	return q.IntOf(q.Stmt(sql), args...)
}

// IntOf is Int for a statement prepared once (one polled in a loop).
func (q Querier) IntOf(s *store.Stmt, args ...any) int64 {
	q.T.Helper()
	var n int64
	if err := q.DB.QueryRow(context.Background(), s, args...).Scan(&n); err != nil {
		q.T.Fatalf("%s: %v", s.Name(), err)
	}
	return n
}

// WantRows checks a load: each table of want has its number of rows, and
// the loader's report (rows per table and in all) says the same.
func (q Querier) WantRows(want, reported map[string]int64, reportedRows int64) {
	q.T.Helper()
	var total int64
	for table, n := range want {
		if got := q.Int("SELECT COUNT(*) FROM " + table); got != n {
			q.T.Errorf("%s has %d rows, want %d", table, got, n)
		}
		if got, ok := reported[table]; !ok || got != n {
			q.T.Errorf("report: %s %d rows (reported %t), want %d", table, got, ok, n)
		}
		total += n
	}
	if len(reported) != len(want) || reportedRows != total {
		q.T.Errorf("report: %d tables, %d rows; want %d tables, %d rows", len(reported), reportedRows, len(want), total)
	}
}

// Float is the single number sql returns.
func (q Querier) Float(sql string, args ...any) float64 {
	q.T.Helper()
	var f float64
	if err := q.Row(sql, args...).Scan(&f); err != nil {
		q.T.Fatalf("%s: %v", sql, err)
	}
	return f
}

// Ints are the integers of the first column of sql's rows.
func (q Querier) Ints(sql string, args ...any) []int64 {
	q.T.Helper()
	rows, err := q.DB.Query(context.Background(), q.Stmt(sql), args...)
	if err != nil {
		q.T.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			q.T.Fatalf("%s: %v", sql, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		q.T.Fatalf("%s: %v", sql, err)
	}
	return out
}

// Exec runs sql.
func (q Querier) Exec(sql string, args ...any) {
	q.T.Helper()
	if _, err := q.DB.Exec(context.Background(), q.Stmt(sql), args...); err != nil {
		q.T.Fatalf("%s: %v", sql, err)
	}
}
