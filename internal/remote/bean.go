package remote

import (
	"context"
	"errors"

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
// is Internal. Business outcomes are the workload's to encode (a status
// with a detail).
func FailureStatus(err error) error {
	return status.Error(failureCode(err), err.Error())
}

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
