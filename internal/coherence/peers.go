package coherence

import (
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/container"
)

// send publishes m on the server's subject, with the reply subject when
// it waits for replies. Called with b.pub held.
func (b *Bus) send(m *message, replies bool) error {
	b.sendBuf = appendMessage(b.sendBuf[:0], m)
	msg := nats.Msg{Subject: b.own, Data: b.sendBuf}
	if replies {
		msg.Reply = b.ack
	}
	// nats.go has copied the data into its buffer when PublishMsg
	// returns: sendBuf is free again.
	return b.nc.PublishMsg(&msg)
}

// expect registers publication seq's wait for the members' replies, and
// the deadline that fences the silent ones. Called with b.pub held.
func (b *Bus) expect(seq uint64, writes []*container.Writes) *wait {
	w := &wait{seq: seq, need: map[string]bool{}, done: make(chan struct{})}
	b.mu.Lock()
	for name, p := range b.peers {
		if p.member && !p.gone {
			w.need[name] = true
		}
	}
	b.mu.Unlock()
	if len(w.need) == 0 {
		w.ended = time.Now()
		close(w.done)
		return w
	}
	for _, ws := range writes {
		for _, it := range ws.Items {
			if !slices.Contains(w.types, it.Type) {
				w.types = append(w.types, it.Type)
			}
		}
	}
	b.wmu.Lock()
	b.waits[seq] = w
	w.timer = time.AfterFunc(b.opts.Deadline, func() { b.fence(w) })
	b.wmu.Unlock()
	return w
}

// complete ends wait w, fenced or not, unless it has ended already;
// true when this call ended it (the caller then sends what queued
// meanwhile: b.next).
func (b *Bus) complete(w *wait, fenced bool) bool {
	if _, ok := b.take(w); !ok {
		return false
	}
	b.end(w, fenced)
	return true
}

// take removes wait w from those its replies are matched against,
// unless another caller has; true when this call took it, with the
// members that had not replied. The caller must end it (b.end).
func (b *Bus) take(w *wait) (silent []string, ok bool) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if b.waits[w.seq] != w {
		return nil, false
	}
	delete(b.waits, w.seq)
	w.timer.Stop()
	return slices.Collect(maps.Keys(w.need)), true
}

// end lets the commits that wait on w go.
func (b *Bus) end(w *wait, fenced bool) {
	w.fenced, w.ended = fenced, time.Now()
	close(w.done)
}

// next sends the announcements that queued while the one in flight
// waited (see Publish).
func (b *Bus) next() {
	b.pub.Lock()
	b.inFlight = false
	b.sendQueuedLocked()
	b.pub.Unlock()
}

// replied takes a peer's reply. It runs on nats.go's goroutine of the
// replies' subscription, as every reply does: no goroutine, and no
// allocation, a reply.
func (b *Bus) replied(msg *nats.Msg) {
	seq, from, skipped, err := decodeReply(msg.Data)
	if err != nil {
		return
	}
	b.wmu.Lock()
	w := b.waits[seq]
	if w == nil {
		b.wmu.Unlock()
		b.claimAnswered(seq, string(from), skipped)
		return
	}
	if !w.need[string(from)] {
		b.wmu.Unlock()
		return
	}
	delete(w.need, string(from))
	last := len(w.need) == 0
	b.wmu.Unlock()
	if !last {
		return
	}
	if b.complete(w, false) {
		b.next()
	}
}

// fence gives up on the members that did not reply to publication w
// within the deadline: they are no longer waited for, and a notice names
// each, numbered so that it learns it was fenced even if it missed the
// publication. By now their leases have lapsed: the lease is shorter
// than the deadline, and a peer that missed a message renews it no
// more.
func (b *Bus) fence(w *wait) {
	need, ok := b.take(w)
	if !ok {
		return // its last reply came meanwhile
	}
	var notices []message
	b.pub.Lock()
	b.mu.Lock()
	for _, name := range need {
		if p := b.peers[name]; p != nil && p.member {
			// Out of the members and owed the notice in one step: a
			// heartbeat of the silent peer heard in between (it may
			// still send them) would make it a member again before it
			// has applied the notice. CI's race run found that window.
			b.seq++
			p.member, p.fencedAt = false, b.seq
			notices = append(notices, message{Kind: kindFence, From: b.opts.Name, Seq: b.seq, Sent: time.Now().UnixNano(), Fenced: name})
		}
	}
	for _, typ := range w.types {
		b.latencyOf(typ).fenced += int64(len(notices))
	}
	b.peersFenced.Add(int64(len(notices)))
	b.mu.Unlock()
	for i := range notices {
		_ = b.send(&notices[i], false)
	}
	b.pub.Unlock()
	// Logged outside pub: the log's writes must not hold up the other
	// commits' announcements.
	for i := range notices {
		b.opts.Log.Warn("coherence: peer fenced: no reply within the deadline", "peer", notices[i].Fenced, "deadline", b.opts.Deadline)
	}
	// Only now may the commits go: one that returns finds its silent
	// peers out of the members and counted.
	b.end(w, true)
	b.next()
}

// receive applies a message of a peer's subject (this server's own come
// back too: they prove the connection works and are otherwise ignored).
func (b *Bus) receive(msg *nats.Msg) {
	var m message
	if b.dec.decode(msg.Data, &m) != nil || m.From == b.opts.Name {
		return
	}
	now := time.Now()
	b.mu.Lock()
	p := b.peers[m.From]
	if p == nil {
		p = &peer{name: m.From, announced: map[uint64]*container.Writes{}}
		b.peers[m.From] = p
	}
	p.lastHeard, p.gone = now, false
	numbered := m.Kind != kindHeartbeat
	switch {
	case !p.known:
		p.known = true
	case numbered && m.Seq != p.lastSeq+1, !numbered && m.Seq > p.lastSeq:
		// A message of p's went missing: what this server has cached may
		// predate p's commits. It fences itself.
		b.gaps.Add(1)
		b.clearLocked(p)
	}
	if m.Seq > p.lastSeq || !numbered {
		p.lastSeq = max(p.lastSeq, m.Seq)
	}
	if m.Kind == kindHeartbeat {
		if len(m.Claims) > 0 {
			// Before the lease below: a server in sync knows its peers'
			// claims.
			b.cmu.Lock()
			for _, typ := range m.Claims {
				b.claimFrom(typ, m.From)
			}
			b.cmu.Unlock()
		}
		if slices.Contains(m.Members, b.opts.Name) {
			p.syncedUntil = time.Unix(0, m.Sent).Add(b.lease)
		} else {
			p.syncedUntil = time.Time{}
		}
		// A peer is waited for once heard, or, fenced, once it has
		// applied the notice.
		if !p.member && (p.fencedAt == 0 || m.Applied[b.opts.Name] >= p.fencedAt) {
			p.member, p.fencedAt = true, 0
		}
	} else if !p.syncedUntil.IsZero() {
		p.syncedUntil = time.Unix(0, m.Sent).Add(b.lease)
	}
	apply := !b.dropping.Load()
	deferred, skipped := false, false
	switch m.Kind {
	case kindClaim:
		deferred, skipped = b.takeClaim(m.Claim, m.From, msg.Reply, m.Seq)
	case kindAnnounce:
		for _, w := range m.Writes {
			switch {
			case !apply:
			case b.noDoubt.Load():
				// The test switch: dropped, and not held in doubt.
				b.invalidateLocked(&container.Writes{Phase: container.Settle, Items: w.Items}, func(int) bool { return false })
			default:
				p.announced[w.Announced] = w
				b.invalidateLocked(w, nil)
			}
		}
	case kindSettle:
		for _, w := range m.Writes {
			announced := w.Announced != 0 && p.announced[w.Announced] != nil
			delete(p.announced, w.Announced)
			if !apply {
				continue
			}
			if b.unmarkCreated.Load() {
				// The test switch: the created identities taken for
				// announced ones.
				for n := range w.Items {
					it := &w.Items[n]
					it.Keys, it.Created = append(it.Keys, it.Created...), nil
				}
			}
			b.invalidateLocked(w, func(int) bool { return announced })
			// An asynchronous item's latency is its delivery; a
			// synchronous one's, its announcement's round trip (on the
			// publisher).
			for _, it := range w.Items {
				if !it.Sync {
					b.latencyOf(it.Type).record(now.Sub(time.Unix(0, m.Sent)))
				}
			}
		}
	case kindFence:
		if m.Fenced == b.opts.Name {
			b.clearLocked(nil)
		}
	}
	b.updateSyncLocked(now)
	b.mu.Unlock()
	if msg.Reply != "" && !deferred {
		// nats.go copies the data before Publish returns.
		if m.Kind == kindClaim {
			b.replyBuf = appendClaimAnswer(b.replyBuf[:0], b.opts.Name, m.Seq, skipped)
		} else {
			b.replyBuf = appendReply(b.replyBuf[:0], b.opts.Name, m.Seq)
		}
		_ = b.nc.Publish(msg.Reply, b.replyBuf)
	}
}

func (b *Bus) invalidateLocked(w *container.Writes, announced func(int) bool) {
	if w == nil {
		return
	}
	for _, c := range b.containers {
		c.Invalidate(w, announced)
	}
}

// clearLocked fences this server: every container's coherent caches are
// cleared, and the marks of from's announced writes (all peers' when
// from is nil) are settled, as their settles may be what went missing.
func (b *Bus) clearLocked(from *peer) {
	b.selfFences.Add(1)
	for _, c := range b.containers {
		c.Clear(nil)
	}
	for _, p := range b.peers {
		if from == nil || p == from {
			b.settleMarksLocked(p)
		}
	}
}

// settleMarksLocked settles p's announced writes here.
func (b *Bus) settleMarksLocked(p *peer) {
	for seq, w := range p.announced {
		settle := container.Writes{Phase: container.Settle, Items: w.Items}
		b.invalidateLocked(&settle, nil)
		delete(p.announced, seq)
	}
}

// updateSyncLocked works out whether this server's caches may serve from
// memory, and tells the containers when that changes.
func (b *Bus) updateSyncLocked(now time.Time) {
	ok, heard := true, 0
	for _, p := range b.peers {
		if p.gone {
			continue
		}
		heard++
		ok = ok && now.Before(p.syncedUntil)
	}
	if b.opts.Servers > 0 && heard < b.opts.Servers-1 {
		ok = false
	}
	if ok != b.inSync {
		b.inSync = ok
		b.inSyncNow.Store(ok)
		for _, c := range b.containers {
			c.SetInSync(ok)
		}
	}
}

// heartbeats publishes a heartbeat every interval, expires silent peers
// and lets leases lapse.
func (b *Bus) heartbeats() {
	defer b.done.Done()
	tick := time.NewTicker(b.opts.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		m := message{Kind: kindHeartbeat, From: b.opts.Name, Applied: map[string]uint64{}, Claims: b.claimsDue(now)}
		b.mu.Lock()
		for name, p := range b.peers {
			if !p.gone && now.Sub(p.lastHeard) > b.opts.Expiry {
				b.opts.Log.Warn("coherence: peer gone: silent past the expiry", "peer", name, "expiry", b.opts.Expiry)
				p.gone, p.member, p.syncedUntil = true, false, time.Time{}
				b.settleMarksLocked(p)
			}
			if p.member && !p.gone {
				m.Members = append(m.Members, name)
			}
			if p.known {
				m.Applied[name] = p.lastSeq
			}
		}
		b.updateSyncLocked(now)
		b.mu.Unlock()
		b.pub.Lock()
		m.Seq, m.Sent = b.seq, time.Now().UnixNano()
		_ = b.send(&m, false)
		b.pub.Unlock()
	}
}

// Drop switches invalidation off (true) or on: messages still arrive,
// are numbered and acknowledged, but their writes are not applied. It
// is how a test shows its checks catch a cache left stale.
func (b *Bus) Drop(off bool) { b.dropping.Store(off) }

// Counts are the protocol's events of this server.
type Counts struct {
	// SelfFences: this server cleared its caches, fenced by a peer or
	// having missed a message (Gaps of them).
	SelfFences, Gaps int64
	// PeersFenced: peers this server gave up waiting for.
	PeersFenced int64
	// Members are the peers it waits for now.
	Members []string
	// AnnounceMessages carried AnnouncedCommits synchronous commits'
	// announcements: fewer messages than commits when commits came
	// while one waited for its replies (group commit).
	AnnounceMessages, AnnouncedCommits int64
	// ExposedWaits are the committed announcements whose replies were
	// still to come when the database commit was done (Await), and
	// Exposed the time their commits waited for them: the part of the
	// round trip the database commit did not hide. LostAnnouncements
	// could not be sent after the database had committed.
	ExposedWaits, LostAnnouncements int64
	Exposed                         time.Duration
}

// Counts of the bus so far.
func (b *Bus) Counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := Counts{SelfFences: b.selfFences.Load(), Gaps: b.gaps.Load(), PeersFenced: b.peersFenced.Load(),
		AnnounceMessages: b.announceMessages.Load(), AnnouncedCommits: b.announcedCommits.Load(),
		ExposedWaits: b.exposedWaits.Load(), Exposed: time.Duration(b.exposedNanos.Load()), LostAnnouncements: b.lostAnnouncements.Load()}
	for name, p := range b.peers {
		if p.member && !p.gone {
			c.Members = append(c.Members, name)
		}
	}
	slices.Sort(c.Members)
	return c
}
