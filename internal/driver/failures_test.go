package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"github.com/tierbench/tierbench/internal/jsonhttp"
	"github.com/tierbench/tierbench/internal/store"
)

type status int

func (s status) Error() string   { return fmt.Sprintf("HTTP %d", int(s)) }
func (s status) HTTPStatus() int { return int(s) }

func TestFailureClass(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{store.Classified(store.ErrDiskFull, errors.New("database or disk is full (13)")), "disk_full"},
		{fmt.Errorf("write: %w", &os.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}), "disk_full"},
		{store.Classified(store.ErrConnectionLost, io.EOF), "connection_lost"},
		{store.Classified(store.ErrInDoubt, store.ErrConnectionLost), "in_doubt"},
		{store.Classified(store.ErrUniqueViolation, nil), "constraint"},
		{store.Classified(store.ErrConstraint, nil), "constraint"},
		{store.Classified(store.ErrDeadlock, nil), "deadlock"},
		{store.Classified(store.ErrLockTimeout, nil), "lock_timeout"},
		{fmt.Errorf("page: %w", status(404)), "http_404"},
		{status(200), "other"},
		{context.DeadlineExceeded, "timeout"},
		{errors.New("something else"), "other"},
	}
	for _, tt := range tests {
		if got := FailureClass(tt.err); got != tt.want {
			t.Errorf("FailureClass(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// Real HTTP and socket failures, as a tier's client sees them.
func TestFailureClassOfHTTPAndSockets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	}))
	_, err := jsonhttp.Call(context.Background(), srv.Client(), http.MethodGet, srv.URL+"/nowhere", nil, nil)
	if got := FailureClass(err); got != "http_404" {
		t.Errorf("a 404 from jsonhttp: %q (%v), want http_404", got, err)
	}
	srv.Close()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = http.Get("http://" + addr + "/")
	if got := FailureClass(err); got != "connection_refused" {
		t.Errorf("a closed port: %q (%v), want connection_refused", got, err)
	}
}
