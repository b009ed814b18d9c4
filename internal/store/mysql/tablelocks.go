package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/sqldb"
)

// tableLocker is the executor of --lock-granularity table: its
// transactions lock every table of the database, WRITE, in one LOCK
// TABLES statement (so in one order, the server's), before their first
// statement, and hold them to their end, as MariaDB's documentation says a
// transactional table is locked inside a transaction:
//
//	SET autocommit=0; LOCK TABLES t1 WRITE, t2 WRITE, …; …; COMMIT; UNLOCK TABLES; SET autocommit=1
//
// With autocommit off and innodb_table_locks on (the default), InnoDB takes
// its own table lock too, so a transaction waits for another's tables on
// both the server's and the engine's locks. Decision 0040 says why every
// table rather than each transaction's own.
type tableLocker struct {
	sqldb.DB
	tables *tableList
}

var _ store.Executor = tableLocker{}

func (l tableLocker) Begin(context.Context) (store.BackendTx, error) {
	return &lockedTx{l: l}, nil
}

// tableList is the database's base tables, read when a transaction first
// needs them and again after DDL (ExecScript) or a transaction that found
// a table missing from it or gone.
type tableList struct {
	mu   sync.Mutex
	lock string // the LOCK TABLES statement; empty: to be read
}

// notLocked is the table list's own: the store's lock holders, written by
// a connection of their own (store.HolderTable).
const notLocked = "tierbench_lock"

func (t *tableList) statement(ctx context.Context, conn *sql.Conn) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lock != "" {
		return t.lock, nil
	}
	rows, err := conn.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' AND table_name <> ? ORDER BY table_name", notLocked)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return "", err
		}
		names = append(names, "`"+strings.ReplaceAll(n, "`", "``")+"` WRITE")
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(names) == 0 {
		return "", errors.New("--lock-granularity table: the database has no tables to lock")
	}
	t.lock = "LOCK TABLES " + strings.Join(names, ", ")
	return t.lock, nil
}

// forget drops the list: tables were created or dropped.
func (t *tableList) forget() {
	t.mu.Lock()
	t.lock = ""
	t.mu.Unlock()
}

// Server errors that mean the table list is out of date: a statement
// used a table LOCK TABLES did not name, or LOCK TABLES named one that is
// gone.
const (
	errTableNotLocked = 1100
	errNoSuchTable    = 1146
)

func staleList(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == errTableNotLocked || me.Number == errNoSuchTable)
}

// lockedTx is a transaction of tableLocker: a connection of its own,
// locked from Start to Commit or Rollback. database/sql's Tx on it runs
// the statements (prepared once per connection, as elsewhere) and sends
// START TRANSACTION, which LOCK TABLES then commits, empty; with
// autocommit off, the statements after it form the transaction COMMIT
// ends.
type lockedTx struct {
	l    tableLocker
	conn *sql.Conn
	t    *sqldb.Tx
}

var _ store.BackendTx = (*lockedTx)(nil)

func (x *lockedTx) Start(ctx context.Context) error {
	if x.t != nil {
		return nil
	}
	conn, err := x.l.SQL.Conn(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "SET autocommit = 0"); err != nil {
		discard(conn)
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		discard(conn)
		return err
	}
	for attempt := 0; ; attempt++ {
		var lock string
		lock, err = x.l.tables.statement(ctx, conn)
		if err == nil {
			_, err = tx.ExecContext(ctx, lock)
		}
		if err != nil && staleList(err) && attempt == 0 {
			x.l.tables.forget()
			continue
		}
		break
	}
	if err != nil {
		tx.Rollback()
		discard(conn)
		return err
	}
	x.conn, x.t = conn, sqldb.Begun(tx, commitInDoubt)
	return nil
}

func (x *lockedTx) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	if err := x.Start(ctx); err != nil {
		return store.Result{}, err
	}
	r, err := x.t.Exec(ctx, p, args)
	x.check(err)
	return r, err
}

func (x *lockedTx) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	if err := x.Start(ctx); err != nil {
		return store.FailedRow(err)
	}
	return x.t.QueryRow(ctx, p, args)
}

func (x *lockedTx) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	if err := x.Start(ctx); err != nil {
		return nil, err
	}
	r, err := x.t.Query(ctx, p, args)
	x.check(err)
	return r, err
}

// check forgets the table list when a statement used a table it lacks:
// the transaction fails, the next reads the list again.
func (x *lockedTx) check(err error) {
	if err != nil && staleList(err) {
		x.l.tables.forget()
	}
}

// Commit runs the queued statements and COMMIT on the locked connection,
// then unlocks it. A failure of COMMIT may be in doubt, as elsewhere.
func (x *lockedTx) Commit(ctx context.Context, queued []store.Queued) error {
	if x.t == nil && len(queued) == 0 {
		return nil
	}
	if err := x.Start(ctx); err != nil {
		return err
	}
	err := x.t.Commit(ctx, queued)
	x.check(err)
	x.unlock()
	return err
}

func (x *lockedTx) Rollback(ctx context.Context) error {
	if x.t == nil {
		return nil
	}
	err := x.t.Rollback(ctx)
	x.unlock()
	return err
}

// unlock releases the tables and gives the connection back to the pool
// with autocommit on, or drops it when it cannot say it did.
func (x *lockedTx) unlock() {
	ctx := context.Background()
	if _, err := x.conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		discard(x.conn)
		return
	}
	if _, err := x.conn.ExecContext(ctx, "SET autocommit = 1"); err != nil {
		discard(x.conn)
		return
	}
	x.conn.Close()
}

// discard closes conn's connection rather than return it to the pool: a
// connection whose session may still hold table locks or have autocommit
// off must serve nobody else.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// ExecScript runs DDL; the table list is read again after it.
func (b *Backend) ExecScript(ctx context.Context, script string) error {
	if b.tables != nil {
		defer b.tables.forget()
	}
	return b.DB.ExecScript(ctx, script)
}

// Shared and Thread are the pool, locking tables under TableLocks.
func (b *Backend) Shared() store.Executor {
	if b.tables != nil {
		return tableLocker{DB: b.DB, tables: b.tables}
	}
	return b.DB
}

func (b *Backend) Thread(int) store.Executor { return b.Shared() }
