package coherence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
	// out in order; sendBuf is the encoding's, reused.
	pub       sync.Mutex
	seq       uint64
	announces uint64
	sendBuf   []byte
	// Group commit of the announcements (see Publish), guarded by pub:
	// whether one is waiting for its replies, and the commits that came
	// meanwhile, to go out together once it has them.
	inFlight bool
	queued   *batch
	// pending are the synchronous announcements published and not yet
	// awaited, by announcement number (see Await).
	pending map[uint64]pending

	// wmu guards waits, apart from mu, so that a reply is taken while
	// the receiving goroutine applies a peer's writes.
	wmu   sync.Mutex
	waits map[uint64]*wait

	// dec and replyBuf belong to the goroutine receiving the peers'
	// messages.
	dec      decoder
	replyBuf []byte

	// cmu guards the claims (claims.go); inSyncNow mirrors inSync for
	// the commits' decisions to leave a type out.
	cmu sync.Mutex
	claimState
	inSyncNow atomic.Bool

	mu         sync.Mutex
	containers []*container.Container
	peers      map[string]*peer
	latency    map[string]*latencyOf
	inSync     bool

	// dropping: the test switch that turns invalidation off: messages
	// are received, numbered and acknowledged, but not applied.
	dropping atomic.Bool
	// noDoubt: the test switch that turns the in-doubt state off: an
	// announcement's identities and finder entries are dropped but not
	// marked, so what this server reads of them before the writer's
	// database commit is visible is kept (see decision 0034).
	noDoubt atomic.Bool
	// unmarkCreated: the test switch that makes the leaving out of
	// created identities unsound (decision 0044): a settle's created
	// identities, which its announcement did not mark, are unmarked as
	// its announced ones are, lifting another commit's mark of the same
	// identity.
	unmarkCreated atomic.Bool
	// noDrain: the test switch that makes the leaving out of unclaimed
	// types unsound (decision 0044): a claim is answered at once, though
	// commits that left the type out are still committing.
	noDrain atomic.Bool
	// Counts of the protocol's events.
	selfFences, peersFenced, gaps atomic.Int64
	// announceMessages carried announcedCommits (group commit).
	announceMessages, announcedCommits atomic.Int64
	// exposedWaits: awaits (after the database commit) that found the
	// replies still to come, and waited exposedNanos in all for them;
	// lostAnnouncements: announcements that could not be sent after the
	// database had committed.
	exposedWaits, exposedNanos, lostAnnouncements atomic.Int64
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

// wait is a synchronous publication (a batch of announcements) waiting
// for its replies; it is done when every member replied, when the
// deadline fenced those that did not (fenced), or when every commit of
// the batch gave up waiting.
type wait struct {
	seq   uint64
	need  map[string]bool
	done  chan struct{}
	timer *time.Timer
	// types of the writes waited for, whose counts of fenced peers a
	// fence adds to.
	types  []string
	fenced bool
	// ended: when it was done (the last reply), set before done closes.
	ended time.Time
}

// batch is announcements going out together in one message: the
// commits that came while the previous one waited for its replies.
type batch struct {
	writes []*container.Writes
	// sent is closed once the batch's message is sent (wt its wait) or
	// could not be (err).
	sent chan struct{}
	wt   *wait
	err  error
	// waiting: the commits that have not let go of it (guarded by the
	// bus's pub); when none is left, nobody waits for its replies.
	waiting int
}

// message is what travels on a server's subject (see codec.go for its
// encoding).
type message struct {
	Kind byte // see the kinds below
	From string
	// Seq numbers the server's messages other than heartbeats; a
	// heartbeat carries the last one sent.
	Seq  uint64
	Sent int64 // unix nanoseconds
	// Writes of an announce (several commits' when they came together,
	// see Publish), or of a settle (one commit's); each one's Announced
	// is the number of its commit's announcement, 0 for none.
	Writes []*container.Writes
	// Members (heartbeat): the peers the sender waits for; Applied: the
	// last number it applied of each peer.
	Members []string
	Applied map[string]uint64
	// Fenced (fence notice): the peer the sender gave up on.
	Fenced string
	// Claim (claim): the type the sender claims; Claims (heartbeat): the
	// types it has claimed (see claims.go).
	Claim  string
	Claims []string
}

const (
	kindHeartbeat = 'h'
	kindAnnounce  = 'a'
	kindSettle    = 's'
	kindFence     = 'x'
	kindClaim     = 'c'
)

var _ container.Peers = (*Bus)(nil)

// Open connects to the NATS server (or starts one), subscribes and
// starts heartbeating. Attach the containers before they serve.
func Open(ctx context.Context, opts Options) (*Bus, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	b := &Bus{opts: opts, lease: opts.Deadline - opts.Heartbeat, stop: make(chan struct{}),
		peers: map[string]*peer{}, waits: map[uint64]*wait{}, pending: map[uint64]pending{}, latency: map[string]*latencyOf{}}
	// Unclaimed types are left out only when the run's server count is
	// known: a claim is complete once all the other servers answered.
	b.claimState.init(opts.Servers > 0)
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
	if !b.skips {
		// Nothing is left out: nothing to claim.
		c.Claimed(nil, true)
	}
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

// Publish sends one commit's writes (container.Peers). It does not wait
// for the replies: an announcement of synchronous items is awaited
// (Await) once the database commit is done, so that the round trip to
// the peers overlaps the commit instead of preceding it (decision 0034).
//
// Announcements go out one message at a time (group commit): while one
// waits for its replies, the commits that come meanwhile queue, and go
// out together, in one message answered by one reply a peer, as soon as
// it has them. Under load a commit thus waits for at most its
// predecessor's round trip and its own, and the peers handle one
// message, not one a commit. An announcement sent at once (none in
// flight) that cannot be sent is an error: nothing is pending, and the
// commit rolls back.
func (b *Bus) Publish(_ context.Context, w *container.Writes) error {
	sync := false
	for _, it := range w.Items {
		sync = sync || (it.Sync && w.Phase == container.Announce)
	}
	if !sync {
		if w.Phase == container.Settle {
			b.leaveOutSettled(w)
			if len(w.Items) == 0 {
				return nil
			}
		}
		m := message{Kind: kindSettle, From: b.opts.Name, Writes: []*container.Writes{w}}
		b.pub.Lock()
		if w.Phase == container.Announce {
			m.Kind = kindAnnounce
			b.announces++
			w.Announced = b.announces
		}
		b.seq++
		m.Seq, m.Sent = b.seq, time.Now().UnixNano()
		err := b.send(&m, false)
		b.pub.Unlock()
		return err
	}
	skipped := b.leaveOutUnclaimed(w)
	start := time.Now()
	b.pub.Lock()
	defer b.pub.Unlock()
	b.announces++
	w.Announced = b.announces
	if skipped != nil {
		b.cmu.Lock()
		b.skipped[w.Announced] = skipped
		b.cmu.Unlock()
	}
	if len(w.Items) == 0 {
		// Every type left out: nothing to send or wait for; Await ends
		// the skips.
		b.pending[w.Announced] = pending{start: start}
		return nil
	}
	bt := b.queued
	if bt == nil {
		bt = &batch{sent: make(chan struct{})}
		b.queued = bt
	}
	bt.writes = append(bt.writes, w)
	bt.waiting++
	if !b.inFlight {
		b.sendQueuedLocked()
		if bt.err != nil {
			b.endSkips(w.Announced) // no Await follows
			return bt.err
		}
	}
	b.pending[w.Announced] = pending{bt: bt, start: start}
	return nil
}

// pending is a commit's announcement published and not yet awaited.
type pending struct {
	bt    *batch
	start time.Time
}

// Await ends a synchronous announcement that Publish sent (or queued)
// for w (container.Peers), once the database commit is done. Committed,
// it returns once every live peer has applied the announcement, or the
// deadline has fenced the silent ones; it cannot be cut short, as the
// commit is made and must not return before. Not committed, it lets go
// at once: the settle that follows lifts the peers' marks, and a batch
// that nobody waits for any more is ended without fencing anyone.
func (b *Bus) Await(w *container.Writes, committed bool) {
	b.pub.Lock()
	p, ok := b.pending[w.Announced]
	if !ok {
		b.pub.Unlock()
		return
	}
	delete(b.pending, w.Announced)
	// The database commit is done (or abandoned): the claims of the
	// types this commit left out may be answered.
	b.endSkips(w.Announced)
	if committed {
		b.countUnclaimed(w.Announced)
	}
	bt := p.bt
	if bt == nil {
		b.pub.Unlock()
		return
	}
	if !committed {
		if b.queued == bt {
			// Not sent yet: it never will be, and nothing is to settle.
			bt.writes = slices.DeleteFunc(bt.writes, func(q *container.Writes) bool { return q == w })
			bt.waiting--
			b.cmu.Lock()
			delete(b.skipped, w.Announced) // the settle names no announcement
			b.cmu.Unlock()
			w.Announced = 0
			b.pub.Unlock()
			return
		}
		bt.waiting--
		last := bt.waiting == 0
		b.pub.Unlock()
		// Sent (under pub): bt.sent is closed, bt.err and bt.wt are set.
		if bt.err == nil && last {
			if b.complete(bt.wt, false) {
				b.next()
			}
		}
		return
	}
	b.pub.Unlock()
	<-bt.sent
	if bt.err != nil {
		// The database has committed and the announcement could not go
		// out (the connection is closed). The peers hear nothing more of
		// this server, or hear its numbers skip the lost message: either
		// way they stop serving from memory within the lease, shorter
		// than the deadline. The commit returns once that has passed.
		b.lostAnnouncements.Add(1)
		time.Sleep(b.opts.Deadline)
		return
	}
	select {
	case <-bt.wt.done:
	default:
		exposed := time.Now()
		<-bt.wt.done
		b.exposedWaits.Add(1)
		b.exposedNanos.Add(int64(time.Since(exposed)))
	}
	if !bt.wt.fenced {
		// The round trip ends with the last reply, not when the commit,
		// its database commit done, came to look.
		b.record(w, bt.wt.ended.Sub(p.start))
	}
}

// sendQueuedLocked sends the queued announcements in one message, which
// is then in flight until its wait is done. Called with b.pub held.
func (b *Bus) sendQueuedLocked() {
	bt := b.queued
	b.queued = nil
	if bt == nil || len(bt.writes) == 0 {
		return
	}
	b.seq++
	m := message{Kind: kindAnnounce, From: b.opts.Name, Seq: b.seq, Sent: time.Now().UnixNano(), Writes: bt.writes}
	bt.wt = b.expect(m.Seq, bt.writes)
	b.announceMessages.Add(1)
	b.announcedCommits.Add(int64(len(bt.writes)))
	if bt.err = b.send(&m, true); bt.err != nil {
		b.complete(bt.wt, false)
	} else {
		select {
		case <-bt.wt.done:
		default:
			b.inFlight = true
		}
	}
	// The writes are encoded: the commits own them again.
	bt.writes = nil
	close(bt.sent)
}
