package messaging

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Queue is a durable JetStream stream used as a work queue: each message
// is handled by one consumer and removed once acknowledged.
type Queue struct {
	b      *Broker
	name   string
	stream jetstream.Stream
}

// Name of the queue (its stream and its subject).
func (q *Queue) Name() string { return q.name }

// Publish appends data to the queue with message id id. duplicate reports
// that the stream already had a message with that id inside its
// de-duplication window and dropped this one: the message is then on the
// queue once, as it should be.
func (q *Queue) Publish(ctx context.Context, id string, data []byte) (duplicate bool, err error) {
	ack, err := q.b.js.Publish(ctx, q.name, data, jetstream.WithMsgID(id))
	if err != nil {
		return false, fmt.Errorf("messaging: publish %s to %s: %w", id, q.name, err)
	}
	return ack.Duplicate, nil
}

// Pending is how many messages of the queue durable has not yet
// acknowledged: those not yet delivered plus those delivered and awaiting
// an acknowledgement (a message whose handler failed counts until it
// succeeds). A durable that does not exist yet has every message of the
// queue pending.
func (q *Queue) Pending(ctx context.Context, durable string) (int, error) {
	c, err := q.stream.Consumer(ctx, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return q.Len(ctx)
	}
	if err != nil {
		return 0, fmt.Errorf("messaging: consumer %s of %s: %w", durable, q.name, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("messaging: consumer %s of %s: %w", durable, q.name, err)
	}
	return int(info.NumPending) + info.NumAckPending, nil
}

// Len is the number of messages stored in the queue: with work-queue
// retention, those no consumer has acknowledged.
func (q *Queue) Len(ctx context.Context) (int, error) {
	info, err := q.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("messaging: queue %s: %w", q.name, err)
	}
	return int(info.State.Msgs), nil
}
