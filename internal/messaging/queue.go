package messaging

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Queue is a durable JetStream stream used as a work queue: each message
// is handled by one consumer and removed once acknowledged.
type Queue struct {
	b      *Broker
	name   string
	stream jetstream.Stream
}

// publishTimeout bounds one publish's wait for the stream's answer.
const publishTimeout = 5 * time.Second

// Name of the queue (its stream and its subject).
func (q *Queue) Name() string { return q.name }

// Publish appends data to the queue with message id id. duplicate reports
// that the stream already had a message with that id inside its
// de-duplication window and dropped this one: the message is then on the
// queue once, as it should be.
//
// A publish unanswered after 5 s fails whatever ctx allows: the request
// went to a server that died, or to a stream electing a leader, and the
// answer will not come; the caller publishes again under the same id.
func (q *Queue) Publish(ctx context.Context, id string, data []byte) (duplicate bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
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

// Placement is where a queue's stream lives in a cluster.
type Placement struct {
	// Cluster is the cluster's name; empty for a server outside any.
	Cluster string
	// Replicas is the stream's configured number of copies.
	Replicas int
	// Stored is how many messages the stream has ever stored (its last
	// sequence number): acknowledged ones are gone from a work queue.
	Stored uint64
	// Leader names the server that orders the stream's writes (its
	// server_name); empty while it elects one, or outside a cluster.
	Leader string
	// Followers are the other servers holding a copy, with whether each
	// is current with the leader.
	Followers []Follower
}

// Follower is a server holding a copy of a stream it does not lead.
type Follower struct {
	Name    string
	Current bool
	Offline bool
}

// Placement asks the server where the queue's stream lives: its leader
// and followers (a fault test kills the leader's process by that name).
func (q *Queue) Placement(ctx context.Context) (Placement, error) { return q.b.Placement(ctx, q.name) }

// Placement asks the server where the stream of queue name lives, without
// creating it: an error wrapping ErrNoQueue when it does not exist (yet).
func (b *Broker) Placement(ctx context.Context, name string) (Placement, error) {
	s, err := b.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return Placement{}, fmt.Errorf("messaging: queue %s: %w", name, ErrNoQueue)
	}
	if err != nil {
		return Placement{}, fmt.Errorf("messaging: queue %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return Placement{}, fmt.Errorf("messaging: queue %s: %w", name, err)
	}
	p := Placement{Replicas: info.Config.Replicas, Stored: info.State.LastSeq}
	if c := info.Cluster; c != nil {
		p.Cluster, p.Leader = c.Name, c.Leader
		for _, r := range c.Replicas {
			p.Followers = append(p.Followers, Follower{Name: r.Name, Current: r.Current, Offline: r.Offline})
		}
	}
	return p, nil
}

// ErrNoQueue: the queue's stream does not exist.
var ErrNoQueue = errors.New("no such queue")

// QueueNames lists the broker's queues (its streams) whose names begin
// with prefix.
func (b *Broker) QueueNames(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	names := b.js.StreamNames(ctx)
	for n := range names.Name() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("messaging: list queues: %w", err)
	}
	return out, nil
}
