package messaging

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnreachable is returned by Open when the external server cannot be
// reached.
var ErrUnreachable = errors.New("messaging: nats server unreachable")

// Time limits of the broker's own operations; callers' contexts bound the
// rest.
const (
	connectTimeout = 5 * time.Second
	startTimeout   = 10 * time.Second
	drainTimeout   = 10 * time.Second
)

// Broker is a connection to NATS with JetStream: an embedded in-process
// server (the default) or an external one. It is safe for concurrent use.
type Broker struct {
	srv    *server.Server // nil when external
	url    string
	nc     *nats.Conn
	js     jetstream.JetStream
	closed chan struct{} // closed when nc is, after its drain

	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	consumers map[*Consumer]struct{} // running: Close stops them first
}

// Open connects to the NATS server at url, or, when url is "", starts an
// embedded server with JetStream storing its files under storeDir and
// listening on a random port of 127.0.0.1. An external server that cannot
// be reached gives an error wrapping ErrUnreachable.
func Open(ctx context.Context, url, storeDir string) (*Broker, error) {
	b := &Broker{url: url, closed: make(chan struct{}), consumers: map[*Consumer]struct{}{}}
	if url == "" {
		if storeDir == "" {
			return nil, errors.New("messaging: embedded server: storeDir is empty; JetStream needs a directory for its files")
		}
		srv, err := server.NewServer(&server.Options{
			Host:      "127.0.0.1",
			Port:      server.RANDOM_PORT,
			JetStream: true,
			StoreDir:  storeDir,
			NoLog:     true,
			NoSigs:    true, // signals belong to the process, not to the library
		})
		if err != nil {
			return nil, fmt.Errorf("messaging: embedded server in %s: %w", storeDir, err)
		}
		srv.Start()
		if !srv.ReadyForConnections(startTimeout) {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, fmt.Errorf("messaging: embedded server in %s: not ready after %v", storeDir, startTimeout)
		}
		b.srv, b.url = srv, srv.ClientURL()
	}
	nc, err := nats.Connect(b.url,
		nats.Name("tierbench"),
		nats.Timeout(connectTimeout),
		nats.DrainTimeout(drainTimeout),
		// A broker that goes away mid-run is waited for, not given up on:
		// messages are durable on the server and redelivered after.
		nats.MaxReconnects(-1),
		nats.ClosedHandler(func(*nats.Conn) { close(b.closed) }),
	)
	if err != nil {
		b.shutdownServer()
		if b.srv != nil {
			return nil, fmt.Errorf("messaging: connect to embedded server %s: %w", b.url, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, url, err)
	}
	b.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("messaging: jetstream on %s: %w", b.url, err)
	}
	b.js = js
	// Fail at Open, not at the first queue, when the server lacks JetStream.
	if _, err := js.AccountInfo(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("messaging: jetstream on %s: %w", b.url, err)
	}
	return b, nil
}

// URL is the server's client URL (for the embedded server, its random port).
func (b *Broker) URL() string { return b.url }

// Embedded reports whether the server runs in this process.
func (b *Broker) Embedded() bool { return b.srv != nil }

// Close stops the consumers still running, drains the connection, so that
// acknowledgements and publishes already issued reach the server, then
// shuts the embedded server down and waits for it to finish writing its
// files. The drain is bounded (10 s); see CloseContext for a tighter bound.
func (b *Broker) Close() error { return b.CloseContext(context.Background()) }

// CloseContext is Close waiting for the consumers and the connection's
// drain at most until ctx ends; then it closes the connection at once
// (what was not acknowledged is redelivered later, at least once) and
// returns ctx's cause with the rest of what failed. The embedded server's
// shutdown is local and always waited for: its files must be whole.
func (b *Broker) CloseContext(ctx context.Context) error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		running := make([]*Consumer, 0, len(b.consumers))
		for c := range b.consumers {
			running = append(running, c)
		}
		b.mu.Unlock()
		var errs []error
		for _, c := range running {
			if err := c.StopContext(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if b.nc != nil {
			if err := b.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				errs = append(errs, fmt.Errorf("messaging: drain connection to %s: %w", b.url, err))
				b.nc.Close()
			}
			select {
			case <-b.closed:
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("messaging: drain connection to %s: %w", b.url, context.Cause(ctx)))
				b.nc.Close()
				<-b.closed // the closed handler follows at once, on the connection's callback goroutine
			}
		}
		b.shutdownServer()
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

func (b *Broker) shutdownServer() {
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
}

// duplicateWindow is how long a stream remembers message ids: longer than
// any relay's retry, so a row republished after a failed delete is
// recognised (within one message-id prefix; see OutboxConfig).
const duplicateWindow = 10 * time.Minute

// Queue creates stream name (on subject name) if it does not exist, or
// updates it to the queue's configuration: file storage, work-queue
// retention (a message is removed once acknowledged) and a duplicate
// window of 10 minutes.
func (b *Broker) Queue(ctx context.Context, name string) (*Queue, error) {
	s, err := b.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       name,
		Subjects:   []string{name},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.WorkQueuePolicy,
		Duplicates: duplicateWindow,
	})
	if err != nil {
		return nil, fmt.Errorf("messaging: create queue %s: %w", name, err)
	}
	return &Queue{b: b, name: name, stream: s}, nil
}

// DeleteQueue deletes stream name with its messages and consumers, for a
// fresh run; a queue that does not exist is not an error.
func (b *Broker) DeleteQueue(ctx context.Context, name string) error {
	err := b.js.DeleteStream(ctx, name)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("messaging: delete queue %s: %w", name, err)
	}
	return nil
}
