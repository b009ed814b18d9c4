package messaging

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerConfig configures a durable consumer. Zero fields take the
// documented defaults.
type ConsumerConfig struct {
	// Durable names the consumer; its position and unacknowledged
	// messages survive consumer and server restarts. Required.
	Durable string
	// RetryDelay is how long a message whose handler failed waits before
	// redelivery; it doubles with each failed delivery up to MaxRetryDelay.
	// Default 100ms.
	RetryDelay time.Duration
	// MaxRetryDelay caps RetryDelay's growth. Default 5s.
	MaxRetryDelay time.Duration
	// AckWait is how long a delivered message may go unacknowledged before
	// the server redelivers it: what a handler that crashed or hung costs.
	// Default 30s.
	AckWait time.Duration
	// Prefetch is how many messages the client pulls ahead of its handler.
	// Default 64.
	Prefetch int
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	c.RetryDelay = cmp.Or(c.RetryDelay, 100*time.Millisecond)
	c.MaxRetryDelay = cmp.Or(c.MaxRetryDelay, 5*time.Second)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.Prefetch = cmp.Or(c.Prefetch, 64)
	return c
}

// Validate reports every problem of c.
func (c ConsumerConfig) Validate() []error {
	var errs []error
	if c.Durable == "" {
		errs = append(errs, errors.New("Durable is empty; a durable consumer needs a name"))
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"RetryDelay", c.RetryDelay}, {"MaxRetryDelay", c.MaxRetryDelay}, {"AckWait", c.AckWait}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s = %v; must not be negative", d.field, d.v))
		}
	}
	if c.MaxRetryDelay > 0 && c.RetryDelay > c.MaxRetryDelay {
		errs = append(errs, fmt.Errorf("RetryDelay = %v; must not exceed MaxRetryDelay = %v", c.RetryDelay, c.MaxRetryDelay))
	}
	if c.Prefetch < 0 {
		errs = append(errs, fmt.Errorf("Prefetch = %d; must not be negative", c.Prefetch))
	}
	return errs
}

// retryDelay is the wait before the redelivery of a message that failed on
// its delivered-th delivery: base doubled per earlier failure, capped.
func retryDelay(base, max time.Duration, delivered uint64) time.Duration {
	d := base
	for i := uint64(1); i < delivered && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Consumer is a running durable consumer of a Queue.
type Consumer struct {
	q   *Queue
	cfg ConsumerConfig
	cc  jetstream.ConsumeContext

	ackRetries atomic.Int64

	mu       sync.Mutex
	stopping bool
	inFlight sync.WaitGroup

	stopOnce sync.Once
	stopped  chan struct{}
}

// Consume runs handle for each message of the queue on durable pull
// consumer durable, with ConsumerConfig's defaults; see ConsumeWith.
func (q *Queue) Consume(ctx context.Context, durable string, handle func(ctx context.Context, data []byte) error) (*Consumer, error) {
	return q.ConsumeWith(ctx, ConsumerConfig{Durable: durable}, handle)
}

// ConsumeWith runs handle for each message of the queue on the durable
// pull consumer cfg.Durable, creating it if needed, one message at a time.
// A message whose handler returns nil is acknowledged; one whose handler
// fails is redelivered after a growing delay, as often as it takes: the
// handler must be idempotent. It returns at once; the consumer runs until
// Stop or until ctx is done. A work queue allows one consumer at a time.
func (q *Queue) ConsumeWith(ctx context.Context, cfg ConsumerConfig, handle func(ctx context.Context, data []byte) error) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("messaging: consumer of %s: %w", q.name, errors.Join(errs...))
	}
	jc, err := q.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:   cfg.Durable,
		AckPolicy: jetstream.AckExplicitPolicy,
		AckWait:   cfg.AckWait,
		// Unlimited: at-least-once means a message is never given up on;
		// NakWithDelay, not MaxDeliver or BackOff, paces the retries.
		MaxDeliver: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("messaging: consumer %s of %s: %w", cfg.Durable, q.name, err)
	}
	c := &Consumer{q: q, cfg: cfg, stopped: make(chan struct{})}
	c.cc, err = jc.Consume(func(m jetstream.Msg) { c.handle(ctx, m, handle) },
		jetstream.PullMaxMessages(cfg.Prefetch),
		// A pull waits on the consumer's leader; when that server dies the
		// missing heartbeats (half the expiry) make the client pull again,
		// from the new leader. nats.go's 30 s would stall a failover as long.
		jetstream.PullExpiry(pullExpiry))
	if err != nil {
		return nil, fmt.Errorf("messaging: consume %s of %s: %w", cfg.Durable, q.name, err)
	}
	q.b.mu.Lock()
	q.b.consumers[c] = struct{}{}
	q.b.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			c.Stop()
		case <-c.stopped:
		}
	}()
	return c, nil
}

func (c *Consumer) handle(ctx context.Context, m jetstream.Msg, handle func(context.Context, []byte) error) {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		// Prefetched but not handled: give it back now rather than after
		// AckWait, so the next consumer of the durable gets it at once.
		m.Nak()
		return
	}
	c.inFlight.Add(1)
	c.mu.Unlock()
	defer c.inFlight.Done()

	if err := handle(ctx, m.Data()); err != nil {
		var n uint64 = 1
		if md, err := m.Metadata(); err == nil {
			n = md.NumDelivered
		}
		// A failed nak is not fatal: AckWait redelivers the message anyway.
		m.NakWithDelay(retryDelay(c.cfg.RetryDelay, c.cfg.MaxRetryDelay, n))
		return
	}
	c.ack(ctx, m)
}

// pullExpiry bounds one pull request; see ConsumeWith.
const pullExpiry = 5 * time.Second

// ack acknowledges m and waits for the server's confirmation, which makes
// Pending exact once Stop returns. An acknowledgement sent while the
// consumer's leader fails over gets no answer; it is sent again (the
// server takes a second one of a message as the same) for as long as the
// message's AckWait runs, after which the server redelivers it anyway and
// the idempotent handler absorbs the copy.
func (c *Consumer) ack(ctx context.Context, m jetstream.Msg) {
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(c.cfg.AckWait)
	for {
		actx, cancel := context.WithTimeout(ctx, connectTimeout)
		err := m.DoubleAck(actx)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrMsgAlreadyAckd) || errors.Is(err, nats.ErrConnectionClosed) || time.Now().After(deadline) {
			return
		}
		c.ackRetries.Add(1)
		time.Sleep(c.cfg.RetryDelay) // pacing a retry against a server mid-election
	}
}

// AckRetries is how many acknowledgements had to be sent again because
// the server did not confirm the first (a failover under way).
func (c *Consumer) AckRetries() int64 { return c.ackRetries.Load() }

// Stop stops receiving messages and waits for handlers in progress (and
// their acknowledgements) to finish. Messages received but not handled go
// back to the server for redelivery. See StopContext for a bounded wait.
func (c *Consumer) Stop() { c.StopContext(context.Background()) }

// StopContext is Stop waiting at most until ctx ends: a handler that does
// not honour its context, or a connection to a broker that went away, must
// not hold up a run being interrupted. The stop itself goes on after
// ctx's end and completes in the background; what it had not acknowledged
// is redelivered after AckWait, which the idempotent handler absorbs. The
// error is ctx's cause when the wait was cut short.
func (c *Consumer) StopContext(ctx context.Context) error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
		go c.finishStop()
	})
	select {
	case <-c.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("messaging: stop consumer %s of %s: %w", c.cfg.Durable, c.q.name, context.Cause(ctx))
	}
}

// finishStop drains the subscription, waits for the handlers in progress,
// then reports the consumer stopped.
func (c *Consumer) finishStop() {
	// Drain, not Stop: prefetched messages pass through handle, which naks
	// them, instead of being dropped and waiting out AckWait.
	c.cc.Drain()
	select {
	case <-c.cc.Closed():
	case <-c.q.b.closed:
	}
	c.inFlight.Wait()
	c.q.b.mu.Lock()
	delete(c.q.b.consumers, c)
	c.q.b.mu.Unlock()
	close(c.stopped)
}
