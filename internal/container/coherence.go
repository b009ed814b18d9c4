package container

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// Coherence across app servers: when several app servers, each with its
// own container, share the database, a caching type's cache misses the
// other servers' commits. The container carries its commits' writes to
// its peers (Peers, internal/coherence over NATS) and takes theirs in
// (Invalidate), with the same two steps that keep one container right
// against its own concurrent writers (beginWrite, endWrite, finderWrites):
// a write is announced before the database commits it (the peers stop
// serving those identities and finder entries from memory, and hold them
// in doubt: marked) and settled after (they drop what they held and
// unmark them). Under invalidate the commit returns only once every live
// peer has applied the announcement, so no read that begins after a
// commit returned, on any server, sees data older than it: until the
// settle arrives the peers read those identities from the database, and
// what they read meanwhile they do not keep (the marks, lastWrite). The
// wait for the peers' replies overlaps the database commit (Peers.Await,
// decision 0034): a peer may apply the announcement before or after the
// row changes, and either way keeps nothing it read of the identity
// until the settle. The settle is not waited for: a lost one leaves
// identities marked until the numbering finds the gap
// (internal/coherence). invalidate-async settles only, without waiting,
// and its staleness is measured.
//
// A peer's cache of a coherent type serves from memory only while its
// peers say it is in sync (SetInSync: the bus's lease, see
// internal/coherence); a peer that missed messages clears it (Clear).
//
// Across servers the container's exclusive locks are per process and
// keep no other server's transaction out, so once told the run has
// several servers (AcrossServers) a read-write transaction reads the
// instances of updated types under exclusive concurrency as database
// concurrency does: with a locking read, never from the cache, and the
// database keeps two servers from both changing what they read.

// Peers carries a container's writes to the other app servers.
type Peers interface {
	// Publish sends one commit's writes to the peers, without waiting for
	// their replies. An announcement of synchronous items (Written.Sync)
	// must then be awaited (Await), once the database commit is done or
	// failed; an error means the bus could not send it, nothing is to
	// await, and the commit rolls back. The bus keeps no reference to w
	// or its lists once it returns (once Await returns, for an
	// announcement awaited): the transaction reuses them.
	Publish(ctx context.Context, w *Writes) error
	// Await ends the synchronous announcement Publish sent for w. After
	// the database committed it (committed), it returns once every live
	// peer has applied the announcement, fencing a peer that does not
	// answer within the bus's deadline (or, when the announcement could
	// not be sent, once the peers' leases have lapsed); it cannot be cut
	// short. Otherwise it lets go at once. The round trip thus overlaps
	// the database commit (decision 0034).
	Await(w *Writes, committed bool)
	// Claim asks the peers to publish typ's writes to this server: a
	// peer publishes a type only once some other server has claimed it
	// (decision 0044). It returns at once; the bus calls
	// Container.Claimed once every peer has answered, and until then the
	// type serves nothing from memory here.
	Claim(typ string)
	// Latency is the type's invalidation latency as the bus measures it
	// (a synchronous round trip, or an asynchronous message's delivery).
	Latency(typ string) Latency
	// ResetLatency forgets the latencies so far, as ResetStats does the
	// counters after a warm-up.
	ResetLatency()
}

// Latency are percentiles of an invalidation's latency.
type Latency struct {
	P50, P99, Max time.Duration
	// PeersFenced: peers the bus stopped waiting for, as they missed the
	// deadline on a commit of the type.
	PeersFenced int64
	// Unclaimed: committed commits whose writes of the type the bus did
	// not publish, as no peer had claimed the type.
	Unclaimed int64
}

// Phase of a write's publication.
type Phase uint8

const (
	// Announce: before the database commit; the peers stop serving the
	// identities and finder entries from memory.
	Announce Phase = 1 + iota
	// Settle: after the commit (or rollback); the peers drop what they
	// hold of them and, for an announced item, unmark them.
	Settle
)

// Writes are what one commit publishes.
type Writes struct {
	Phase Phase
	Items []Written
	// Announced is the Peers' name of the announcement a Settle settles,
	// set by Publish on Announce; 0 when none was made.
	Announced uint64 `json:"-"`
}

// Written are one type's writes in a commit.
type Written struct {
	Type string
	// Sync: the type's mode is invalidate: the item is announced before
	// the commit (the publisher waits for every live peer) and settled
	// after (it does not wait).
	Sync    bool
	Keys    []Key
	Finders []FinderEntry `json:",omitempty"`
	// Created are identities the commit creates, named in a settle only:
	// no peer can hold a row that does not exist yet, so the announcement
	// leaves them out (nothing to hold in doubt, nothing to wait for),
	// and the settle drops them and never unmarks them. The marks a
	// settle lifts are exactly its announcement's Keys, so it cannot
	// lift another commit's mark of the same identity (decision 0044).
	Created []Key `json:",omitempty"`
}

// FinderEntry is a finder cache entry a write can change: the entry of
// Args, or All the finder's entries.
type FinderEntry struct {
	Finder string
	Args   string `json:",omitempty"`
	All    bool   `json:",omitempty"`
}

// AttachPeers connects the container to its peers; the types whose
// coherence is invalidate or invalidate-async publish their writes
// through p from then on. Call it before the container serves.
func (c *Container) AttachPeers(p Peers) {
	c.peers = p
	for _, h := range c.homes {
		h.coherent = h.s.Invalidates()
		// Sampled read-backs measure the staleness the mode allows: the
		// asynchronous messages' window, option D's refresh interval.
		h.readBack = h.s.CommitOption.caches() && (h.s.Coherence == InvalidateAsync || h.s.CommitOption == OptionD)
	}
}

// AcrossServers tells the container that other app servers share its
// database: read-write transactions then load the instances of updated
// types under exclusive concurrency with locking reads (see the comment
// at the top). Call it before the container serves.
func (c *Container) AcrossServers() {
	for _, h := range c.homes {
		h.clusterLocks = h.s.Concurrency == Exclusive && h.t.Updated
	}
}

// Invalidates reports whether a type of these settings sends and takes
// invalidation messages across app servers: its mode is invalidate or
// invalidate-async and its commit option keeps data (A, D); B and C keep
// none to invalidate.
func (s Settings) Invalidates() bool {
	return (s.Coherence == Invalidate || s.Coherence == InvalidateAsync) && s.CommitOption.caches()
}

// SetInSync says whether the coherent types' caches may serve from
// memory: false while the bus cannot vouch that no peer's commit has
// gone unseen.
func (c *Container) SetInSync(ok bool) { c.outOfSync.Store(!ok) }

// Invalidate applies a peer's writes: on Announce it marks the
// identities and finder entries as being written (no find is served from
// memory for them) and drops their cached data; on Settle it drops them
// again, unmarks the announced ones, and numbers the write so that data
// read by a transaction that began before it is not kept (lastWrite).
// announced says which items of a Settle were announced to this
// container (a peer that joined mid-commit saw only the settle). A
// settle's created identities (Written.Created) were never announced:
// they are dropped, never unmarked.
func (c *Container) Invalidate(w *Writes, announced func(item int) bool) {
	for n := range w.Items {
		it := &w.Items[n]
		h := c.Home(it.Type)
		if h == nil || !h.coherent {
			continue
		}
		unmark := w.Phase == Settle && it.Sync && (announced == nil || announced(n))
		for _, k := range it.Keys {
			s := h.shardOf(k)
			s.mu.Lock()
			switch {
			case w.Phase == Announce:
				s.writing[k]++
			case unmark:
				if m := s.writing[k] - 1; m > 0 {
					s.writing[k] = m
				} else {
					delete(s.writing, k)
				}
			}
			s.invalidateKey(k, nil)
			s.mu.Unlock()
		}
		for _, k := range it.Created {
			s := h.shardOf(k)
			s.mu.Lock()
			s.invalidateKey(k, nil)
			s.mu.Unlock()
		}
		if h.finders != nil {
			h.finders.remote(it.Finders, w.Phase == Announce, unmark)
		}
		if w.Phase == Settle {
			h.noteWrite(c.writes.Add(1))
			h.received.Add(int64(len(it.Keys) + len(it.Created) + len(it.Finders)))
		}
	}
}

// Clear drops every cached instance's data and finder entry of the named
// coherent types (all of them when types is nil): the bus calls it when
// this server was fenced or missed a peer's message, so that what it
// serves next comes from the database.
func (c *Container) Clear(types []string) {
	for _, h := range c.homes {
		if !h.coherent || (types != nil && !slices.Contains(types, h.t.Name)) {
			continue
		}
		h.dropCached()
		h.fences.Add(1)
	}
}

// dropCached drops every cached instance's data and finder entry of h,
// and numbers a write, so that data read by a transaction begun before
// is not kept either.
func (h *Home) dropCached() {
	for n := range h.shards {
		s := &h.shards[n]
		s.mu.Lock()
		for k := range s.cache {
			s.invalidateKey(k, nil)
		}
		s.mu.Unlock()
	}
	if h.finders != nil {
		h.finders.clearAll()
	}
	h.noteWrite(h.ctr.writes.Add(1))
}

// Claimed lets the named coherent types (all of them when types is nil)
// serve from memory: every peer has answered this server's claim
// (Peers.Claim), so that their commits of the types are published here
// from now on and those before are in the database. Unless current (no
// peer ever left the types out of what it published), what the cache
// holds of them may predate a commit nobody announced here (a warm-up's
// or a read-write transaction's loads) and is dropped first.
func (c *Container) Claimed(types []string, current bool) {
	for _, h := range c.homes {
		if !h.coherent || (types != nil && !slices.Contains(types, h.t.Name)) || h.claimed.Load() {
			continue
		}
		if !current {
			h.dropCached()
		}
		h.claimed.Store(true)
	}
}

// collectWrites gathers, into w, the writes of the coherent types this
// commit makes, its writes of writer types as writes of their coherent
// read-mostly types too; sync: only those of invalidate types, for the
// announcement. A created identity is left out of the announcement and
// named in the settle's Created (see Written.Created); the finder
// entries a creation changes are announced as any write's. A type whose
// writes are all creations and change no cached finder entry has no
// item in the announcement: a commit that only creates such instances
// announces nothing and waits for nobody.
func (tx *Tx) collectWrites(w *Writes, sync bool) {
	w.Items = w.Items[:0]
	for _, i := range tx.enlisted {
		h := i.home
		if !(i.stored || i.created || i.removed) || (i.created && i.removed) {
			continue
		}
		// Only an instance created and not removed is created here (one
		// created and removed by the commit is skipped above); one removed
		// and created again under the same key is two instances, and the
		// removed one's key is announced.
		created := i.created
		if h.coherent && (!sync || h.s.Coherence == Invalidate) && !(sync && created && h.finders == nil) {
			it, _ := w.item(h)
			it.addKey(i.key, created, sync)
			if h.finders != nil {
				h.finders.touched(i, func(f *finderEntries, args string, all bool) {
					it.Finders = append(it.Finders, FinderEntry{Finder: f.plan.name, Args: args, All: all})
				})
			}
		}
		if tx.ctr.skipMirrors {
			continue
		}
		for _, m := range h.mirrors {
			if !m.coherent || (sync && m.s.Coherence != Invalidate) || (sync && created && len(m.mirrorFinders) == 0) {
				continue
			}
			it, added := w.item(m)
			it.addKey(i.key, created, sync)
			if added {
				it.Finders = append(it.Finders, m.mirrorFinders...)
			}
		}
	}
}

// addKey adds key to the item: to Keys, or, created, to Created in a
// settle and nowhere in an announcement.
func (it *Written) addKey(key Key, created, announce bool) {
	switch {
	case !created:
		it.Keys = append(it.Keys, key)
	case !announce:
		it.Created = append(it.Created, key)
	}
}

// item is the item of h's writes in w, added (empty) if w has none yet.
func (w *Writes) item(h *Home) (it *Written, added bool) {
	n := slices.IndexFunc(w.Items, func(it Written) bool { return it.Type == h.t.Name })
	if n >= 0 {
		return &w.Items[n], false
	}
	isSync := h.s.Coherence == Invalidate
	// The transaction's Writes are reused, their items' lists too: the
	// bus has encoded them by the time Publish returns.
	n = len(w.Items)
	if n < cap(w.Items) {
		w.Items = w.Items[:n+1]
		it := &w.Items[n]
		it.Type, it.Sync, it.Keys, it.Finders, it.Created = h.t.Name, isSync, it.Keys[:0], it.Finders[:0], it.Created[:0]
	} else {
		w.Items = append(w.Items, Written{Type: h.t.Name, Sync: isSync})
	}
	return &w.Items[n], true
}

// announceToPeers publishes the commit's synchronous writes before the
// database commits them, without waiting for the peers' replies
// (settleWithPeers awaits them, after the database commit); the error
// when the bus could not (the commit then rolls back).
func (tx *Tx) announceToPeers() error {
	if tx.ctr.peers == nil {
		return nil
	}
	w := &tx.published
	tx.collectWrites(w, true)
	if len(w.Items) == 0 {
		return nil
	}
	w.Phase, w.Announced = Announce, 0
	tx.announced = true
	err := tx.ctr.peers.Publish(tx.ctx, w)
	tx.awaiting = err == nil
	return err
}

// settleWithPeers waits, after the database commit (committed) or
// rollback, for the replies to the commit's announcement (Peers.Await),
// then publishes the commit's writes: every coherent type's, or, after a
// rollback, only those announced. A peer that does not answer is fenced
// by the bus; a bus that cannot send leaves the peers' leases to lapse,
// so the error changes nothing here.
func (tx *Tx) settleWithPeers(committed bool) {
	if tx.ctr.peers == nil || (!committed && !tx.announced) {
		return
	}
	w := &tx.published
	if tx.awaiting {
		tx.awaiting = false
		tx.ctr.peers.Await(w, committed)
	}
	tx.collectWrites(w, !committed)
	if !tx.announced {
		w.Announced = 0
	}
	tx.announced = false
	if len(w.Items) == 0 {
		return
	}
	w.Phase = Settle
	_ = tx.ctr.peers.Publish(context.WithoutCancel(tx.ctx), w)
	// Counted once published: the bus leaves out the types no peer has
	// claimed (it counts those, Latency.Unclaimed).
	if committed {
		for _, it := range w.Items {
			h := tx.ctr.Home(it.Type)
			tx.count(h, invalidationCommits, 1)
			tx.count(h, invalidationsSent, int64(len(it.Keys)+len(it.Created)+len(it.Finders)))
			if it.Sync {
				// What the announcement left out (decision 0044): the
				// created identities, and the whole item when that was
				// all it had.
				tx.count(h, createsUnannounced, int64(len(it.Created)))
				if len(it.Keys)+len(it.Finders) == 0 {
					tx.count(h, commitsUnannounced, 1)
				}
			}
		}
	}
}

// servesFromMemory reports whether h's cached data may serve a find: a
// coherent type's only while the bus vouches for it, and once the peers
// have answered this server's claim of the type (claimFor).
func (h *Home) servesFromMemory() bool {
	return !h.coherent || (h.claimed.Load() && !h.ctr.outOfSync.Load())
}

// claimFor makes this server's claim of h's type (once; see Peers.Claim)
// when tx's find of it could be served from memory: not a read-write
// transaction's across servers (it reads the database), nor the
// warm-up's (it fills the cache, and would claim Stock-Online's Account,
// which nothing reads from memory), so that a type only they read is
// never claimed and its commits wait for nobody.
func (tx *Tx) claimFor(h *Home) {
	if h.coherent && !h.claimed.Load() && !tx.warming && !tx.bypassesCache(h) && h.claiming.CompareAndSwap(false, true) {
		h.ctr.peers.Claim(h.t.Name)
	}
}

// bypassesCache: a read-write transaction across servers loads an
// updated exclusive type from the database (see AcrossServers).
func (tx *Tx) bypassesCache(h *Home) bool { return h.clusterLocks && !tx.readOnly }

// readBackEvery is the share of cache hits of a type whose staleness is
// measured (readBack) that are checked against the database.
const readBackEvery = 16

// readBack checks a sampled cache hit against the database: data that
// differs from the row read just after it is a stale read observed. A
// write of the type noted meanwhile makes the sample inconclusive (the
// row may have moved after the hit); a commit landing between the hit
// and the read with its notice still on its way counts, so the count is
// an upper bound.
func (tx *Tx) readBack(i *Instance) error {
	h := i.home
	tx.hitsSinceCheck++
	if tx.hitsSinceCheck < readBackEvery {
		return nil
	}
	tx.hitsSinceCheck = 0
	seen := h.lastWrite.Load()
	q, err := tx.reader(h)
	if err != nil {
		return err
	}
	tx.args = h.t.keyArgs(&i.key, tx.args[:0])
	if cap(tx.backVals) < len(h.t.Fields)+1 {
		tx.backVals = make([]Value, len(h.t.Fields)+1)
	}
	vals := tx.backVals[:len(h.t.Fields)+1]
	tx.dest = tx.dest[:0]
	for f, c := range h.t.Fields {
		tx.dest = append(tx.dest, valueDest(c.Kind, &vals[f]))
	}
	if h.t.Version != "" {
		tx.dest = append(tx.dest, &vals[len(h.t.Fields)].I)
	}
	err = q.QueryRow(tx.ctx, h.sql.load, tx.args...).Scan(tx.dest...)
	if h.lastWrite.Load() != seen {
		return nil
	}
	tx.count(h, readBacks, 1)
	switch {
	case notFound(err) == ErrNotFound:
		tx.count(h, staleReads, 1)
	case err != nil:
		return err
	default:
		for f, c := range h.t.Fields {
			if !sameValue(c.Kind, &vals[f], &i.vals[f]) {
				tx.count(h, staleReads, 1)
				break
			}
		}
	}
	return nil
}

// sameValue compares two values of a field of kind k.
func sameValue(k Kind, a, b *Value) bool {
	switch k {
	case Int:
		return a.I == b.I
	case Float:
		return a.F == b.F
	case String:
		return a.S == b.S
	case Time:
		return a.T.Equal(b.T)
	}
	return string(a.B) == string(b.B)
}

// coherenceState are a home's counts of its peers' messages, written by
// the bus's goroutine.
type coherenceState struct {
	received, fences atomic.Int64
	// claiming: this server has claimed the type (Peers.Claim); claimed:
	// every peer has answered, and the type serves from memory.
	claiming, claimed atomic.Bool
}
