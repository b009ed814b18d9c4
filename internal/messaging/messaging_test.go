package messaging

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultTestNATS is the development machines' NATS server.
const DefaultTestNATS = "nats://127.0.0.1:4222"

// testTimeout bounds every wait of a test, so a lost message fails the test
// instead of hanging it.
const testTimeout = 20 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// embedded starts an embedded broker storing under dir, closed at cleanup.
func embedded(t *testing.T, dir string) *Broker {
	t.Helper()
	b, err := Open(testContext(t), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// external connects to TIERBENCH_TEST_NATS, or skips the test (fails it
// when TIERBENCH_REQUIRE_SERVICES=1).
func external(t *testing.T) *Broker {
	t.Helper()
	url := strings.TrimSpace(os.Getenv("TIERBENCH_TEST_NATS"))
	if url == "" {
		url = DefaultTestNATS
	}
	b, err := Open(testContext(t), url, "")
	if err != nil {
		if os.Getenv("TIERBENCH_REQUIRE_SERVICES") == "1" {
			t.Fatalf("NATS at %s unusable and TIERBENCH_REQUIRE_SERVICES=1: %v", url, err)
		}
		t.Skipf("skipping: NATS at %s unusable (%v); set TIERBENCH_REQUIRE_SERVICES=1 to fail instead", url, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// eachBroker runs fn on an embedded broker and on the external one.
func eachBroker(t *testing.T, fn func(t *testing.T, b *Broker)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		fn(t, embedded(t, t.TempDir()))
	})
	t.Run("external", func(t *testing.T) {
		t.Parallel()
		fn(t, external(t))
	})
}

// queueName is unique per test and run: tests share the external server.
func queueName(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 64 {
		name = name[:64]
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	return name + "_" + hex.EncodeToString(suffix)
}

// newQueue creates a queue for the test, deleted at cleanup.
func newQueue(t *testing.T, b *Broker) *Queue {
	t.Helper()
	name := queueName(t)
	q, err := b.Queue(testContext(t), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.DeleteQueue(context.Background(), name); err != nil {
			t.Error(err)
		}
	})
	return q
}

// deliveries records what a handler was given, and signals when a
// condition on the record holds.
type deliveries struct {
	mu     sync.Mutex
	counts map[string]int
	order  []string
}

func newDeliveries() *deliveries { return &deliveries{counts: map[string]int{}} }

// add records a delivery of data and returns how many times it came.
func (d *deliveries) add(data []byte) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[string(data)]++
	d.order = append(d.order, string(data))
	return d.counts[string(data)]
}

func (d *deliveries) snapshot() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := make(map[string]int, len(d.counts))
	for k, v := range d.counts {
		m[k] = v
	}
	return m
}

type handler = func(context.Context, []byte) error

// consumeN starts a consumer with start, lets it handle messages until n
// have come, stops it, and returns how often each came.
func consumeN(t *testing.T, n int, what string, start func(handler) (*Consumer, error)) map[string]int {
	t.Helper()
	got := newDeliveries()
	done, all := signalAt(n)
	c, err := start(func(_ context.Context, data []byte) error {
		got.add(data)
		done()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, all, what)
	c.Stop()
	return got.snapshot()
}

// wait receives from ch or fails the test after testTimeout.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// signalAt returns a channel closed by the n-th call of the returned
// function.
func signalAt(n int) (func(), <-chan struct{}) {
	ch := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	return func() {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == n {
			close(ch)
		}
	}, ch
}

func pending(t *testing.T, q *Queue, durable string) int {
	t.Helper()
	n, err := q.Pending(testContext(t), durable)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pendingSettles reads pending until it is want, for up to 2 s, and
// returns the last reading.
func pendingSettles(t *testing.T, q *Queue, durable string, want int) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := pending(t, q, durable)
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func length(t *testing.T, q *Queue) int {
	t.Helper()
	n, err := q.Len(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func publish(t *testing.T, q *Queue, id, data string) bool {
	t.Helper()
	dup, err := q.Publish(testContext(t), id, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return dup
}
