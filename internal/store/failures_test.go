package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A statement refused by a constraint other than a unique key is
// classified as a constraint violation on every backend, and a result
// counts it under "constraint".
func TestConstraintViolationIsClassified(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := storetest.Open(t, dsn, store.Options{Threads: 1})
		if err := db.ExecScript(ctx, "CREATE TABLE c (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		insert := prepare(t, db, "INSERT INTO c (id, n) VALUES (?, ?)")
		_, err := db.Exec(ctx, insert, 1, nil)
		if !errors.Is(err, store.ErrConstraint) {
			t.Fatalf("NULL into a NOT NULL column: %v, want ErrConstraint", err)
		}
		if got := driver.FailureClass(err); got != "constraint" {
			t.Errorf("failure class %q, want constraint", got)
		}
		if _, err := db.Exec(ctx, insert, 1, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, insert, 1, 2); driver.FailureClass(err) != "constraint" {
			t.Errorf("duplicate key: class %q (%v), want constraint", driver.FailureClass(err), err)
		}
	})
}

// A write to a full filesystem is classified as a full disk on every
// backend: SQLite's SQLITE_FULL, PostgreSQL's 53100 (a tablespace there),
// MariaDB's 1114 (a table's DATA DIRECTORY there). The servers are
// private: the shared ones are left alone.
func TestDiskFullIsClassified(t *testing.T) {
	testsvc.SkipUnlessLong(t, "servers on a full filesystem")
	const table = "CREATE TABLE f (id BIGINT PRIMARY KEY, pad VARCHAR(1000) NOT NULL)"
	for _, b := range []struct {
		name string
		// setup opens a database whose table f fills the small filesystem.
		setup func(t *testing.T) (dsn string, ddl []string)
	}{
		{"sqlite", func(t *testing.T) (string, []string) {
			return "sqlite:" + filepath.Join(testsvc.SmallFS(t, 256<<10), "full.db"), []string{table}
		}},
		{"postgres", func(t *testing.T) (string, []string) {
			pg := testsvc.Postgres(t)
			dir := testsvc.SmallFSFor(t, 512<<10, "postgres")
			return pg.DSN(), []string{"CREATE TABLESPACE small LOCATION '" + dir + "'", table + " TABLESPACE small"}
		}},
		{"mariadb", func(t *testing.T) (string, []string) {
			m := testsvc.MariaDB(t)
			dir := testsvc.SmallFSFor(t, 1<<20, "mysql")
			return m.DSN(), []string{table + " DATA DIRECTORY = '" + dir + "'"}
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			dsn, ddl := b.setup(t)
			db := storetest.Open(t, dsn, store.Options{Threads: 1})
			for _, d := range ddl {
				if err := db.ExecScript(context.Background(), d); err != nil {
					t.Fatalf("%s: %v", d, err)
				}
			}
			err := insertUntilFull(db, prepare(t, db, "INSERT INTO f (id, pad) VALUES (?, ?)"))
			t.Logf("insert on a full filesystem: %v", err)
			if !errors.Is(err, store.ErrDiskFull) {
				t.Fatalf("insert on a full filesystem: %v, want ErrDiskFull", err)
			}
			if got := driver.FailureClass(err); got != "disk_full" {
				t.Errorf("failure class %q, want disk_full", got)
			}
		})
	}
	if got := driver.FailureClass(fmt.Errorf("write: %w", store.Classified(store.ErrInDoubt, store.ErrDiskFull))); got != "in_doubt" {
		t.Errorf("a commit in doubt on a full disk: class %q, want in_doubt", got)
	}
}

// insertUntilFull inserts rows of 1 KB until an insert fails (10 MB at
// most), and returns its error.
func insertUntilFull(db *store.DB, insert *store.Stmt) error {
	pad := strings.Repeat("x", 1000)
	for i := range 10000 {
		if _, err := db.Exec(context.Background(), insert, i, pad); err != nil {
			return err
		}
	}
	return nil
}
