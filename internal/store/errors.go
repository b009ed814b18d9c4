package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// The classes every backend's errors are translated into. Test with errors.Is.
var (
	ErrDeadlock      = errors.New("deadlock")
	ErrSerialization = errors.New("serialization failure")
	ErrLockTimeout   = errors.New("lock timeout")
	// ErrCertification: a multi-master cluster (Galera) aborted the
	// transaction because a write committed on another node conflicted
	// with it, at certification or by the brute-force abort of a
	// replicated write. Retryable, like a deadlock, but its own class: it
	// is the price of writing on several nodes, not of lock contention.
	ErrCertification   = errors.New("certification failure")
	ErrUniqueViolation = errors.New("unique violation")
	ErrNotFound        = errors.New("no rows")
	// ErrConnectionLost: the connection failed before the transaction's
	// COMMIT was sent (or outside a transaction), so nothing of it was
	// committed.
	ErrConnectionLost = errors.New("connection lost")
	// ErrInDoubt: the connection failed after COMMIT was sent (alone, or
	// pipelined behind queued statements), or after a statement outside a
	// transaction was sent (it commits in its own), and before its answer
	// arrived; the transaction may or may not have committed. It is not
	// retryable: running the transaction again could apply it twice.
	ErrInDoubt     = errors.New("commit outcome unknown: the connection was lost after COMMIT (or a statement in its own transaction) was sent")
	ErrUnreachable = errors.New("database unreachable")
	// ErrNodeLost: a node of a cluster was lost before the transaction's
	// COMMIT was sent, so nothing of it committed, and its connection has
	// moved to a surviving node: the transaction may run again there. It
	// wraps the ErrConnectionLost that revealed the loss.
	ErrNodeLost = errors.New("cluster node lost before COMMIT; moved to a surviving node")
	// ErrStale: a queued statement expected to change a number of rows
	// changed another (the row was changed or removed meanwhile).
	ErrStale = errors.New("stale row")
	// ErrDiskFull: the database could not write for want of space (SQLite
	// SQLITE_FULL, PostgreSQL 53100, MariaDB 1021/1114, ENOSPC).
	ErrDiskFull = errors.New("disk full")
	// ErrConstraint: a constraint other than a unique key refused the
	// statement (not null, foreign key, check).
	ErrConstraint = errors.New("constraint violation")
)

// Error is a database error translated into one of the classes above; the
// driver's own error stays reachable through Unwrap for messages.
type Error struct {
	Class error
	Err   error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Class.Error()
	}
	return e.Class.Error() + ": " + e.Err.Error()
}

func (e *Error) Is(target error) bool { return target == e.Class }
func (e *Error) Unwrap() error        { return e.Err }

// Classified wraps err in class.
func Classified(class, err error) error { return &Error{Class: class, Err: err} }

// Backoff is the pause before retry n (from 1) of a retryable failure:
// uniform jitter under an exponentially growing cap (0.1 ms, 0.2 ms, … up
// to 10 ms), so that victims of the same deadlock do not collide again in
// lockstep. rng is the caller's stream (nil: the global one).
func Backoff(rng *rand.Rand, n int) time.Duration {
	limit := int64(min(100*time.Microsecond<<min(n-1, 10), 10*time.Millisecond))
	if rng == nil {
		return time.Duration(rand.Int64N(limit))
	}
	return time.Duration(rng.Int64N(limit))
}

// Retry runs fn until it succeeds, fails in a way that is not Retryable,
// or has run attempts times, pausing Backoff between runs; a done ctx ends
// the pauses. For callers without a driver terminal to retry for them (a
// workload's agents, a web tier's handlers); it returns fn's last error.
func Retry(ctx context.Context, attempts int, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !Retryable(err) || attempt >= attempts {
			return err
		}
		// A done context ends the pauses before the timer is armed: with a
		// short backoff both channels may be ready and select picks either.
		if ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(Backoff(nil, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// Retryable reports whether a transaction that failed with err may succeed
// when run again unchanged: the database chose it as a victim of contention
// (or of a conflict with another node), or the cluster node it ran on was
// lost before its COMMIT and its connection moved to a survivor. A lost
// connection is not retryable otherwise, and a commit in doubt
// (ErrInDoubt) never is.
func Retryable(err error) bool {
	return errors.Is(err, ErrDeadlock) || errors.Is(err, ErrSerialization) || errors.Is(err, ErrLockTimeout) ||
		errors.Is(err, ErrCertification) || errors.Is(err, ErrNodeLost)
}
