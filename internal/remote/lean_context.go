package remote

import (
	"context"
	"sync"
	"time"
)

// beanContext is a lean call's context on the tier: it carries the
// caller's deadline, and arms a timer for it only when the bean asks to be
// told (Done, or a context derived from it). context.WithTimeout arms one
// for every call; a new timer earlier than the network poller's wakes the
// poller (a system call and a thread's wake-up), which was an eighth of
// the tier's CPU on an empty call (docs/tiers.md). A bean that never
// blocks on its context (Ping, a cached read) costs no timer.
type beanContext struct {
	context.Context // Background: values
	deadline        time.Time

	mu     sync.Mutex
	timed  context.Context // armed by Done, nil before
	cancel context.CancelFunc
	ended  error // the call returned: Canceled, or DeadlineExceeded if it passed first, as WithTimeout's cancel leaves it
}

var _ context.Context = (*beanContext)(nil)

func newBeanContext(deadline time.Time) *beanContext {
	return &beanContext{Context: context.Background(), deadline: deadline}
}

func (c *beanContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done arms the deadline's timer on its first call.
func (c *beanContext) Done() <-chan struct{} { return c.arm().Done() }

func (c *beanContext) Err() error {
	c.mu.Lock()
	timed, ended := c.timed, c.ended
	c.mu.Unlock()
	switch {
	case timed != nil:
		return timed.Err()
	case ended != nil:
		return ended
	case !time.Now().Before(c.deadline):
		return context.DeadlineExceeded
	}
	return nil
}

// AfterFunc lets context.AfterFunc and the contexts derived from c
// (WithCancel, WithTimeout) wait on c without a goroutine of their own.
func (c *beanContext) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.arm(), f)
}

func (c *beanContext) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		c.timed, c.cancel = context.WithDeadline(context.Background(), c.deadline)
		if c.ended != nil {
			c.cancel()
		}
	}
	return c.timed
}

// end is the call's end: a timer armed stops, and the context reads
// Canceled from now on (unless its deadline passed first).
func (c *beanContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = context.Canceled
	if !time.Now().Before(c.deadline) {
		c.ended = context.DeadlineExceeded
	}
	if c.cancel != nil {
		c.cancel()
	}
}
