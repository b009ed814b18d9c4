package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Backend is what a database sub-package implements. store.DB wraps it with
// counting and error classification, so backends stay thin.
type Backend interface {
	Dialect() Dialect
	// ServerVersion names the product and its version ("postgres 15.19"),
	// for provenance.
	ServerVersion(ctx context.Context) (string, error)
	// Isolation is the level transactions actually run at; SQLite has one.
	Isolation() Isolation
	// Prepare checks sql and returns the backend's handle for it, which
	// any of its executors can run.
	Prepare(ctx context.Context, sql string) (Prepared, error)
	// Shared runs statements on any free connection: loading, checks.
	Shared() Executor
	// Thread is the executor of server thread i, 0 <= i < Options.Threads,
	// used by that thread alone. A backend may pin a connection to it, as
	// an application server's worker holds its connection; one that does
	// not returns Shared.
	Thread(i int) Executor
	// ExecScript runs DDL statements separated by semicolons at line ends.
	ExecScript(ctx context.Context, script string) error
	// BulkInsert loads rows into table as fast as the database allows (COPY,
	// multi-row INSERT) and returns the number of rows written.
	BulkInsert(ctx context.Context, table string, columns []string, src RowSource) (int64, error)
	// Classify translates a driver error into an *Error of one of the
	// classes in errors.go, or returns it unchanged.
	Classify(err error) error
	Close() error
}

// Prepared is a backend's handle of a statement; only that backend's
// executors and transactions run it.
type Prepared any

// Querier runs prepared statements.
type Querier interface {
	Exec(ctx context.Context, p Prepared, args []any) (Result, error)
	QueryRow(ctx context.Context, p Prepared, args []any) Scanner
	Query(ctx context.Context, p Prepared, args []any) (BackendRows, error)
}

// Executor runs statements in their own implicit transactions, or begins
// explicit ones.
type Executor interface {
	Querier
	Begin(ctx context.Context) (BackendTx, error)
}

// BackendTx is a backend's transaction. It begins lazily: BEGIN goes to
// the database just before the first statement, and a transaction that
// ran no statement sends nothing at all, or, when statements were queued,
// BEGIN, the queued statements and COMMIT together.
type BackendTx interface {
	Querier
	// Start begins the transaction on the database now rather than at its
	// first statement.
	Start(ctx context.Context) error
	// Commit runs the queued statements, in order, then commits; a backend
	// that can pipeline sends them and the COMMIT in one round trip (unless
	// a statement's row count must be checked first). If any fails, or
	// changes another number of rows than it expects (ErrStale), the
	// transaction is rolled back and the error returned.
	Commit(ctx context.Context, queued []Queued) error
	Rollback(ctx context.Context) error
}

// Queued is a statement deferred to commit.
type Queued struct {
	P    Prepared
	Args []any
	// CheckRows: the statement must change exactly Rows rows.
	CheckRows bool
	Rows      int64
}

// Check returns ErrStale when a queued statement that expects a row
// count changed another number of rows.
func (q Queued) Check(r Result) error {
	if q.CheckRows && r.RowsAffected != q.Rows {
		return Classified(ErrStale, fmt.Errorf("statement changed %d rows, expected %d", r.RowsAffected, q.Rows))
	}
	return nil
}

// HasChecks reports whether any queued statement expects a row count.
func HasChecks(queued []Queued) bool {
	for _, q := range queued {
		if q.CheckRows {
			return true
		}
	}
	return false
}

// FailedRow is a Scanner whose Scan returns err: a QueryRow that failed
// before reaching the database.
func FailedRow(err error) Scanner { return failedRow{err} }

type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// Scanner is a single-row result (pgx.Row, *sql.Row).
type Scanner interface {
	Scan(dest ...any) error
}

// BackendRows is a multi-row result.
type BackendRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Result of an Exec.
type Result struct {
	RowsAffected int64
	// LastInsertID is set by backends without RETURNING (MySQL).
	LastInsertID int64
}

// RowSource feeds BulkInsert one row at a time so large populations never
// sit in memory whole.
type RowSource interface {
	Next() bool
	Values() []any
}

// Options shape the connections of a run.
type Options struct {
	// Threads is the number of server threads, each with its executor
	// (Backend.Thread); the pool holds a connection for each, and one more
	// for shared work.
	Threads   int
	Isolation Isolation
	// TableLocks: every transaction locks all of the database's tables
	// before its first statement and holds them to its end (LOCK TABLES;
	// decision 0040). Only the MySQL backend has it; Open refuses it
	// elsewhere.
	TableLocks bool
}

// OpenFunc opens a backend for a parsed DSN.
type OpenFunc func(ctx context.Context, dsn DSN, opts Options) (Backend, error)

// Backends maps dialects to their openers; main builds it.
type Backends struct {
	open map[Dialect]OpenFunc
}

// Add registers a backend; a dialect may be registered once.
func (b *Backends) Add(d Dialect, open OpenFunc) error {
	if b.open == nil {
		b.open = make(map[Dialect]OpenFunc)
	}
	if _, dup := b.open[d]; dup {
		return fmt.Errorf("store: backend %q registered twice", d)
	}
	b.open[d] = open
	return nil
}

// Dialects lists the registered dialects in order.
func (b *Backends) Dialects() []string {
	var out []string
	for d := range b.open {
		out = append(out, string(d))
	}
	sort.Strings(out)
	return out
}

// Open opens d's backend and checks the database answers.
func (b *Backends) Open(ctx context.Context, d DSN, opts Options) (*DB, error) {
	open, ok := b.open[d.Dialect]
	if !ok {
		return nil, &UsageError{Err: fmt.Errorf("--db %s: this build has no %s backend (have %s)", d, d.Dialect, strings.Join(b.Dialects(), ", "))}
	}
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	if opts.Isolation == "" {
		opts.Isolation = ReadCommitted
	}
	if opts.TableLocks && (d.Dialect != MySQL || len(d.Hosts()) > 1) {
		return nil, &UsageError{Err: fmt.Errorf("--lock-granularity table: only a single MariaDB or MySQL server locks tables (LOCK TABLES); --db %s is not one", d)}
	}
	be, err := open(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	version, err := be.ServerVersion(ctx)
	if err != nil {
		be.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, d, err)
	}
	db := &DB{backend: be, dsn: d, version: version, tableLocks: opts.TableLocks}
	db.shared = newSession(be.Shared(), db, &db.stats)
	db.threads = make([]*Session, opts.Threads)
	db.threadStats = make([]counters, opts.Threads)
	for i := range db.threads {
		db.threads[i] = newSession(be.Thread(i), db, &db.threadStats[i])
	}
	return db, nil
}

// UsageError marks a problem with what the user asked for (exit code 2), as
// opposed to a database that misbehaves (exit code 3).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
