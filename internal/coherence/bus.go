package coherence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/tierbench/tierbench/internal/container"
)

// Options of a bus. Zero durations take the defaults.
type Options struct {
	// URL of the NATS server; empty starts one in this process, on a
	// random loopback port (for a single app server, or a test).
	URL string
	// Run names the run: its subjects are under tierbench.coherence.RUN.
	Run string
	// Name is this server's, unique in the run (default: a random one).
	Name string
	// Servers is how many app servers the run has, when known: until it
	// has heard all the others, a server serves nothing from memory.
	Servers int
	// Deadline is how long a synchronous commit waits for a peer's reply
	// before fencing it (default 500ms).
	Deadline time.Duration
	// Heartbeat is the interval of the heartbeats (default 25ms); the
	// lease is Deadline - Heartbeat.
	Heartbeat time.Duration
	// Expiry is how long a silent peer is waited for (default 3s).
	Expiry time.Duration
	Log    *slog.Logger
}

func (o *Options) defaults() error {
	if o.Run == "" {
		return errors.New("coherence: the run has no name (Options.Run)")
	}
	if o.Name == "" {
		o.Name = nuid.Next()
	}
	if o.Deadline <= 0 {
		o.Deadline = 500 * time.Millisecond
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 25 * time.Millisecond
	}
	if o.Expiry <= 0 {
		o.Expiry = 3 * time.Second
	}
	if o.Heartbeat*2 > o.Deadline {
		return fmt.Errorf("coherence: heartbeat %v: at most half the deadline %v (the lease is the deadline less a heartbeat)", o.Heartbeat, o.Deadline)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// subjectToken makes s usable as one token of a subject.
func subjectToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == '.' || r == '*' || r == '>' {
			return '_'
		}
		return r
	}, s)
}

// Bus is one app server's end of the coherence protocol: it implements
// container.Peers for the containers attached to it.
type Bus struct {
	opts   Options
	lease  time.Duration
	srv    *server.Server // embedded, or nil
	nc     *nats.Conn
	prefix string
	own    string // the subject this server publishes on
	ack    string // the subject its replies come to
	// fromPeers takes the peers' messages, replies their replies to
	// this server's.
	fromPeers, replies *nats.Subscription
	stop               chan struct{}
	done               sync.WaitGroup

	// pub serialises numbering and publishing, so that the numbers go
	// out in order.
	pub sync.Mutex
	seq uint64

	mu         sync.Mutex
	containers []*container.Container
	peers      map[string]*peer
	waits      map[uint64]*wait
	latency    map[string]*latencyOf
	inSync     bool

	// dropping: the test switch that turns invalidation off: messages
	// are received, numbered and acknowledged, but not applied.
	dropping atomic.Bool
	// Counts of the protocol's events.
	selfFences, peersFenced, gaps atomic.Int64
}

// peer is what this server knows of another.
type peer struct {
	name      string
	lastHeard time.Time
	gone      bool
	// As a publisher to this server: the last number applied (known once
	// a message has been heard), until when its messages vouch for this
	// cache, and its announced writes not settled yet, by number.
	known       bool
	lastSeq     uint64
	syncedUntil time.Time
	announced   map[uint64]*container.Writes
	// As a receiver of this server's: member (its replies are waited
	// for), or fenced at the notice numbered fencedAt.
	member   bool
	fencedAt uint64
}

// wait is a synchronous publication waiting for its replies.
type wait struct {
	need map[string]bool
	done chan struct{}
}

// message is what travels on a server's subject.
type message struct {
	Kind byte   `json:"k"` // see the kinds below
	From string `json:"f"`
	// Seq numbers the server's invalidations and notices; a heartbeat
	// carries the last one sent.
	Seq  uint64 `json:"s"`
	Sent int64  `json:"t"` // unix nanoseconds
	// Writes of an announce, settle or async invalidation; Announce is
	// the number of the announcement a settle settles.
	Writes   *container.Writes `json:"w,omitempty"`
	Announce uint64            `json:"a,omitempty"`
	// Members (heartbeat): the peers the sender waits for; Applied: the
	// last number it applied of each peer.
	Members []string          `json:"m,omitempty"`
	Applied map[string]uint64 `json:"p,omitempty"`
	// Fenced (fence notice): the peer the sender gave up on.
	Fenced string `json:"x,omitempty"`
}

const (
	kindHeartbeat = 'h'
	kindAnnounce  = 'a'
	kindSettle    = 's'
	kindFence     = 'x'
)

// reply acknowledges message Seq of a publisher.
type reply struct {
	From string `json:"f"`
	Seq  uint64 `json:"s"`
}

var _ container.Peers = (*Bus)(nil)

// Open connects to the NATS server (or starts one), subscribes and
// starts heartbeating. Attach the containers before they serve.
func Open(ctx context.Context, opts Options) (*Bus, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	b := &Bus{opts: opts, lease: opts.Deadline - opts.Heartbeat, stop: make(chan struct{}),
		peers: map[string]*peer{}, waits: map[uint64]*wait{}, latency: map[string]*latencyOf{}}
	url := opts.URL
	if url == "" {
		srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
		if err != nil {
			return nil, fmt.Errorf("coherence: embedded NATS server: %w", err)
		}
		srv.Start()
		if !srv.ReadyForConnections(10 * time.Second) {
			srv.Shutdown()
			return nil, errors.New("coherence: embedded NATS server not ready after 10s")
		}
		b.srv, url = srv, srv.ClientURL()
	}
	nc, err := nats.Connect(url, nats.Name("tierbench-coherence-"+opts.Name), nats.Timeout(5*time.Second), nats.MaxReconnects(-1))
	if err != nil {
		b.shutdownServer()
		return nil, fmt.Errorf("coherence: connect to %s: %w", url, err)
	}
	b.nc = nc
	b.prefix = "tierbench.coherence." + subjectToken(opts.Run)
	name := subjectToken(opts.Name)
	b.own, b.ack = b.prefix+".peer."+name, b.prefix+".ack."+name
	// One subscription for all peers' subjects: nats.go runs its handler
	// on one goroutine, so each publisher's messages are applied in the
	// order they were sent.
	for _, s := range []struct {
		sub     **nats.Subscription
		subject string
		handle  nats.MsgHandler
	}{{&b.fromPeers, b.prefix + ".peer.*", b.receive}, {&b.replies, b.ack, b.replied}} {
		sub, err := nc.Subscribe(s.subject, s.handle)
		if err == nil {
			err = sub.SetPendingLimits(-1, -1)
		}
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("coherence: subscribe %s: %w", s.subject, err)
		}
		*s.sub = sub
	}
	flushCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := nc.FlushWithContext(flushCtx); err != nil {
		b.Close()
		return nil, fmt.Errorf("coherence: %s: %w", url, err)
	}
	b.done.Add(1)
	go b.heartbeats()
	return b, nil
}

// URL is the NATS server's client URL (the embedded one's random port).
func (b *Bus) URL() string { return b.nc.ConnectedUrl() }

// Name is this server's name in the run.
func (b *Bus) Name() string { return b.opts.Name }

// Attach makes c publish its coherent types' writes through the bus and
// apply the peers', and tells it other servers share its database
// (container.AcrossServers).
// With one app server (Options.Servers 1) there is no other server's
// transaction to keep out and the locking reads are left out.
func (b *Bus) Attach(c *container.Container) { b.attach(c, b.opts.Servers != 1) }

// attach is Attach; across false leaves out the locking reads, which a
// test switches off to show its lost-update check catches what they
// prevent.
func (b *Bus) attach(c *container.Container, across bool) {
	if across {
		c.AcrossServers()
	}
	c.AttachPeers(b)
	b.mu.Lock()
	b.containers = append(b.containers, c)
	c.SetInSync(b.inSync)
	b.mu.Unlock()
}

// Close stops heartbeating and closes the connection (and the embedded
// server).
func (b *Bus) Close() error {
	select {
	case <-b.stop:
		return nil
	default:
	}
	close(b.stop)
	b.done.Wait()
	var err error
	if b.nc != nil {
		err = b.nc.Drain()
		for !b.nc.IsClosed() {
			time.Sleep(time.Millisecond)
		}
	}
	b.shutdownServer()
	return err
}

func (b *Bus) shutdownServer() {
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
}

// Publish sends one commit's writes (container.Peers). An announcement
// of synchronous items waits for every member's reply, fencing those
// that do not reply within the deadline.
func (b *Bus) Publish(ctx context.Context, w *container.Writes) error {
	// Only an announcement waits: the peers have then stopped serving
	// the identities from memory, and the settle that lifts that is
	// correct whenever it arrives (see container.Peers).
	sync := false
	for _, it := range w.Items {
		sync = sync || (it.Sync && w.Phase == container.Announce)
	}
	m := message{From: b.opts.Name, Writes: w, Kind: kindSettle}
	if w.Phase == container.Announce {
		m.Kind = kindAnnounce
	}
	start := time.Now()
	b.pub.Lock()
	b.seq++
	m.Seq, m.Sent = b.seq, start.UnixNano()
	if m.Kind == kindAnnounce {
		w.Announced = m.Seq
	} else {
		m.Announce = w.Announced
	}
	var wt *wait
	if sync {
		wt = b.expect(m.Seq)
	}
	err := b.send(&m, sync)
	b.pub.Unlock()
	if err != nil {
		if wt != nil {
			b.forget(m.Seq)
		}
		return err
	}
	if wt == nil {
		return nil
	}
	timer := time.NewTimer(b.opts.Deadline)
	defer timer.Stop()
	select {
	case <-wt.done:
		b.record(w, time.Since(start))
	case <-timer.C:
		b.fence(m.Seq, w)
	case <-ctx.Done():
		// The caller gave up (the run is ending), not the peers: nobody
		// is fenced, and the commit, not made, settles what it announced.
		b.forget(m.Seq)
		return ctx.Err()
	}
	return nil
}
