// Package sqlite is tierbench's embedded backend, on modernc.org/sqlite (pure
// Go, so a fresh machine needs nothing but Go; docs/decisions/0002 has the
// measurement behind the choice). Databases run in WAL mode with
// synchronous=NORMAL, the setting SQLite recommends for WAL: a commit
// survives a crash of the process, not of the machine.
//
// SQLite admits one writer at a time. Rather than let writers collide and
// sleep in SQLite's busy handler, the backend queues this process's writers
// on a mutex (explicit transactions and Exec), while reads run concurrently.
// busy_timeout remains for other processes sharing the file.
//
// It depends only on store, store/sqldb and the driver.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/sqldb"
)

// Backend is a database/sql pool on one SQLite file.
type Backend struct {
	db      sqldb.DB
	writeMu sync.Mutex
	tempDir string // removed on Close when the database was temporary
	path    string
	// lockFile holds the database's lock (Lock), if taken; it closes
	// last.
	lockFile *os.File
}

var _ store.Backend = (*Backend)(nil)

// rowsPerInsert stays well under SQLite's 32,766 bound variables.
const rowsPerInsert = 200

// Open opens (creating if need be) the database file, or a fresh temporary
// one for the DSN "sqlite".
func Open(ctx context.Context, dsn store.DSN, opts store.Options) (store.Backend, error) {
	b := &Backend{}
	path := dsn.Path
	if dsn.Temp {
		dir, err := os.MkdirTemp("", "tierbench-sqlite-")
		if err != nil {
			return nil, err
		}
		b.tempDir = dir
		path = filepath.Join(dir, "tierbench.db")
	} else if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return nil, &store.UsageError{Err: fmt.Errorf("--db %s: directory %s does not exist", dsn, dir)}
		}
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(OFF)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		b.removeTemp()
		return nil, err
	}
	// One connection per server thread, and one for shared work (loading,
	// checks, statements prepared mid-run) that a busy thread cannot block.
	db.SetMaxOpenConns(opts.Threads + 1)
	db.SetMaxIdleConns(opts.Threads + 1)
	b.db = sqldb.DB{SQL: db}
	b.path = path
	return b, nil
}

func (b *Backend) Dialect() store.Dialect { return store.SQLite }

// Isolation is always serializable: SQLite has one writer and snapshot
// reads, whatever level was asked for.
func (b *Backend) Isolation() store.Isolation { return store.Serializable }

func (b *Backend) Close() error {
	err := b.db.SQL.Close()
	b.removeTemp()
	if b.lockFile != nil {
		b.lockFile.Close()
	}
	return err
}

func (b *Backend) removeTemp() {
	if b.tempDir != "" {
		os.RemoveAll(b.tempDir)
	}
}

func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := b.db.SQL.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v)
	return "sqlite " + v, err
}

func (b *Backend) Prepare(ctx context.Context, q string) (store.Prepared, error) {
	return b.db.Prepare(ctx, q)
}

func (b *Backend) Shared() store.Executor    { return writeQueued{b} }
func (b *Backend) Thread(int) store.Executor { return writeQueued{b} }

// writeQueued is the backend's executor: reads run concurrently, writes
// (Exec and explicit transactions) one at a time behind the writer mutex.
type writeQueued struct{ b *Backend }

func (w writeQueued) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	w.b.writeMu.Lock()
	defer w.b.writeMu.Unlock()
	return w.b.db.Exec(ctx, p, args)
}

func (w writeQueued) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	return w.b.db.QueryRow(ctx, p, args)
}

func (w writeQueued) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	return w.b.db.Query(ctx, p, args)
}

// Begin returns a transaction that takes the writer mutex when it begins
// (at its first statement, or at a commit of queued statements) and holds
// it to the end: every explicit transaction is taken to write (BEGIN
// IMMEDIATE).
func (w writeQueued) Begin(ctx context.Context) (store.BackendTx, error) {
	t, err := w.b.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &writeTx{Tx: t.(*sqldb.Tx), mu: &w.b.writeMu}, nil
}

type writeTx struct {
	*sqldb.Tx
	mu     *sync.Mutex
	locked bool
}

func (t *writeTx) lock() {
	if !t.locked {
		t.mu.Lock()
		t.locked = true
	}
}

func (t *writeTx) unlock() {
	if t.locked {
		t.locked = false
		t.mu.Unlock()
	}
}

func (t *writeTx) Start(ctx context.Context) error {
	t.lock()
	err := t.Tx.Start(ctx)
	if err != nil && !t.Tx.Began() {
		// Nothing began, so nothing is to be protected: the writer lock
		// goes now, whether or not the caller rolls back.
		t.unlock()
	}
	return err
}

func (t *writeTx) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	t.lock()
	return t.Tx.Exec(ctx, p, args)
}

func (t *writeTx) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	t.lock()
	return t.Tx.QueryRow(ctx, p, args)
}

func (t *writeTx) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	t.lock()
	return t.Tx.Query(ctx, p, args)
}

func (t *writeTx) Commit(ctx context.Context, queued []store.Queued) error {
	if len(queued) > 0 {
		t.lock()
	}
	defer t.unlock()
	return t.Tx.Commit(ctx, queued)
}

func (t *writeTx) Rollback(ctx context.Context) error {
	defer t.unlock()
	return t.Tx.Rollback(ctx)
}

func (b *Backend) ExecScript(ctx context.Context, script string) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	return b.db.ExecScript(ctx, script)
}

func (b *Backend) BulkInsert(ctx context.Context, table string, columns []string, src store.RowSource) (int64, error) {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	return b.db.InsertBatches(ctx, table, columns, src, rowsPerInsert)
}

func (b *Backend) Classify(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.Classified(store.ErrNotFound, err)
	}
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch code := se.Code(); {
	case code == sqlite3.SQLITE_BUSY_SNAPSHOT:
		return store.Classified(store.ErrSerialization, err)
	case code&0xff == sqlite3.SQLITE_BUSY, code&0xff == sqlite3.SQLITE_LOCKED:
		return store.Classified(store.ErrLockTimeout, err)
	case code == sqlite3.SQLITE_CONSTRAINT_UNIQUE, code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return store.Classified(store.ErrUniqueViolation, err)
	case code&0xff == sqlite3.SQLITE_CONSTRAINT:
		return store.Classified(store.ErrConstraint, err)
	case code&0xff == sqlite3.SQLITE_FULL:
		return store.Classified(store.ErrDiskFull, err)
	}
	return err
}
