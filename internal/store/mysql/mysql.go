// Package mysql is tierbench's MySQL and MariaDB backend, on
// go-sql-driver/mysql through database/sql. Statements are server-side
// prepared once per connection; the run's isolation level is set on every
// new connection.
//
// It depends only on store, store/sqldb and the driver.
package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/sqldb"
)

// Backend is a database/sql pool on the MySQL driver.
type Backend struct {
	sqldb.DB
	isolation store.Isolation
	connector driver.Connector
	// lockConn holds the database's lock (Lock), if taken, on a pool of
	// its own, lockDB; they close last.
	lockConn *sql.Conn
	lockDB   *sql.DB
	// tables, under Options.TableLocks, is what every transaction locks
	// (tablelocks.go); nil otherwise.
	tables *tableList
}

var _ store.Backend = (*Backend)(nil)

// rowsPerInsert keeps a bulk INSERT well under max_allowed_packet and the
// 65,535-placeholder limit of a prepared statement.
const rowsPerInsert = 500

// Open builds the pool; the first query connects.
func Open(ctx context.Context, dsn store.DSN, opts store.Options) (store.Backend, error) {
	if len(dsn.Hosts()) > 1 {
		return openCluster(ctx, dsn, opts)
	}
	cfg, err := driverConfig(dsn, dsn.URL.Host)
	if err != nil {
		return nil, &store.UsageError{Err: fmt.Errorf("--db %s: %v", dsn, err)}
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, &store.UsageError{Err: fmt.Errorf("--db %s: %v", dsn, err)}
	}
	connector := isolatingConnector{Connector: conn, set: []string{"SET SESSION TRANSACTION ISOLATION LEVEL " + opts.Isolation.SQL()}}
	db := sql.OpenDB(connector)
	// One connection per server thread, and one for shared work (loading,
	// checks, statements prepared mid-run) that a busy thread cannot block.
	db.SetMaxOpenConns(opts.Threads + 1)
	db.SetMaxIdleConns(opts.Threads + 1)
	b := &Backend{DB: sqldb.DB{SQL: db, CommitInDoubt: commitInDoubt, StatementInDoubt: statementInDoubt}, isolation: opts.Isolation, connector: connector}
	if opts.TableLocks {
		b.tables = &tableList{}
	}
	return b, nil
}

// commitInDoubt reports whether an error of COMMIT leaves its outcome
// unknown. It is known when the driver sent nothing (driver.ErrBadConn, by
// the database/sql contract), when database/sql refused before sending
// (the transaction's context had ended, or it was already done), and when
// the server answered with an error other than the end of the session.
// Anything else (the connection broke while the COMMIT was out, the server
// shut down or killed the session) is in doubt.
func commitInDoubt(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrTxDone) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == errServerShutdown || me.Number == errConnKilled
	}
	return true
}

// statementInDoubt reports whether an error of a statement outside a
// transaction (an INSERT in its own implicit transaction, say) leaves its
// outcome unknown: as a COMMIT's, but only for the end of the connection
// or session: an error raised before sending (an argument database/sql
// could not convert, the dial of a new connection for it) is known to
// have changed nothing.
func statementInDoubt(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return false
	}
	return commitInDoubt(err) && errors.Is(classify(err), store.ErrConnectionLost)
}

// driverConfig translates mysql://user:pass@host:port/db?params into the
// driver's own DSN form for host, one of the DSN's hosts; query
// parameters pass through to the driver.
func driverConfig(dsn store.DSN, host string) (*gomysql.Config, error) {
	u := dsn.URL
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "3306")
	}
	var auth string
	if u.User != nil {
		auth = u.User.Username()
		if p, ok := u.User.Password(); ok {
			auth += ":" + p
		}
		auth += "@"
	}
	s := fmt.Sprintf("%stcp(%s)/%s", auth, host, strings.Trim(u.Path, "/"))
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	cfg, err := gomysql.ParseDSN(s)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.ParseTime = true
	// RowsAffected must mean rows matched, as in PostgreSQL and SQLite, not
	// rows whose value changed: an UPDATE that writes the same value still
	// found its row.
	cfg.ClientFoundRows = true
	return cfg, nil
}

// isolatingConnector sets the session's isolation level (and, on a
// cluster, other session variables) on each new connection: portable
// across MySQL and MariaDB, unlike the system variable's name
// (tx_isolation vs transaction_isolation).
type isolatingConnector struct {
	driver.Connector
	set []string
}

func (c isolatingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range c.set {
		if _, err := conn.(driver.ExecerContext).ExecContext(ctx, q, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (b *Backend) Dialect() store.Dialect     { return store.MySQL }
func (b *Backend) Isolation() store.Isolation { return b.isolation }

func (b *Backend) Close() error {
	err := b.SQL.Close()
	if b.lockConn != nil {
		unlock(b.lockConn, b.lockDB)
	}
	return err
}

// ServerVersion tells MariaDB from MySQL: "mariadb 10.11.19", "mysql 8.0.36".
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	return serverVersion(ctx, b.SQL)
}

func serverVersion(ctx context.Context, db *sql.DB) (string, error) {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return "", err
	}
	product := "mysql"
	if strings.Contains(strings.ToLower(v), "mariadb") {
		product = "mariadb"
	}
	if i := strings.IndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	return product + " " + v, nil
}

func (b *Backend) BulkInsert(ctx context.Context, table string, columns []string, src store.RowSource) (int64, error) {
	return b.InsertBatches(ctx, table, columns, src, rowsPerInsert)
}

// Server error numbers, from the MySQL and MariaDB error references.
const (
	errLockWaitTimeout = 1205
	errLockDeadlock    = 1213
	errDupEntry        = 1062
	// MariaDB's "Record has changed since last read" under
	// innodb_snapshot_isolation: a write-write conflict at REPEATABLE READ.
	errRecordChanged  = 1020
	errLockNowait     = 3572
	errServerShutdown = 1053
	errConnKilled     = 1927
	// ER_DISK_FULL, ER_RECORD_FILE_FULL ("The table is full"), and
	// ER_GET_ERRNO carrying ENOSPC (28) from the storage engine.
	errDiskFull       = 1021
	errRecordFileFull = 1114
	errGetErrno       = 1030
	// Constraints other than unique keys: a null in a NOT NULL column,
	// foreign keys (parent, child), CHECK (MySQL's, MariaDB's).
	errBadNull         = 1048
	errRowIsReferenced = 1451
	errNoReferencedRow = 1452
	errCheckMySQL      = 3819
	errCheckMariaDB    = 4025
)

func (b *Backend) Classify(err error) error { return classify(err) }

func classify(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.Classified(store.ErrNotFound, err)
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case errLockDeadlock:
			return store.Classified(store.ErrDeadlock, err)
		case errLockWaitTimeout, errLockNowait:
			return store.Classified(store.ErrLockTimeout, err)
		case errRecordChanged:
			return store.Classified(store.ErrSerialization, err)
		case errDupEntry:
			return store.Classified(store.ErrUniqueViolation, err)
		case errServerShutdown, errConnKilled:
			return store.Classified(store.ErrConnectionLost, err)
		case errDiskFull, errRecordFileFull:
			return store.Classified(store.ErrDiskFull, err)
		case errGetErrno:
			if strings.Contains(me.Message, "error 28 ") || strings.HasSuffix(me.Message, "error 28") {
				return store.Classified(store.ErrDiskFull, err)
			}
		case errBadNull, errRowIsReferenced, errNoReferencedRow, errCheckMySQL, errCheckMariaDB:
			return store.Classified(store.ErrConstraint, err)
		}
		return err
	}
	var ne net.Error
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) || errors.As(err, &ne) {
		return store.Classified(store.ErrConnectionLost, err)
	}
	return err
}
