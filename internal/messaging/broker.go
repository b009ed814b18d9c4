package messaging

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnreachable is returned by Open when the external server cannot be
// reached.
var ErrUnreachable = errors.New("messaging: nats server unreachable")

// ErrReplicas is returned by Open and Queue when the broker cannot keep
// Config.StreamReplicas copies of a stream: the embedded server and a
// server outside a cluster keep one, a cluster at most as many as it has
// servers up. Callers report it as a usage error.
var ErrReplicas = errors.New("messaging: too few servers for --stream-replicas")

// replicasError is an ErrReplicas whose message says it all, flag first.
type replicasError struct{ msg string }

func (e replicasError) Error() string        { return e.msg }
func (e replicasError) Is(target error) bool { return target == ErrReplicas }

func errReplicas(format string, args ...any) error {
	return replicasError{fmt.Sprintf(format, args...)}
}

// MaxStreamReplicas is JetStream's limit on a stream's replicas.
const MaxStreamReplicas = 5

// Config says which broker Open connects to and how its queues are kept.
// The zero value is an embedded server without a store directory, which
// Open refuses: StoreDir is needed then.
type Config struct {
	// URL is an external server's URL, or several comma-separated (a
	// cluster's: the client connects to any and fails over to the
	// others); see ParseServers. Empty: an embedded server.
	URL string
	// StoreDir holds the embedded server's JetStream files.
	StoreDir string
	// StreamReplicas is how many servers keep each queue's stream and its
	// consumers: a message is acknowledged to the publisher once a
	// majority of them stored it, so it survives the loss of a minority.
	// 0 means 1; at most MaxStreamReplicas and the cluster's size.
	StreamReplicas int
}

// Time limits of the broker's own operations; callers' contexts bound the
// rest.
const (
	connectTimeout = 5 * time.Second
	// reconnectWait spaces attempts to reach a server again; a cluster's
	// client tries the others in between, so a failover costs about this.
	reconnectWait = 500 * time.Millisecond
	startTimeout  = 10 * time.Second
	drainTimeout  = 10 * time.Second
)

// Broker is a connection to NATS with JetStream: an embedded in-process
// server (the default) or an external one. It is safe for concurrent use.
type Broker struct {
	srv      *server.Server // nil when external
	url      string
	replicas int // of each queue's stream, at least 1
	nc       *nats.Conn
	js       jetstream.JetStream
	closed   chan struct{} // closed when nc is, after its drain

	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	consumers map[*Consumer]struct{} // running: Close stops them first
}

// Open connects to the NATS server at url, or, when url is "", starts an
// embedded server with JetStream storing its files under storeDir and
// listening on a random port of 127.0.0.1; see OpenWith.
func Open(ctx context.Context, url, storeDir string) (*Broker, error) {
	return OpenWith(ctx, Config{URL: url, StoreDir: storeDir})
}

// OpenWith connects to cfg.URL's server or cluster, or starts an embedded
// server when it is empty. An external server that cannot be reached
// gives an error wrapping ErrUnreachable; more StreamReplicas than one
// server keeps (embedded, or a server outside any cluster) an error
// wrapping ErrReplicas.
func OpenWith(ctx context.Context, cfg Config) (*Broker, error) {
	url, storeDir := cfg.URL, cfg.StoreDir
	replicas := max(cfg.StreamReplicas, 1)
	if replicas > MaxStreamReplicas {
		return nil, errReplicas("--stream-replicas %d: JetStream keeps at most %d", replicas, MaxStreamReplicas)
	}
	if url == "" && replicas > 1 {
		return nil, errReplicas("--stream-replicas %d needs a JetStream cluster of at least %d servers; the embedded broker is one server: give --broker the cluster's URLs (deploy/local/nats-cluster up prints them)", replicas, replicas)
	}
	if url != "" {
		servers, err := ParseServers(url)
		if err != nil {
			return nil, fmt.Errorf("messaging: --broker: %w", err)
		}
		url = strings.Join(servers, ",")
	}
	b := &Broker{url: url, replicas: replicas, closed: make(chan struct{}), consumers: map[*Consumer]struct{}{}}
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
		// messages are durable on the server and redelivered after. A
		// cluster's client moves to another of its servers.
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
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
	// A server outside a cluster refuses replicated streams anyway; said
	// here, with the remedy, rather than at the first queue. A cluster
	// too small for the replicas is known only when a stream is placed
	// (Queue): what counts is how many of its servers are up.
	if replicas > 1 && nc.ConnectedClusterName() == "" {
		server := nc.ConnectedUrlRedacted()
		b.Close()
		return nil, errReplicas("--stream-replicas %d needs a JetStream cluster of at least %d servers; %s is a single server, in no cluster: give --broker a cluster's URLs (deploy/local/nats-cluster up prints them)", replicas, replicas, server)
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
// retention (a message is removed once acknowledged), a duplicate window
// of 10 minutes and the broker's StreamReplicas. A cluster that cannot
// place that many replicas (fewer servers up) gives an error wrapping
// ErrReplicas, with the server's word.
func (b *Broker) Queue(ctx context.Context, name string) (*Queue, error) {
	cfg := jetstream.StreamConfig{
		Name:       name,
		Subjects:   []string{name},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.WorkQueuePolicy,
		Duplicates: duplicateWindow,
		Replicas:   b.replicas,
	}
	s, err := b.js.CreateOrUpdateStream(ctx, cfg)
	// Right after a stream of the same name was deleted, the server may
	// still be removing the old store's files and refuses to make the new
	// store; it succeeds moments later.
	for deadline := time.Now().Add(recreateTimeout); storeFailed(err) && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(recreatePoll) // polling the server; 10 ms past ctx's end at most
		s, err = b.js.CreateOrUpdateStream(ctx, cfg)
	}
	if err != nil {
		if tooFewServers(err) {
			return nil, errReplicas("--stream-replicas %d: the cluster %s cannot place %d replicas of queue %s (fewer servers up than replicas): %v",
				b.replicas, b.nc.ConnectedClusterName(), b.replicas, name, err)
		}
		return nil, fmt.Errorf("messaging: create queue %s: %w", name, err)
	}
	return &Queue{b: b, name: name, stream: s}, nil
}

// tooFewServers reports whether err is the server's refusal to place a
// stream's replicas: no cluster, or not enough peers in it.
func tooFewServers(err error) bool {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case jsClusterNoPeers, jsInsufficientResources, jsStreamReplicasNotSupported:
		return true
	}
	return false
}

// The JetStream API's error codes (nats-server's errors.json): for a
// placement it cannot make, and for a store it could not create.
const (
	jsClusterNoPeers             jetstream.ErrorCode = 10005
	jsInsufficientResources      jetstream.ErrorCode = 10023
	jsStreamReplicasNotSupported jetstream.ErrorCode = 10074
	jsStreamStoreFailed          jetstream.ErrorCode = 10049
)

// DeleteQueue deletes stream name with its messages and consumers, for a
// fresh run; a queue that does not exist is not an error.
func (b *Broker) DeleteQueue(ctx context.Context, name string) error {
	// Purged first: nats-server moves a deleted stream's files aside and
	// removes them in the background, and a second delete of the name
	// while the first's are still there leaves its files in place, where
	// the next create of the name recovers them, messages and all
	// (TestQueueRecreatedAtOnce). Purged, they hold nothing to recover.
	s, err := b.js.Stream(ctx, name)
	if err == nil {
		if err = s.Purge(ctx); err == nil {
			err = b.js.DeleteStream(ctx, name)
		}
	}
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("messaging: delete queue %s: %w", name, err)
	}
	return nil
}

// How long a create of a just-deleted queue's name retries while the
// server still removes the old store, and how often.
const (
	recreateTimeout = 5 * time.Second
	recreatePoll    = 10 * time.Millisecond
)

// storeFailed reports whether err is the server's failure to make a
// stream's store (nats-server's JSStreamStoreFailedErr).
func storeFailed(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jsStreamStoreFailed
}
