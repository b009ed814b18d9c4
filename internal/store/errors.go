package store

import (
	"errors"
)

// The classes every backend's errors are translated into. Test with errors.Is.
var (
	ErrDeadlock        = errors.New("deadlock")
	ErrSerialization   = errors.New("serialization failure")
	ErrLockTimeout     = errors.New("lock timeout")
	ErrUniqueViolation = errors.New("unique violation")
	ErrNotFound        = errors.New("no rows")
	ErrConnectionLost  = errors.New("connection lost")
	ErrUnreachable     = errors.New("database unreachable")
	// ErrStale: a queued statement expected to change a number of rows
	// changed another (the row was changed or removed meanwhile).
	ErrStale = errors.New("stale row")
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

// Retryable reports whether a transaction that failed with err may succeed
// when run again unchanged: the database chose it as a victim of contention.
func Retryable(err error) bool {
	return errors.Is(err, ErrDeadlock) || errors.Is(err, ErrSerialization) || errors.Is(err, ErrLockTimeout)
}
