// Package sqldb adapts database/sql to the store seam for the backends whose
// drivers speak database/sql (MySQL, SQLite). Statements are *sql.Stmt,
// prepared once per connection by database/sql and reused.
//
// It depends only on store and the standard library.
package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/tierbench/tierbench/internal/store"
)

// DB is the database/sql half of a backend; the backend adds its dialect's
// version query, isolation and error classes. It is also the backend's
// executor: database/sql hands each statement a free connection of its
// pool, so server threads share the pool rather than pinning connections.
type DB struct {
	SQL *sql.DB
	// CommitInDoubt reports whether an error of COMMIT leaves the
	// transaction's outcome unknown (the connection failed after COMMIT
	// was sent); Commit then returns it as store.ErrInDoubt. Nil: never
	// (an embedded database).
	CommitInDoubt func(error) bool
	// StatementInDoubt is CommitInDoubt for a statement run outside a
	// transaction (Exec), which commits in its own implicit transaction:
	// the connection failed once it was sent, and it may have committed.
	// Exec then returns store.ErrInDoubt. Nil: never.
	StatementInDoubt func(error) bool
}

var _ store.Executor = DB{}

// Stmt is the handle Prepare returns: database/sql prepares it on each
// connection of the pool as it is first used there.
type Stmt struct{ S *sql.Stmt }

func (d DB) Prepare(ctx context.Context, q string) (store.Prepared, error) {
	s, err := d.SQL.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return Stmt{s}, nil
}

func (d DB) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	r, err := p.(Stmt).S.ExecContext(ctx, args...)
	if err != nil && d.StatementInDoubt != nil && d.StatementInDoubt(err) {
		return store.Result{}, store.Classified(store.ErrInDoubt, err)
	}
	return result(r, err)
}

func (d DB) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	return p.(Stmt).S.QueryRowContext(ctx, args...)
}

func (d DB) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	r, err := p.(Stmt).S.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

// Begin returns a transaction that begins at its first statement.
func (d DB) Begin(context.Context) (store.BackendTx, error) {
	return &Tx{db: d.SQL, inDoubt: d.CommitInDoubt}, nil
}

// ExecScript runs the statements of a script one at a time; statements end
// with a semicolon at the end of a line.
func (d DB) ExecScript(ctx context.Context, script string) error {
	for _, q := range SplitScript(script) {
		if _, err := d.SQL.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%w (in %.60q)", err, q)
		}
	}
	return nil
}

// SplitScript cuts a script at semicolons that end a line, dropping blank
// statements and -- comment lines.
func SplitScript(script string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(script, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			q := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			if q != "" {
				out = append(out, q)
			}
			cur.Reset()
		}
	}
	if q := strings.TrimSpace(cur.String()); q != "" {
		out = append(out, q)
	}
	return out
}

// InsertBatches loads rows with multi-row INSERT statements of up to
// rowsPerStatement rows, all in one transaction.
func (d DB) InsertBatches(ctx context.Context, table string, columns []string, src store.RowSource, rowsPerStatement int) (int64, error) {
	t, err := d.SQL.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer t.Rollback()
	full, err := t.PrepareContext(ctx, insertSQL(table, columns, rowsPerStatement))
	if err != nil {
		return 0, err
	}
	defer full.Close()
	var total int64
	args := make([]any, 0, rowsPerStatement*len(columns))
	rows := 0
	flush := func(s *sql.Stmt) error {
		if _, err := s.ExecContext(ctx, args...); err != nil {
			return err
		}
		total += int64(rows)
		args, rows = args[:0], 0
		return nil
	}
	for src.Next() {
		args = append(args, src.Values()...)
		rows++
		if rows == rowsPerStatement {
			if err := flush(full); err != nil {
				return total, err
			}
		}
	}
	if rows > 0 {
		last, err := t.PrepareContext(ctx, insertSQL(table, columns, rows))
		if err != nil {
			return total, err
		}
		defer last.Close()
		if err := flush(last); err != nil {
			return total, err
		}
	}
	return total, t.Commit()
}

// insertSQL builds "INSERT INTO t (a, b) VALUES (?, ?), (?, ?)" from the
// workload's own table and column names, never from user input.
func insertSQL(table string, columns []string, rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(" (")
	b.WriteString(strings.Join(columns, ", "))
	b.WriteString(") VALUES ")
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// Tx is a database/sql transaction, begun at its first statement; its
// statements are the DB's, bound to the transaction's connection.
type Tx struct {
	db      *sql.DB
	T       *sql.Tx // nil until begun
	inDoubt func(error) bool
}

// Begun is a Tx of t, a transaction a backend began itself (on a
// connection it holds, say); inDoubt as DB.CommitInDoubt.
func Begun(t *sql.Tx, inDoubt func(error) bool) *Tx { return &Tx{T: t, inDoubt: inDoubt} }

// Start begins the transaction if it has not begun.
func (t *Tx) Start(ctx context.Context) error {
	if t.T != nil {
		return nil
	}
	tt, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	t.T = tt
	return nil
}

// Began reports whether the transaction reached the database.
func (t *Tx) Began() bool { return t.T != nil }

func (t *Tx) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	if err := t.Start(ctx); err != nil {
		return store.Result{}, err
	}
	r, err := t.T.StmtContext(ctx, p.(Stmt).S).ExecContext(ctx, args...)
	return result(r, err)
}

func (t *Tx) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	if err := t.Start(ctx); err != nil {
		return store.FailedRow(err)
	}
	return t.T.StmtContext(ctx, p.(Stmt).S).QueryRowContext(ctx, args...)
}

func (t *Tx) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	if err := t.Start(ctx); err != nil {
		return nil, err
	}
	r, err := t.T.StmtContext(ctx, p.(Stmt).S).QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

// Commit runs the queued statements one by one, checking the row counts
// they expect (database/sql cannot pipeline), then commits. A failure of
// a queued statement comes before the COMMIT: the transaction is rolled
// back. A failure of the COMMIT itself may be in doubt (DB.CommitInDoubt).
func (t *Tx) Commit(ctx context.Context, queued []store.Queued) error {
	if t.T == nil && len(queued) == 0 {
		return nil
	}
	for _, q := range queued {
		r, err := t.Exec(ctx, q.P, q.Args)
		if err == nil {
			err = q.Check(r)
		}
		if err != nil {
			// The first queued statement begins the transaction: when
			// that failed (its context ended), there is nothing to roll
			// back.
			if t.T != nil {
				t.T.Rollback()
			}
			return err
		}
	}
	err := t.T.Commit()
	if err != nil && t.inDoubt != nil && t.inDoubt(err) {
		return store.Classified(store.ErrInDoubt, err)
	}
	return err
}

func (t *Tx) Rollback(context.Context) error {
	if t.T == nil {
		return nil
	}
	return t.T.Rollback()
}

type rows struct{ r *sql.Rows }

func (r rows) Next() bool             { return r.r.Next() }
func (r rows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r rows) Err() error             { return r.r.Err() }
func (r rows) Close()                 { r.r.Close() }

func result(r sql.Result, err error) (store.Result, error) {
	if err != nil {
		return store.Result{}, err
	}
	var out store.Result
	out.RowsAffected, _ = r.RowsAffected()
	out.LastInsertID, _ = r.LastInsertId()
	return out, nil
}
