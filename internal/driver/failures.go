package driver

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/tierbench/tierbench/internal/store"
)

// HTTPStatus is an error that carries the HTTP status a tier answered
// with: its failures are counted as "http_404", "http_503", … (statuses
// from 400).
type HTTPStatus interface {
	HTTPStatus() int
}

// storeClasses name the store's error classes in results, most telling
// first: a failed commit in doubt on a full disk is in doubt.
var storeClasses = []struct {
	err  error
	name string
}{
	{store.ErrInDoubt, "in_doubt"},
	{store.ErrDiskFull, "disk_full"},
	{store.ErrConnectionLost, "connection_lost"},
	// A cluster node lost (wraps ErrConnectionLost in process, not once
	// it has crossed a tier boundary).
	{store.ErrNodeLost, "connection_lost"},
	{store.ErrUnreachable, "unreachable"},
	{store.ErrDeadlock, "deadlock"},
	{store.ErrLockTimeout, "lock_timeout"},
	{store.ErrSerialization, "serialization"},
	{store.ErrCertification, "certification"},
	{store.ErrUniqueViolation, "constraint"},
	{store.ErrConstraint, "constraint"},
	{store.ErrStale, "stale"},
	{store.ErrNotFound, "not_found"},
}

// FailureClass names why an operation failed, as results count it: a
// store class, an HTTP status, a timeout, a full disk or a lost
// connection seen below the store, or "other" (the sample says more).
func FailureClass(err error) string {
	for _, c := range storeClasses {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	var hs HTTPStatus
	if errors.As(err, &hs) && hs.HTTPStatus() >= 400 {
		return "http_" + strconv.Itoa(hs.HTTPStatus())
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "disk_full"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection_lost"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "other"
}
