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
	Prepare(ctx context.Context, sql string) (Prepared, error)
	Begin(ctx context.Context) (BackendTx, error)
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

// Prepared is a statement prepared by a backend, used outside transactions.
type Prepared interface {
	Exec(ctx context.Context, args []any) (Result, error)
	QueryRow(ctx context.Context, args []any) Scanner
	Query(ctx context.Context, args []any) (BackendRows, error)
}

// BackendTx is a backend's transaction; statements are the backend's own
// Prepared values.
type BackendTx interface {
	Exec(ctx context.Context, p Prepared, args []any) (Result, error)
	QueryRow(ctx context.Context, p Prepared, args []any) Scanner
	Query(ctx context.Context, p Prepared, args []any) (BackendRows, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

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

// Options shape the connection pool of a run.
type Options struct {
	// MaxConns bounds the pool; the run's server threads set it.
	MaxConns  int
	Isolation Isolation
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

// Open parses dsn, opens its backend and checks the database answers.
func (b *Backends) Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	open, ok := b.open[d.Dialect]
	if !ok {
		return nil, &UsageError{Err: fmt.Errorf("--db %s: this build has no %s backend (have %s)", d, d.Dialect, strings.Join(b.Dialects(), ", "))}
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 1
	}
	if opts.Isolation == "" {
		opts.Isolation = ReadCommitted
	}
	be, err := open(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	version, err := be.ServerVersion(ctx)
	if err != nil {
		be.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, d, be.Classify(err))
	}
	return &DB{backend: be, dsn: d, version: version}, nil
}

// UsageError marks a problem with what the user asked for (exit code 2), as
// opposed to a database that misbehaves (exit code 3).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
