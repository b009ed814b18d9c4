package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/tierbench/tierbench/internal/store"
)

func TestClassify(t *testing.T) {
	b := &Backend{}
	tests := []struct {
		err  error
		want error
	}{
		{&gomysql.MySQLError{Number: 1213}, store.ErrDeadlock},
		{&gomysql.MySQLError{Number: 1205}, store.ErrLockTimeout},
		{&gomysql.MySQLError{Number: 1020}, store.ErrSerialization},
		{&gomysql.MySQLError{Number: 1062}, store.ErrUniqueViolation},
		{&gomysql.MySQLError{Number: 1021}, store.ErrDiskFull},
		{&gomysql.MySQLError{Number: 1114, Message: "The table 'orders' is full"}, store.ErrDiskFull},
		{&gomysql.MySQLError{Number: 1030, Message: "Got error 28 \"No space left on device\" from storage engine InnoDB"}, store.ErrDiskFull},
		{&gomysql.MySQLError{Number: 1048}, store.ErrConstraint},
		{&gomysql.MySQLError{Number: 1452}, store.ErrConstraint},
		{sql.ErrNoRows, store.ErrNotFound},
		{driver.ErrBadConn, store.ErrConnectionLost},
		{gomysql.ErrInvalidConn, store.ErrConnectionLost},
	}
	for _, tt := range tests {
		if got := b.Classify(tt.err); !errors.Is(got, tt.want) {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestDriverConfig(t *testing.T) {
	d, err := store.ParseDSN("mysql://app:s3cret@db.example:3307/shop?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := driverConfig(d, d.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "app" || cfg.Passwd != "s3cret" || cfg.Addr != "db.example:3307" || cfg.DBName != "shop" || !cfg.ClientFoundRows {
		t.Errorf("driverConfig = %+v", cfg)
	}
	d, _ = store.ParseDSN("mysql://root@localhost/test")
	if cfg, _ := driverConfig(d, d.URL.Host); cfg.Addr != "localhost:3306" {
		t.Errorf("default port: Addr = %q, want localhost:3306", cfg.Addr)
	}
}

func TestUnreachableServer(t *testing.T) {
	b := &store.Backends{}
	b.Add(store.MySQL, Open)
	_, err := b.Open(context.Background(), store.MustParseDSN("mysql://root@127.0.0.1:1/test?timeout=2s"), store.Options{Threads: 1})
	if !errors.Is(err, store.ErrUnreachable) {
		t.Fatalf("open of a closed port: %v, want ErrUnreachable", err)
	}
}

func TestCommitInDoubt(t *testing.T) {
	tests := []struct {
		err   error
		doubt bool
	}{
		{driver.ErrBadConn, false},                 // nothing was written
		{sql.ErrTxDone, false},                     // refused by database/sql
		{context.Canceled, false},                  // refused before sending
		{&gomysql.MySQLError{Number: 1213}, false}, // the server answered
		{gomysql.ErrInvalidConn, true},             // broke with COMMIT out
		{io.ErrUnexpectedEOF, true},                // broke with COMMIT out
		{&gomysql.MySQLError{Number: 1053}, true},  // server shutdown
		{&gomysql.MySQLError{Number: 1927}, true},  // connection killed
	}
	for _, tt := range tests {
		if got := commitInDoubt(tt.err); got != tt.doubt {
			t.Errorf("commitInDoubt(%v) = %v, want %v", tt.err, got, tt.doubt)
		}
	}
	// A Galera node leaving the primary component refuses a COMMIT it was
	// replicating with 1047 or 1180; the others may have committed it.
	// A certification failure (1213) is a definite no.
	for _, tt := range []struct {
		err   error
		doubt bool
	}{
		{&gomysql.MySQLError{Number: 1047}, true},
		{&gomysql.MySQLError{Number: 1180}, true},
		{&gomysql.MySQLError{Number: 1213}, false},
		{driver.ErrBadConn, false},
		{io.ErrUnexpectedEOF, true},
	} {
		if got := galeraCommitInDoubt(tt.err); got != tt.doubt {
			t.Errorf("galeraCommitInDoubt(%v) = %v, want %v", tt.err, got, tt.doubt)
		}
	}
}

// A statement outside a transaction commits in its own: in doubt as a
// COMMIT is, but only when the connection or session ended; an argument
// database/sql could not convert was never sent. On Galera, also the
// refusals of a node leaving the primary component.
func TestStatementInDoubt(t *testing.T) {
	for _, tt := range []struct {
		err           error
		doubt, galera bool
	}{
		{driver.ErrBadConn, false, false},
		{errors.New("sql: converting argument $1 type: unsupported type"), false, false},
		{&gomysql.MySQLError{Number: 1062}, false, false},
		{context.Canceled, false, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false, false},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true, true},
		{gomysql.ErrInvalidConn, true, true},
		{io.ErrUnexpectedEOF, false, false}, // not a connection error to classify: the driver reports ErrInvalidConn
		{&gomysql.MySQLError{Number: 1053}, true, true},
		{&gomysql.MySQLError{Number: 1047}, false, true},
		{&gomysql.MySQLError{Number: 1180}, false, true},
	} {
		if got := statementInDoubt(tt.err); got != tt.doubt {
			t.Errorf("statementInDoubt(%v) = %v, want %v", tt.err, got, tt.doubt)
		}
		if got := galeraStatementInDoubt(tt.err); got != tt.galera {
			t.Errorf("galeraStatementInDoubt(%v) = %v, want %v", tt.err, got, tt.galera)
		}
	}
}
