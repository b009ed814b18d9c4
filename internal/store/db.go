package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// DB is an open database of a run: the backend's pool plus the counters of
// everything issued through it. It is safe for concurrent use.
type DB struct {
	backend Backend
	dsn     DSN
	version string
	stats   counters
}

// Dialect of the database.
func (db *DB) Dialect() Dialect { return db.dsn.Dialect }

// DSN the database was opened with (password redacted by String).
func (db *DB) DSN() DSN { return db.dsn }

// Version is the database product and its version, e.g. "postgres 15.19"
// or "mariadb 10.11.19".
func (db *DB) Version() string { return db.version }

// Isolation the database's transactions run at.
func (db *DB) Isolation() Isolation { return db.backend.Isolation() }

// Close releases the pool (and removes a temporary SQLite file).
func (db *DB) Close() error { return db.backend.Close() }

// Exec runs a statement that returns no rows, in its own implicit
// transaction.
func (db *DB) Exec(ctx context.Context, s *Stmt, args ...any) (Result, error) {
	db.stats.statements.Add(1)
	r, err := s.p.Exec(ctx, args)
	if err != nil {
		return r, db.classify(err)
	}
	return r, nil
}

// QueryRow runs a single-row query; its error surfaces at Scan, ErrNotFound
// when there is no row.
func (db *DB) QueryRow(ctx context.Context, s *Stmt, args ...any) Row {
	db.stats.statements.Add(1)
	return Row{s: s.p.QueryRow(ctx, args), db: db}
}

// Query runs a multi-row query.
func (db *DB) Query(ctx context.Context, s *Stmt, args ...any) (*Rows, error) {
	db.stats.statements.Add(1)
	r, err := s.p.Query(ctx, args)
	if err != nil {
		return nil, db.classify(err)
	}
	return &Rows{r: r, db: db}, nil
}

// Begin starts a transaction at the run's isolation level.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	t, err := db.backend.Begin(ctx)
	if err != nil {
		return nil, db.classify(err)
	}
	db.stats.transactions.Add(1)
	return &Tx{t: t, db: db}, nil
}

// InTx runs fn in a transaction: committed when fn returns nil, rolled back
// otherwise (fn's error is returned unchanged, so business outcomes pass
// through).
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// ExecScript runs a DDL script (not counted: it is setup, not workload).
func (db *DB) ExecScript(ctx context.Context, script string) error {
	if err := db.backend.ExecScript(ctx, script); err != nil {
		return db.classify(err)
	}
	return nil
}

// BulkInsert loads rows into a table; see Backend.BulkInsert.
func (db *DB) BulkInsert(ctx context.Context, table string, columns []string, src RowSource) (int64, error) {
	n, err := db.backend.BulkInsert(ctx, table, columns, src)
	if err != nil {
		return n, fmt.Errorf("load %s: %w", table, db.classify(err))
	}
	return n, nil
}

// classify translates and counts a backend error.
func (db *DB) classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	err = db.backend.Classify(err)
	var se *Error
	if errors.As(err, &se) {
		switch se.Class {
		case ErrDeadlock:
			db.stats.deadlocks.Add(1)
		case ErrSerialization:
			db.stats.serializationFailures.Add(1)
		case ErrLockTimeout:
			db.stats.lockTimeouts.Add(1)
		case ErrUniqueViolation:
			db.stats.uniqueViolations.Add(1)
		case ErrConnectionLost:
			db.stats.connectionsLost.Add(1)
		}
	}
	return err
}

// Tx is a transaction; not safe for concurrent use.
type Tx struct {
	t    BackendTx
	db   *DB
	done bool
}

func (tx *Tx) Exec(ctx context.Context, s *Stmt, args ...any) (Result, error) {
	tx.db.stats.statements.Add(1)
	r, err := tx.t.Exec(ctx, s.p, args)
	if err != nil {
		return r, tx.db.classify(err)
	}
	return r, nil
}

func (tx *Tx) QueryRow(ctx context.Context, s *Stmt, args ...any) Row {
	tx.db.stats.statements.Add(1)
	return Row{s: tx.t.QueryRow(ctx, s.p, args), db: tx.db}
}

func (tx *Tx) Query(ctx context.Context, s *Stmt, args ...any) (*Rows, error) {
	tx.db.stats.statements.Add(1)
	r, err := tx.t.Query(ctx, s.p, args)
	if err != nil {
		return nil, tx.db.classify(err)
	}
	return &Rows{r: r, db: tx.db}, nil
}

// Commit ends the transaction; a commit that fails counts as a rollback.
func (tx *Tx) Commit(ctx context.Context) error {
	if tx.done {
		return errors.New("store: commit of a finished transaction")
	}
	tx.done = true
	if err := tx.t.Commit(ctx); err != nil {
		tx.db.stats.rollbacks.Add(1)
		return tx.db.classify(err)
	}
	tx.db.stats.commits.Add(1)
	return nil
}

// Rollback ends the transaction; after Commit it does nothing.
func (tx *Tx) Rollback(ctx context.Context) error {
	if tx.done {
		return nil
	}
	tx.done = true
	tx.db.stats.rollbacks.Add(1)
	// A rollback must reach the server even when ctx was cancelled, or the
	// connection goes back to the pool mid-transaction.
	if err := tx.t.Rollback(context.WithoutCancel(ctx)); err != nil {
		return tx.db.classify(err)
	}
	return nil
}

// Row is the result of QueryRow.
type Row struct {
	s  Scanner
	db *DB
}

// Scan copies the row's columns into dest; ErrNotFound when there was none.
func (r Row) Scan(dest ...any) error {
	return r.db.classify(r.s.Scan(dest...))
}

// Rows is the result of Query. Always Close it.
type Rows struct {
	r  BackendRows
	db *DB
}

func (r *Rows) Next() bool             { return r.r.Next() }
func (r *Rows) Scan(dest ...any) error { return r.db.classify(r.r.Scan(dest...)) }
func (r *Rows) Err() error             { return r.db.classify(r.r.Err()) }
func (r *Rows) Close()                 { r.r.Close() }

// Stats are the database counters of a run.
type Stats struct {
	Statements            int64 `json:"statements"`
	Transactions          int64 `json:"transactions"`
	Commits               int64 `json:"commits"`
	Rollbacks             int64 `json:"rollbacks"`
	Deadlocks             int64 `json:"deadlocks"`
	SerializationFailures int64 `json:"serialization_failures"`
	LockTimeouts          int64 `json:"lock_timeouts"`
	UniqueViolations      int64 `json:"unique_violations"`
	ConnectionsLost       int64 `json:"connections_lost"`
}

// Sub gives the counts between an earlier snapshot and s.
func (s Stats) Sub(earlier Stats) Stats {
	return Stats{
		Statements:            s.Statements - earlier.Statements,
		Transactions:          s.Transactions - earlier.Transactions,
		Commits:               s.Commits - earlier.Commits,
		Rollbacks:             s.Rollbacks - earlier.Rollbacks,
		Deadlocks:             s.Deadlocks - earlier.Deadlocks,
		SerializationFailures: s.SerializationFailures - earlier.SerializationFailures,
		LockTimeouts:          s.LockTimeouts - earlier.LockTimeouts,
		UniqueViolations:      s.UniqueViolations - earlier.UniqueViolations,
		ConnectionsLost:       s.ConnectionsLost - earlier.ConnectionsLost,
	}
}

type counters struct {
	statements, transactions, commits, rollbacks   atomic.Int64
	deadlocks, serializationFailures, lockTimeouts atomic.Int64
	uniqueViolations, connectionsLost              atomic.Int64
}

// Stats is a snapshot of the counters since Open.
func (db *DB) Stats() Stats {
	c := &db.stats
	return Stats{
		Statements:            c.statements.Load(),
		Transactions:          c.transactions.Load(),
		Commits:               c.commits.Load(),
		Rollbacks:             c.rollbacks.Load(),
		Deadlocks:             c.deadlocks.Load(),
		SerializationFailures: c.serializationFailures.Load(),
		LockTimeouts:          c.lockTimeouts.Load(),
		UniqueViolations:      c.uniqueViolations.Load(),
		ConnectionsLost:       c.connectionsLost.Load(),
	}
}
