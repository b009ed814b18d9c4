// Package postgres is tierbench's PostgreSQL backend, on pgx v5 and its
// pool. Statements take one of two paths:
//
//   - The shared executor (loading, baselines, checks) runs them through
//     pgx's pool and its per-connection statement cache.
//   - A server thread's executor, its transactions and their pipelined
//     commits run them on the thread's pinned connection through pgconn,
//     pgx's lower layer (fastpath.go): each statement is prepared once per
//     connection, its arguments encoded and its columns decoded by this
//     package's own codec (codec.go) into buffers the thread reuses. That
//     spares pgx's argument planning, row and type-map work (its query
//     path costs about 3 µs of client CPU against 2 µs for pgconn's): CPU
//     that, on a machine shared with the database, the database lacks. A
//     statement whose arguments the codec does not encode runs through pgx
//     instead, and a column it does not decode is decoded by pgx's type
//     map, so the results and errors are pgx's either way.
//
// It depends only on store and pgx.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tierbench/tierbench/internal/store"
)

// Backend is a pgx pool holding one connection per server thread, pinned
// to that thread for the run (as an application server's worker holds its
// JDBC connection), plus one for shared work: loading, baselines, checks.
type Backend struct {
	pool      *pgxpool.Pool
	isolation store.Isolation
	threads   []*thread
	// lock is the connection holding the database's lock (Lock), if
	// taken; it closes last.
	lock *pgx.Conn
}

var _ store.Backend = (*Backend)(nil)

// Open connects threads+1 connections whose transactions default to
// opts.Isolation, and pins one to each server thread.
func Open(ctx context.Context, dsn store.DSN, opts store.Options) (store.Backend, error) {
	cfg, err := pgxpool.ParseConfig(dsn.URL.String())
	if err != nil {
		return nil, &store.UsageError{Err: fmt.Errorf("--db %s: %v", dsn, err)}
	}
	// Connections are opened up front so the first seconds of a run do not
	// measure connection setup.
	cfg.MaxConns = int32(opts.Threads + 1)
	cfg.MinConns = cfg.MaxConns
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	// Setting the session default spares every BEGIN its isolation clause.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = strings.ToLower(opts.Isolation.SQL())
	// A connection the server closed while it sat in the pool (a restart)
	// is discarded and another taken, rather than failing the statement.
	cfg.PrepareConn = func(_ context.Context, c *pgx.Conn) (bool, error) { return usable(c) == nil, nil }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrUnreachable, dsn, err)
	}
	b := &Backend{pool: pool, isolation: opts.Isolation}
	for i := range opts.Threads {
		b.threads = append(b.threads, &thread{pool: pool, f: newFastPath(i)})
	}
	return b, nil
}

func (b *Backend) Dialect() store.Dialect     { return store.Postgres }
func (b *Backend) Isolation() store.Isolation { return b.isolation }

func (b *Backend) Close() error {
	for _, t := range b.threads {
		t.release()
	}
	b.pool.Close()
	if b.lock != nil {
		unlock(b.lock)
	}
	return nil
}

func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := b.pool.QueryRow(ctx, "SHOW server_version").Scan(&v)
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	return "postgres " + v, err
}

// Prepare parses sql once on one connection to surface SQL errors now
// rather than mid-run. The handle is the text itself: it keys pgx's
// per-connection statement cache, so each connection prepares a statement
// on first use and afterwards only binds and executes it.
func (b *Backend) Prepare(ctx context.Context, sql string) (store.Prepared, error) {
	c, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	if _, err := c.Conn().Prepare(ctx, sql, sql); err != nil {
		return nil, err
	}
	return sql, nil
}

func (b *Backend) Shared() store.Executor { return shared{b.pool} }

func (b *Backend) Thread(i int) store.Executor { return b.threads[i] }

// shared runs each statement on whichever pool connection is free.
type shared struct{ pool *pgxpool.Pool }

func (s shared) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	tag, err := s.pool.Exec(ctx, p.(string), args...)
	return store.Result{RowsAffected: tag.RowsAffected()}, statementInDoubt(err)
}

func (s shared) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	return writeRow(p.(string), s.pool.QueryRow(ctx, p.(string), args...))
}

func (s shared) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	return query(s.pool.Query(ctx, p.(string), args...))
}

func (s shared) Begin(ctx context.Context) (store.BackendTx, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return begin(ctx, c.Conn(), c.Release)
}

// thread is a server thread's pinned connection, acquired on first use
// and kept; a connection found dead is given back and replaced.
type thread struct {
	pool *pgxpool.Pool
	c    *pgxpool.Conn
	// f runs the thread's statements through pgconn; without it (a
	// benchmark's baseline) they run through pgx.
	f  *fastPath
	tx tx
}

// conn is the thread's connection, checked before each statement or
// transaction without a round trip (usable): one the server closed
// meanwhile (it was restarted, say), or that a failed rollback left inside
// a transaction, goes back to the pool, which discards it, and the thread
// acquires another, connecting within the pool's connect timeout and ctx.
func (t *thread) conn(ctx context.Context) (*pgx.Conn, error) {
	if t.c != nil && (usable(t.c.Conn()) != nil || t.c.Conn().PgConn().TxStatus() != 'I') {
		t.release()
	}
	if t.c == nil {
		c, err := t.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		t.c = c
	}
	return t.c.Conn(), nil
}

func (t *thread) release() {
	if t.c != nil {
		t.c.Release()
		t.c = nil
	}
}

func (t *thread) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	c, err := t.conn(ctx)
	if err != nil {
		return store.Result{}, err
	}
	if t.f == nil {
		tag, err := c.Exec(ctx, p.(string), args...)
		return store.Result{RowsAffected: tag.RowsAffected()}, statementInDoubt(err)
	}
	r, err := t.f.exec(ctx, c, p.(string), args)
	return r, statementInDoubt(err)
}

func (t *thread) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	c, err := t.conn(ctx)
	if err != nil {
		return store.FailedRow(err)
	}
	if t.f == nil {
		return writeRow(p.(string), c.QueryRow(ctx, p.(string), args...))
	}
	return writeRow(p.(string), t.f.queryRow(ctx, c, p.(string), args))
}

// statementInDoubt classifies the error of a statement outside a
// transaction, which commits in its own implicit transaction: a lost
// connection, or a wait for the answer given up, once the statement may
// have gone out leaves it in doubt, as a COMMIT (inDoubt); one that sent
// nothing, and every other error (the server's answer, an argument pgx
// could not encode), is known.
func statementInDoubt(err error) error {
	var ce *pgconn.ConnectError // the pool's dial for it: nothing sent
	if err == nil || errors.As(err, &ce) || !errors.Is(classify(err), store.ErrConnectionLost) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return inDoubt(err)
}

// writeRow gives the row of a statement outside a transaction that writes
// (an INSERT … RETURNING, for InsertID) its errors through
// statementInDoubt; a SELECT's row is returned as it is, unwrapped, for it
// writes nothing and allocates nothing more.
func writeRow(sql string, row store.Scanner) store.Scanner {
	if store.IsSelect(sql) {
		return row
	}
	return inDoubtRow{row}
}

type inDoubtRow struct{ row store.Scanner }

func (r inDoubtRow) Scan(dest ...any) error { return statementInDoubt(r.row.Scan(dest...)) }

func (t *thread) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	c, err := t.conn(ctx)
	if err != nil {
		return nil, err
	}
	if t.f == nil {
		return query(c.Query(ctx, p.(string), args...))
	}
	return t.f.query(ctx, c, p.(string), args)
}

func (t *thread) Begin(ctx context.Context) (store.BackendTx, error) {
	c, err := t.conn(ctx)
	if err != nil {
		return nil, err
	}
	// One transaction at a time runs on a thread's connection, and the
	// store ends each before it begins the next: the thread's tx is reused.
	t.tx = tx{c: c, done: func() {}, f: t.f}
	return &t.tx, nil
}

func query(r pgx.Rows, err error) (store.BackendRows, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// tx drives BEGIN and COMMIT itself, rather than through pgx.Tx, so that
// it can begin lazily and send queued statements and the COMMIT as one
// pipelined batch.
type tx struct {
	c     *pgx.Conn
	done  func()    // gives a shared connection back to the pool
	f     *fastPath // a server thread's; nil on a shared connection
	began bool
}

func begin(_ context.Context, c *pgx.Conn, done func()) (store.BackendTx, error) {
	return &tx{c: c, done: done}, nil
}

func (t *tx) Start(ctx context.Context) error { return t.start(ctx) }

// start sends BEGIN before the transaction's first statement.
func (t *tx) start(ctx context.Context) error {
	if t.began {
		return nil
	}
	if err := t.exec(ctx, "begin"); err != nil {
		return err
	}
	t.began = true
	return nil
}

// exec runs a transaction's own statement: BEGIN, COMMIT, ROLLBACK.
func (t *tx) exec(ctx context.Context, sql string) error {
	if t.f != nil {
		return t.f.run(ctx, t.c, sql)
	}
	_, err := t.c.Exec(ctx, sql)
	return err
}

func (t *tx) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	if err := t.start(ctx); err != nil {
		return store.Result{}, err
	}
	if t.f != nil {
		return t.f.exec(ctx, t.c, p.(string), args)
	}
	tag, err := t.c.Exec(ctx, p.(string), args...)
	return store.Result{RowsAffected: tag.RowsAffected()}, err
}

func (t *tx) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	if err := t.start(ctx); err != nil {
		return store.FailedRow(err)
	}
	if t.f != nil {
		return t.f.queryRow(ctx, t.c, p.(string), args)
	}
	return t.c.QueryRow(ctx, p.(string), args...)
}

func (t *tx) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	if err := t.start(ctx); err != nil {
		return nil, err
	}
	if t.f != nil {
		return t.f.query(ctx, t.c, p.(string), args)
	}
	return query(t.c.Query(ctx, p.(string), args...))
}

// Commit pipelines what is left in one batch: BEGIN if nothing was sent
// yet, the queued statements, and the COMMIT, unless a queued statement's
// row count must be checked first: then the COMMIT follows the check.
//
// A connection found dead before anything is sent fails the commit with
// ErrConnectionLost: nothing was committed. Once the COMMIT may have gone
// out, a failure that is not the server's answer is ErrInDoubt (inDoubt).
func (t *tx) Commit(ctx context.Context, queued []store.Queued) error {
	defer t.done()
	if !t.began && len(queued) == 0 {
		return nil
	}
	if err := usable(t.c); err != nil {
		return store.Classified(store.ErrConnectionLost, err)
	}
	var err error
	if len(queued) == 0 {
		err = inDoubt(t.exec(ctx, "commit"))
	} else {
		checks := store.HasChecks(queued)
		err = t.batch(ctx, queued, !checks)
		if !checks {
			err = inDoubt(err)
		} else if err == nil {
			err = inDoubt(t.exec(ctx, "commit"))
		}
	}
	if err != nil && !t.c.IsClosed() && t.c.PgConn().TxStatus() != 'I' {
		// A statement failed or a count was wrong: the transaction is
		// still open (or aborted) on the server.
		t.exec(context.WithoutCancel(ctx), "rollback")
	}
	return err
}

// inDoubt classifies the error of a round trip that carried the COMMIT.
// The outcome is known when nothing was sent (pgconn.SafeToRetry), when a
// batch failed while preparing its statements (before any was sent), and
// when the server answered with an error that is not the end of the
// session (the transaction was rolled back: a failed statement, a
// serialization failure at commit). Anything else (the connection broke,
// the server ended the session, ctx ran out while waiting) may have come
// before or after the COMMIT was carried out: ErrInDoubt.
func inDoubt(err error) error {
	if err == nil || pgconn.SafeToRetry(err) {
		return err
	}
	var pre pgx.ErrPreprocessingBatch
	var ns errNotSent
	if errors.As(err, &pre) || errors.As(err, &ns) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch severity(pe) {
		case "FATAL", "PANIC":
		default:
			return err
		}
	}
	var se *store.Error
	if errors.As(err, &se) { // ErrStale from a row count: the server answered
		return err
	}
	return store.Classified(store.ErrInDoubt, err)
}

func severity(pe *pgconn.PgError) string {
	if pe.SeverityUnlocalized != "" {
		return pe.SeverityUnlocalized
	}
	return pe.Severity
}

// batch sends [BEGIN,] the queued statements [, COMMIT] in one round trip
// and checks the queued statements' row counts.
func (t *tx) batch(ctx context.Context, queued []store.Queued, commit bool) error {
	if t.f != nil {
		if sent, err := t.f.batch(ctx, t, queued, commit); sent {
			return err
		}
	}
	b := &pgx.Batch{}
	if !t.began {
		b.Queue("begin")
	}
	for _, q := range queued {
		b.Queue(q.P.(string), q.Args...)
	}
	if commit {
		b.Queue("commit")
	}
	br := t.c.SendBatch(ctx, b)
	err := func() error {
		if !t.began {
			if _, err := br.Exec(); err != nil {
				return err
			}
			t.began = true
		}
		for _, q := range queued {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			if err := q.Check(store.Result{RowsAffected: tag.RowsAffected()}); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func (t *tx) Rollback(ctx context.Context) error {
	defer t.done()
	if !t.began {
		return nil
	}
	return t.exec(ctx, "rollback")
}

// ExecScript sends the script in one simple-protocol round trip, which
// PostgreSQL runs as one implicit transaction.
func (b *Backend) ExecScript(ctx context.Context, script string) error {
	_, err := b.pool.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol)
	return err
}

// BulkInsert streams rows with COPY FROM STDIN.
func (b *Backend) BulkInsert(ctx context.Context, table string, columns []string, src store.RowSource) (int64, error) {
	return b.pool.CopyFrom(ctx, pgx.Identifier{strings.ToLower(table)}, columns, copySource{src})
}

type copySource struct{ src store.RowSource }

func (c copySource) Next() bool             { return c.src.Next() }
func (c copySource) Values() ([]any, error) { return c.src.Values(), nil }
func (c copySource) Err() error             { return nil }

// SQLSTATE codes, from the PostgreSQL manual's appendix A.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeLockNotAvailable     = "55P03"
	codeUniqueViolation      = "23505"
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeDiskFull             = "53100"
	// Class 23, integrity constraint violation, of which 23505 is the
	// unique one.
	classConstraint = "23"
)

func (b *Backend) Classify(err error) error { return classify(err) }

func classify(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Classified(store.ErrNotFound, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeSerializationFailure:
			return store.Classified(store.ErrSerialization, err)
		case codeDeadlockDetected:
			return store.Classified(store.ErrDeadlock, err)
		case codeLockNotAvailable:
			return store.Classified(store.ErrLockTimeout, err)
		case codeUniqueViolation:
			return store.Classified(store.ErrUniqueViolation, err)
		case codeAdminShutdown, codeCrashShutdown:
			return store.Classified(store.ErrConnectionLost, err)
		case codeDiskFull:
			return store.Classified(store.ErrDiskFull, err)
		}
		if strings.HasPrefix(pe.Code, classConstraint) {
			return store.Classified(store.ErrConstraint, err)
		}
		return err
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	var lost errLostAfterSend
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.As(err, &lost) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return store.Classified(store.ErrConnectionLost, err)
	}
	return err
}
