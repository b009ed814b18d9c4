package store

import (
	"context"
	"errors"
	"fmt"
)

// DB is an open database of a run: the backend's connections plus the
// counters of everything issued through them. It is safe for concurrent
// use; its Sessions are not.
type DB struct {
	backend Backend
	dsn     DSN
	version string
	stats   counters
	shared  *Session
	threads []*Session
	// threadStats are the thread sessions' counters (see statements.c).
	threadStats []counters
	// replicas are the read replicas of a primary (AttachReplicas);
	// replicaOf, on a replica's own DB, is the replica it is.
	replicas  *replicaSet
	replicaOf *replica
	// tableLocks: every transaction locks the database's tables
	// (Options.TableLocks).
	tableLocks bool
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

// Close releases the connections (and removes a temporary SQLite file),
// the replicas' too.
func (db *DB) Close() error {
	if db.replicas != nil {
		db.replicas.close()
	}
	return db.backend.Close()
}

// Thread is server thread i's session: statements of the transactions that
// thread runs go through it (on PostgreSQL, over the thread's own
// connection). Out of range, it is the shared session.
func (db *DB) Thread(i int) *Session {
	if i < 0 || i >= len(db.threads) {
		return db.shared
	}
	return db.threads[i]
}

// SingleWriter reports whether the database runs one writing transaction
// at a time (SQLite): a caller that takes its own locks inside
// transactions should then Start them first, so that the database's writer
// lock always comes before its own and the two cannot deadlock.
func (db *DB) SingleWriter() bool { return db.dsn.Dialect == SQLite }

// TableLocks reports whether every transaction locks all of the
// database's tables at its start (Options.TableLocks): as with
// SingleWriter, a caller that takes its own locks should Start a writing
// transaction first.
func (db *DB) TableLocks() bool { return db.tableLocks }

// LockGranularity is what the database's transactions lock.
func (db *DB) LockGranularity() LockGranularity {
	if db.tableLocks {
		return TableLocks
	}
	return EngineLocks
}

// Threads is the number of thread sessions.
func (db *DB) Threads() int { return len(db.threads) }

// Exec, QueryRow, Query, Begin and InTx on the DB use the shared session:
// for loading, baselines and checks, not for a server thread's work.
func (db *DB) Exec(ctx context.Context, s *Stmt, args ...any) (Result, error) {
	return db.shared.Exec(ctx, s, args...)
}

func (db *DB) QueryRow(ctx context.Context, s *Stmt, args ...any) Row {
	return db.shared.QueryRow(ctx, s, args...)
}

func (db *DB) Query(ctx context.Context, s *Stmt, args ...any) (*Rows, error) {
	return db.shared.Query(ctx, s, args...)
}

func (db *DB) Begin(ctx context.Context) (*Tx, error) { return db.shared.Begin(ctx) }

func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error { return db.shared.InTx(ctx, fn) }

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

// classify translates and counts a backend error. A backend that knows
// the class itself (ErrInDoubt, ErrStale) returns an *Error already, which
// is counted as it is, even when its cause is a cancelled context.
func (db *DB) classify(err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if !errors.As(err, &se) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		err = db.backend.Classify(err)
	}
	if errors.As(err, &se) {
		switch se.Class {
		case ErrDeadlock:
			db.stats.deadlocks.Add(1)
		case ErrSerialization:
			db.stats.serializationFailures.Add(1)
		case ErrCertification:
			db.stats.certificationFailures.Add(1)
		case ErrLockTimeout:
			db.stats.lockTimeouts.Add(1)
		case ErrUniqueViolation:
			db.stats.uniqueViolations.Add(1)
		case ErrConnectionLost:
			db.stats.connectionsLost.Add(1)
		case ErrInDoubt:
			db.stats.inDoubt.Add(1)
		}
		if db.replicaOf != nil && (se.Class == ErrConnectionLost || se.Class == ErrInDoubt) {
			return db.replicaOf.lose(err)
		}
	}
	return err
}

// statements runs prepared statements through a backend querier, counting
// them and classifying their errors; sessions and transactions embed it.
type statements struct {
	q  Querier
	db *DB
	// c counts the statements and transactions: a server thread's session
	// has its own, so that threads do not contend for one cache line on
	// every statement; DB.Stats sums them.
	c *counters
	// began, in a transaction, records that its first statement went out
	// (transactions are counted when they reach the database).
	began *bool
}

func (s statements) count() {
	s.c.statements.Add(1)
	if s.began != nil && !*s.began {
		*s.began = true
		s.c.transactions.Add(1)
	}
}

// Exec runs a statement that returns no rows.
func (s statements) Exec(ctx context.Context, st *Stmt, args ...any) (Result, error) {
	s.count()
	r, err := s.q.Exec(ctx, st.p, args)
	if err == nil && s.began == nil && s.db.replicas != nil {
		// A statement in its own transaction, committed: a write.
		s.db.wrote(ctx, s.q)
	}
	return r, s.db.classify(err)
}

// QueryRow runs a single-row query; its error surfaces at Scan, ErrNotFound
// when there is no row.
func (s statements) QueryRow(ctx context.Context, st *Stmt, args ...any) Row {
	s.count()
	return Row{s: s.q.QueryRow(ctx, st.p, args), db: s.db}
}

// Query runs a multi-row query.
func (s statements) Query(ctx context.Context, st *Stmt, args ...any) (*Rows, error) {
	s.count()
	r, err := s.q.Query(ctx, st.p, args)
	if err != nil {
		return nil, s.db.classify(err)
	}
	return &Rows{r: r, db: s.db}, nil
}

// QueryInto is Query into rows, a closed Rows (or a zero one) that the
// caller owns and reuses, so that a query allocates no Rows.
func (s statements) QueryInto(ctx context.Context, rows *Rows, st *Stmt, args ...any) error {
	s.count()
	r, err := s.q.Query(ctx, st.p, args)
	if err != nil {
		return s.db.classify(err)
	}
	*rows = Rows{r: r, db: s.db}
	return nil
}

// RowQuerier is what Collect reads from: a session or a transaction.
type RowQuerier interface {
	Query(ctx context.Context, s *Stmt, args ...any) (*Rows, error)
}

// Collect runs a multi-row query and returns its rows, each scanned into
// the destinations dest gives for a new element.
func Collect[T any](ctx context.Context, q RowQuerier, s *Stmt, dest func(*T) []any, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, s, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name(), err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(dest(&v)...); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name(), err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name(), err)
	}
	return out, nil
}

// Session runs statements through one executor: the shared pool, or a
// server thread's connection. Outside a transaction each statement is its
// own implicit transaction. A thread's session is used by that thread
// alone.
type Session struct {
	statements
	x Executor
}

func newSession(x Executor, db *DB, c *counters) *Session {
	return &Session{statements: statements{q: x, db: db, c: c}, x: x}
}

// Begin starts a transaction at the run's isolation level. Nothing goes to
// the database until its first statement: a transaction that ends up
// issuing none costs no round trip, and one that only queues writes sends
// BEGIN, the writes and COMMIT together.
func (s *Session) Begin(ctx context.Context) (*Tx, error) {
	tx := &Tx{}
	if err := s.begin(ctx, tx); err != nil {
		return nil, err
	}
	return tx, nil
}

// BeginReusing is Begin into tx, a finished transaction (or a zero Tx)
// that the caller owns and reuses, as a server thread does, so that
// beginning allocates nothing of the store's. The caller must hold no
// other reference to tx's previous transaction.
func (s *Session) BeginReusing(ctx context.Context, tx *Tx) error {
	if tx.t != nil && !tx.done {
		return errors.New("store: a transaction was begun again before it finished")
	}
	return s.begin(ctx, tx)
}

func (s *Session) begin(ctx context.Context, tx *Tx) error {
	t, err := s.x.Begin(ctx)
	if err != nil {
		return s.db.classify(err)
	}
	clear(tx.queued)
	*tx = Tx{t: t, queued: tx.queued[:0], x: s.x}
	tx.statements = statements{q: t, db: s.db, c: s.c, began: &tx.began}
	return nil
}

// InTx runs fn in a transaction: committed when fn returns nil, rolled back
// otherwise (fn's error is returned unchanged, so business outcomes pass
// through).
func (s *Session) InTx(ctx context.Context, fn func(*Tx) error) error {
	tx, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// Tx is a transaction; not safe for concurrent use.
type Tx struct {
	statements
	t BackendTx
	// x is the executor the transaction began on, which reads the WAL
	// position after it commits (when the primary has replicas).
	x      Executor
	done   bool
	began  bool
	queued []Queued
}

// Queue defers a statement whose result the transaction does not need to
// the commit, which sends the queued statements and the COMMIT together in
// one round trip where the backend can (PostgreSQL); elsewhere they run in
// order just before the COMMIT. An error of a queued statement is returned
// by Commit, and the transaction is then rolled back.
func (tx *Tx) Queue(s *Stmt, args ...any) {
	tx.queued = append(tx.queued, Queued{P: s.p, Args: args})
}

// QueueExpect queues a statement that must change exactly rows rows, or the
// transaction rolls back and Commit returns ErrStale (an optimistic version
// check). On PostgreSQL the COMMIT then waits for the counts: one round trip
// more than Queue.
func (tx *Tx) QueueExpect(s *Stmt, rows int64, args ...any) {
	tx.queued = append(tx.queued, Queued{P: s.p, Args: args, CheckRows: true, Rows: rows})
}

// Start begins the transaction on the database now (see DB.SingleWriter).
func (tx *Tx) Start(ctx context.Context) error {
	if err := tx.t.Start(ctx); err != nil {
		return tx.db.classify(err)
	}
	if !tx.began {
		tx.began = true
		tx.c.transactions.Add(1)
	}
	return nil
}

// Queued is the number of statements waiting for the commit.
func (tx *Tx) Queued() int { return len(tx.queued) }

// Commit ends the transaction; a commit that fails counts as a rollback,
// except one in doubt (ErrInDoubt: the connection was lost after COMMIT
// went out), which counts as neither commit nor rollback.
func (tx *Tx) Commit(ctx context.Context) error {
	if tx.done {
		return errors.New("store: commit of a finished transaction")
	}
	tx.done = true
	if !tx.began && len(tx.queued) == 0 {
		return tx.t.Commit(ctx, nil) // nothing reached the database
	}
	if !tx.began {
		tx.began = true
		tx.c.transactions.Add(1)
	}
	tx.c.statements.Add(int64(len(tx.queued)))
	if err := tx.t.Commit(ctx, tx.queued); err != nil {
		err = tx.db.classify(err)
		if !errors.Is(err, ErrInDoubt) {
			tx.c.rollbacks.Add(1)
		}
		return err
	}
	tx.c.commits.Add(1)
	if tx.db.replicas != nil {
		tx.db.wrote(ctx, tx.x)
	}
	return nil
}

// Rollback ends the transaction; after Commit it does nothing.
func (tx *Tx) Rollback(ctx context.Context) error {
	if tx.done {
		return nil
	}
	tx.done = true
	if !tx.began {
		return tx.t.Rollback(ctx) // nothing to undo on the database
	}
	tx.c.rollbacks.Add(1)
	// A rollback must reach the server even when ctx was cancelled, or the
	// connection goes back to the pool mid-transaction.
	return tx.db.classify(tx.t.Rollback(context.WithoutCancel(ctx)))
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
