// Package postgres is tierbench's PostgreSQL backend, on pgx v5 and its
// pool. Statements run through pgx's per-connection statement cache, so each
// is prepared once per connection and then executed by name.
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

// Backend is a pgx pool.
type Backend struct {
	pool      *pgxpool.Pool
	isolation store.Isolation
}

var _ store.Backend = (*Backend)(nil)

// Open connects a pool of at most opts.MaxConns connections whose
// transactions default to opts.Isolation.
func Open(ctx context.Context, dsn store.DSN, opts store.Options) (store.Backend, error) {
	cfg, err := pgxpool.ParseConfig(dsn.URL.String())
	if err != nil {
		return nil, &store.UsageError{Err: fmt.Errorf("--db %s: %v", dsn, err)}
	}
	cfg.MaxConns = int32(opts.MaxConns)
	// Connections are opened up front so the first seconds of a run do not
	// measure connection setup.
	cfg.MinConns = int32(opts.MaxConns)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	// Setting the session default spares every BEGIN its isolation clause.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = strings.ToLower(opts.Isolation.SQL())
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrUnreachable, dsn, err)
	}
	return &Backend{pool: pool, isolation: opts.Isolation}, nil
}

func (b *Backend) Dialect() store.Dialect     { return store.Postgres }
func (b *Backend) Isolation() store.Isolation { return b.isolation }
func (b *Backend) Close() error               { b.pool.Close(); return nil }

func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := b.pool.QueryRow(ctx, "SHOW server_version").Scan(&v)
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	return "postgres " + v, err
}

// stmt is pgx's unit of preparation: the SQL text, which keys the
// per-connection statement cache.
type stmt struct {
	pool *pgxpool.Pool
	sql  string
}

func (b *Backend) Prepare(ctx context.Context, sql string) (store.Prepared, error) {
	// Prepare once on one connection to surface SQL errors now rather than
	// mid-run; every other connection prepares on first use.
	c, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	if _, err := c.Conn().Prepare(ctx, sql, sql); err != nil {
		return nil, err
	}
	return &stmt{pool: b.pool, sql: sql}, nil
}

func (s *stmt) Exec(ctx context.Context, args []any) (store.Result, error) {
	tag, err := s.pool.Exec(ctx, s.sql, args...)
	return store.Result{RowsAffected: tag.RowsAffected()}, err
}

func (s *stmt) QueryRow(ctx context.Context, args []any) store.Scanner {
	return s.pool.QueryRow(ctx, s.sql, args...)
}

func (s *stmt) Query(ctx context.Context, args []any) (store.BackendRows, error) {
	r, err := s.pool.Query(ctx, s.sql, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type tx struct{ t pgx.Tx }

func (b *Backend) Begin(ctx context.Context) (store.BackendTx, error) {
	t, err := b.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return tx{t}, nil
}

func (t tx) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	tag, err := t.t.Exec(ctx, p.(*stmt).sql, args...)
	return store.Result{RowsAffected: tag.RowsAffected()}, err
}

func (t tx) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	return t.t.QueryRow(ctx, p.(*stmt).sql, args...)
}

func (t tx) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	r, err := t.t.Query(ctx, p.(*stmt).sql, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (t tx) Commit(ctx context.Context) error   { return t.t.Commit(ctx) }
func (t tx) Rollback(ctx context.Context) error { return t.t.Rollback(ctx) }

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
)

func (b *Backend) Classify(err error) error {
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
		}
		return err
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return store.Classified(store.ErrConnectionLost, err)
	}
	return err
}
