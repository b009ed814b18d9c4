package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tierbench/tierbench/internal/store"
)

func TestClassify(t *testing.T) {
	b := &Backend{}
	tests := []struct {
		err  error
		want error
	}{
		{&pgconn.PgError{Code: "40P01"}, store.ErrDeadlock},
		{&pgconn.PgError{Code: "40001"}, store.ErrSerialization},
		{&pgconn.PgError{Code: "55P03"}, store.ErrLockTimeout},
		{&pgconn.PgError{Code: "23505"}, store.ErrUniqueViolation},
		{&pgconn.PgError{Code: "57P01"}, store.ErrConnectionLost},
		{&pgconn.PgError{Code: "53100"}, store.ErrDiskFull},
		{&pgconn.PgError{Code: "23502"}, store.ErrConstraint},
		{&pgconn.PgError{Code: "23503"}, store.ErrConstraint},
		{fmt.Errorf("scan: %w", pgx.ErrNoRows), store.ErrNotFound},
		{io.ErrUnexpectedEOF, store.ErrConnectionLost},
		{sentLost(notSent{}), store.ErrConnectionLost},
		{errNotSent{io.EOF}, store.ErrConnectionLost},
		{errNotSent{&pgconn.PgError{Code: "23505"}}, store.ErrUniqueViolation},
	}
	for _, tt := range tests {
		if got := b.Classify(tt.err); !errors.Is(got, tt.want) {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	syntax := &pgconn.PgError{Code: "42601"}
	if got := b.Classify(syntax); got != error(syntax) {
		t.Errorf("Classify(syntax error) = %v, want it unchanged", got)
	}
}

func TestUnreachableServer(t *testing.T) {
	b := &store.Backends{}
	b.Add(store.Postgres, Open)
	_, err := b.Open(context.Background(), store.MustParseDSN("postgres://root@127.0.0.1:1/test?connect_timeout=2"), store.Options{Threads: 1})
	if !errors.Is(err, store.ErrUnreachable) {
		t.Fatalf("open of a closed port: %v, want ErrUnreachable", err)
	}
}

// notSent is an error pgconn.SafeToRetry recognises: nothing reached the
// server.
type notSent struct{}

func (notSent) Error() string     { return "dial: connection refused" }
func (notSent) SafeToRetry() bool { return true }

func TestInDoubt(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		doubt  bool
		reason string
	}{
		{"nil", nil, false, "no error"},
		{"nothing sent", notSent{}, false, "SafeToRetry: the COMMIT never left"},
		{"prepare step", pgx.ErrPreprocessingBatch{}, false, "the batch failed before its statements were sent"},
		{"statement error", &pgconn.PgError{Severity: "ERROR", Code: "23505"}, false, "the server answered: rolled back"},
		{"serialization at commit", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001"}, false, "the server answered"},
		{"session ended", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true, "the server ended the session: before or after the COMMIT?"},
		{"connection broke", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true, "no answer"},
		{"context ended", context.DeadlineExceeded, true, "stopped waiting for the answer"},
		{"prepare before the commit", errNotSent{io.ErrUnexpectedEOF}, false, "the connection broke before the commit's statements were sent"},
		{"batch sent, connection closed", sentLost(notSent{}), true, "pgconn's closed connection after the batch went out"},
		{"batch sent, context ended", sentLost(fmt.Errorf("read: %w", context.Canceled)), true, "stopped waiting for the answers: left as it is, in doubt"},
	}
	for _, tt := range tests {
		got := inDoubt(tt.err)
		if errors.Is(got, store.ErrInDoubt) != tt.doubt {
			t.Errorf("%s: inDoubt(%v) = %v; in doubt should be %v (%s)", tt.name, tt.err, got, tt.doubt, tt.reason)
		}
		if !tt.doubt && got != tt.err {
			t.Errorf("%s: inDoubt changed %v to %v", tt.name, tt.err, got)
		}
	}
}

// A statement outside a transaction commits in its own: in doubt as a
// COMMIT is, but only for a lost connection or an abandoned wait; an error
// of anything else (an argument pgx could not encode) came before it was
// sent.
func TestStatementInDoubt(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		doubt bool
	}{
		{"nil", nil, false},
		{"nothing sent", notSent{}, false},
		{"prepare failed", errNotSent{io.ErrUnexpectedEOF}, false},
		{"the pool's dial", &pgconn.ConnectError{}, false},
		{"the server answered", &pgconn.PgError{Severity: "ERROR", Code: "23505"}, false},
		{"an argument not encoded", errors.New("unable to encode 1.5 into binary format for int8"), false},
		{"connection broke", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"session ended", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{"context ended", context.DeadlineExceeded, true},
	}
	for _, tt := range tests {
		if got := statementInDoubt(tt.err); errors.Is(got, store.ErrInDoubt) != tt.doubt {
			t.Errorf("%s: statementInDoubt(%v) = %v; in doubt should be %v", tt.name, tt.err, got, tt.doubt)
		}
	}
}

// rowOf is a Scanner that answers err, comparable so that a test can tell
// whether writeRow returned it as it is.
type rowOf struct{ err error }

func (r *rowOf) Scan(...any) error { return r.err }

// A SELECT's row outside a transaction is left as it is (its lost
// connection is a connection lost), even with blanks before it; a
// writing statement's row answers a lost connection in doubt.
func TestWriteRow(t *testing.T) {
	lost := &rowOf{fmt.Errorf("read: %w", io.ErrUnexpectedEOF)}
	for _, q := range []string{"SELECT n FROM t WHERE id = $1", "\n\t SELECT n FROM t"} {
		if got := writeRow(q, lost); got != store.Scanner(lost) {
			t.Errorf("writeRow(%q) wrapped the row of a SELECT", q)
		}
	}
	got := writeRow("INSERT INTO t (n) VALUES ($1) RETURNING id", lost).Scan()
	if !errors.Is(got, store.ErrInDoubt) {
		t.Errorf("an INSERT … RETURNING's row with its connection lost: %v; want ErrInDoubt", got)
	}
}
