package messaging

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	const url = "nats://127.0.0.1:1"
	b, err := Open(context.Background(), url, "")
	if err == nil {
		b.Close()
		t.Fatal("Open of a server nobody listens for succeeded")
	}
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), url) {
		t.Fatalf("Open: %v; want ErrUnreachable naming %s", err, url)
	}
}

func TestOpenEmbedded(t *testing.T) {
	t.Parallel()
	b := embedded(t, t.TempDir())
	if !b.Embedded() || !strings.HasPrefix(b.URL(), "nats://127.0.0.1:") || strings.HasSuffix(b.URL(), ":4222") {
		t.Fatalf("embedded broker: Embedded %v, URL %s; want true and a random port of 127.0.0.1", b.Embedded(), b.URL())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestDeleteQueue(t *testing.T) {
	eachBroker(t, func(t *testing.T, b *Broker) {
		ctx := testContext(t)
		name := queueName(t)
		if err := b.DeleteQueue(ctx, name); err != nil {
			t.Fatalf("delete of a missing queue: %v; want nil", err)
		}
		q, err := b.Queue(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		publish(t, q, "1", "one")
		if err := b.DeleteQueue(ctx, name); err != nil {
			t.Fatal(err)
		}
		q, err = b.Queue(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		defer b.DeleteQueue(context.Background(), name)
		if n := length(t, q); n != 0 {
			t.Fatalf("recreated queue holds %d messages; want 0", n)
		}
		// A fresh stream has a fresh de-duplication window.
		if publish(t, q, "1", "one") {
			t.Fatal("id 1 reported duplicate on a recreated queue")
		}
	})
}

// A queue deleted and created again at once, as a TPC-App load then run
// does: nats-server removes the old store's files in the background, and a
// create that met them was refused ("error creating store for stream",
// CI's race run of stop 40) or recovered them, the deleted stream's
// message in the new one. Fifty rounds, each with a message in the old
// stream, must all succeed and leave the new stream empty.
func TestQueueRecreatedAtOnce(t *testing.T) {
	eachBroker(t, func(t *testing.T, b *Broker) {
		ctx := testContext(t)
		name := queueName(t)
		defer b.DeleteQueue(context.Background(), name)
		for round := range 50 {
			q, err := b.Queue(ctx, name)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if n := length(t, q); n != 0 {
				t.Fatalf("round %d: the recreated queue holds %d messages; want 0", round, n)
			}
			publish(t, q, "1", "one")
			if err := b.DeleteQueue(ctx, name); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	})
}
