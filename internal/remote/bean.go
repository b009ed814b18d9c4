package remote

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/store"
)

// Threads are a business tier's server threads, lent to calls: each call
// runs on one thread's store session (a workload's Step.Thread), at most
// one call per thread at a time, the others waiting, as calls in one
// process wait for a thread.
type Threads struct{ free chan int }

// NewThreads makes n threads (at least 1), numbered 0 to n-1.
func NewThreads(n int) *Threads {
	t := &Threads{free: make(chan int, max(n, 1))}
	for i := range cap(t.free) {
		t.free <- i
	}
	return t
}

// Take waits for a free thread; a caller gone before one is free gets the
// status of its context's end, as a call's error.
func (t *Threads) Take(ctx context.Context) (int, error) {
	select {
	case n := <-t.free:
		// A thread and the caller's end may come at once: a caller gone
		// is not served.
		if err := ctx.Err(); err != nil {
			t.free <- n
			return 0, status.FromContextError(err).Err()
		}
		return n, nil
	case <-ctx.Done():
		return 0, status.FromContextError(ctx.Err()).Err()
	}
}

// Give returns thread n, taken by Take. Deferred by callers: net/http
// recovers a panicking handler, and the thread must not leave the pool
// with it.
func (t *Threads) Give(n int) { t.free <- n }

// FailureStatus is the status a bean's failure crosses the layer as, its
// message whole, its code what a caller may do about it. Unavailable: the
// database could not be reached and nothing was done, so the call may be
// made again; Aborted: the database chose the call's transaction as a
// victim until its retries ran out; Canceled and DeadlineExceeded: the
// caller's own context ended. Anything else, a commit in doubt included,
// is Internal. Its detail, a google.rpc.ErrorInfo of domain FailureDomain,
// names the store's class (a deadlock, a commit in doubt, …) or
// UNCLASSIFIED, and says that the bean answered: FailureClass reads it.
// Business outcomes are the workload's to encode (a status with a detail
// of its own).
func FailureStatus(err error) error {
	reason := "UNCLASSIFIED"
	for _, c := range failureClasses {
		if errors.Is(err, c.class) {
			reason = c.reason
			break
		}
	}
	st := status.New(failureCode(err), err.Error())
	if with, derr := st.WithDetails(&errdetails.ErrorInfo{Domain: FailureDomain, Reason: reason}); derr == nil {
		st = with
	}
	return st.Err()
}

// FailureDomain is the domain of FailureStatus's ErrorInfo detail.
const FailureDomain = "tierbench.store"

// failureClasses are the store's classes a caller acts on, by their names
// on the wire: an abort it may retry (store.Retryable), a commit it counts
// as in doubt, a database that did nothing; and those its result names.
var failureClasses = []struct {
	class  error
	reason string
}{
	{store.ErrDeadlock, "DEADLOCK"},
	{store.ErrSerialization, "SERIALIZATION"},
	{store.ErrLockTimeout, "LOCK_TIMEOUT"},
	{store.ErrCertification, "CERTIFICATION"},
	{store.ErrNodeLost, "NODE_LOST"},
	{store.ErrInDoubt, "IN_DOUBT"},
	{store.ErrUnreachable, "UNREACHABLE"},
	{store.ErrConnectionLost, "CONNECTION_LOST"},
	// Not acted on, but named in the caller's result (its failures by
	// class) as in process.
	{store.ErrDiskFull, "DISK_FULL"},
	{store.ErrUniqueViolation, "UNIQUE_VIOLATION"},
	{store.ErrConstraint, "CONSTRAINT"},
}

// FailureClass reads the failure of a call: answered, when the bean sent
// it (FailureStatus), and then its store class, nil when it had none. A
// call that failed without an answer (the tier not reached, the reply
// lost, the caller's deadline) may or may not have done its work.
func FailureClass(err error) (class error, answered bool) {
	st, ok := status.FromError(err)
	if !ok {
		return nil, false
	}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != FailureDomain {
			continue
		}
		for _, c := range failureClasses {
			if c.reason == info.GetReason() {
				return c.class, true
			}
		}
		return nil, true
	}
	return nil, false
}

// FailureError is err, the failure of a call, in the store class the bean
// gave it (store.Retryable and errors.Is read it as they would in
// process); err as it is otherwise.
func FailureError(err error) error {
	if class, _ := FailureClass(err); class != nil {
		return classified{class: class, err: err}
	}
	return err
}

// classified is a call's error in the class its bean gave it, its message
// unchanged (the bean's message names the class already).
type classified struct{ class, err error }

func (e classified) Error() string   { return e.err.Error() }
func (e classified) Unwrap() []error { return []error{e.class, e.err} }

func failureCode(err error) codes.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, store.ErrUnreachable), errors.Is(err, store.ErrConnectionLost):
		return codes.Unavailable
	case store.Retryable(err):
		return codes.Aborted
	}
	return codes.Internal
}
