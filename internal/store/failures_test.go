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

// SQLite on a full filesystem fails with SQLITE_FULL, classified as a
// full disk.
func TestSQLiteDiskFullIsClassified(t *testing.T) {
	dir := testsvc.SmallFS(t, 256<<10)
	ctx := context.Background()
	db := storetest.Open(t, "sqlite:"+filepath.Join(dir, "full.db"), store.Options{Threads: 1})
	if err := db.ExecScript(ctx, "CREATE TABLE f (id BIGINT PRIMARY KEY, pad VARCHAR(1000) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	insert := prepare(t, db, "INSERT INTO f (id, pad) VALUES (?, ?)")
	pad := strings.Repeat("x", 1000)
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		_, err = db.Exec(ctx, insert, i, pad)
	}
	if !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("insert into a database on a full filesystem: %v, want ErrDiskFull", err)
	}
	if got := driver.FailureClass(err); got != "disk_full" {
		t.Errorf("failure class %q, want disk_full", got)
	}
	if got := driver.FailureClass(fmt.Errorf("write: %w", store.Classified(store.ErrInDoubt, store.ErrDiskFull))); got != "in_doubt" {
		t.Errorf("a commit in doubt on a full disk: class %q, want in_doubt", got)
	}
}
