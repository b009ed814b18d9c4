package coherence

import (
	"slices"
	"time"

	"github.com/tierbench/tierbench/internal/container"
)

// Claims (decision 0044): a server publishes a coherent type's writes
// only once another server has claimed the type, that is, asked for
// them before it first serves the type from memory. A type no peer
// serves from memory (Stock-Online's Account, read only by read-write
// transactions, which across servers read it from the database) is then
// neither announced nor settled, and its commits wait for nobody.
//
// The handshake: the claimer publishes a numbered claim with a reply
// subject, resent while unanswered, and serves the type from memory only
// once every peer has answered (with the run's server count known, every
// one of its N-1 peers), having dropped what it held of the type. A peer
// records the claim, so that its commits decide from then on to publish
// the type, and answers only once its commits that decided not to have
// finished their database commits (counted per type, the answer deferred
// meanwhile, never blocking the goroutine that receives every peer's
// messages). So after the last answer every commit of the type is either
// visible in the database or published to the claimer. A commit's settle
// follows its announcement's decision (kept by announcement number), as
// a settle unmarks what its announcement marked. A publisher skips a type
// only while in sync (it has heard every peer's heartbeat, which lists
// the peer's claims, so a server that joins late learns them), and only
// when the run's server count is known. Claims are never withdrawn.

// ownClaim is this server's claim of a type.
type ownClaim struct {
	// seqs are the numbers of the claim messages sent (any one's answer
	// counts), the last sent when.
	seqs map[uint64]bool
	sent time.Time
	// answered are the peers that answered any round of it; stale: one
	// of them had left the type out before (what this server holds of it
	// may predate a commit it did not hear of).
	answered map[string]bool
	stale    bool
	done     bool
	// applied: the containers have been told (Container.Claimed
	// returned), so they serve the type from memory; done comes first.
	applied bool
}

// deferredReply is a claim's answer held until the commits that skipped
// the type have finished their database commits.
type deferredReply struct {
	subject string
	seq     uint64
}

// claimState is the bus's part of the claims, guarded by cmu (taken
// last: under pub or mu, never the other way).
type claimState struct {
	// skips: publishers may leave out unclaimed types (the run's server
	// count is known); set at Open.
	skips bool
	// claimedBy are the peers that claimed each type.
	claimedBy map[string]map[string]bool
	// skipping counts, per type, this server's commits that decided not
	// to announce it and have not finished their database commit;
	// deferred are the claims of it answered once that count is 0.
	skipping map[string]int
	deferred map[string][]deferredReply
	// skipped are the types each pending announcement left out (by
	// announcement number), until its settle.
	skipped map[uint64][]string
	// unclaimed counts the committed commits that published nothing of
	// a type, per type (Latency.Unclaimed); everSkipped are the types
	// this server has ever left out (its claims' answers say so).
	unclaimed   map[string]int64
	everSkipped map[string]bool
	mine        map[string]*ownClaim
}

func (c *claimState) init(skips bool) {
	c.skips = skips
	c.claimedBy, c.skipping, c.deferred = map[string]map[string]bool{}, map[string]int{}, map[string][]deferredReply{}
	c.skipped, c.unclaimed, c.mine = map[uint64][]string{}, map[string]int64{}, map[string]*ownClaim{}
	c.everSkipped = map[string]bool{}
}

// claimFrom records that peer claimed typ. Called with cmu held.
func (b *Bus) claimFrom(typ, peer string) {
	by := b.claimedBy[typ]
	if by == nil {
		by = map[string]bool{}
		b.claimedBy[typ] = by
	}
	by[peer] = true
}

// leaveOutUnclaimed removes from announcement w the items of the types
// no peer has claimed, counting each as a commit in flight that skipped
// it, and returns their types.
func (b *Bus) leaveOutUnclaimed(w *container.Writes) []string {
	if !b.skips || !b.inSyncNow.Load() {
		return nil
	}
	var skipped []string
	b.cmu.Lock()
	defer b.cmu.Unlock()
	for _, it := range w.Items {
		if len(b.claimedBy[it.Type]) == 0 {
			skipped = append(skipped, it.Type)
			b.skipping[it.Type]++
			b.everSkipped[it.Type] = true
		}
	}
	if skipped != nil {
		removeItems(w, func(it *container.Written) bool { return slices.Contains(skipped, it.Type) })
	}
	return skipped
}

// removeItems removes w's items that drop says to, keeping the removed
// items' lists past the end for the transaction to reuse.
func removeItems(w *container.Writes, drop func(*container.Written) bool) {
	kept := 0
	for n := range w.Items {
		if !drop(&w.Items[n]) {
			w.Items[kept], w.Items[n] = w.Items[n], w.Items[kept]
			kept++
		}
	}
	w.Items = w.Items[:kept]
}

// leaveOutSettled removes from settle w the items its announcement left
// out, and, of the types no peer has claimed, the items that unmark
// nothing anywhere: asynchronous ones, ones whose commit announced none
// (only creations, or a rollback before the announcement went out).
// Decided after the database commit, these need no count in flight: a
// claim recorded before the decision gets the settle, one recorded after
// finds the commit in the database. It counts the committed commits'
// (an asynchronous item, or a creations-only one, is in a committed
// commit's settle only; Await counts the announcement's).
func (b *Bus) leaveOutSettled(w *container.Writes) {
	if !b.skips {
		return
	}
	inSync := b.inSyncNow.Load()
	b.cmu.Lock()
	defer b.cmu.Unlock()
	skipped := b.skipped[w.Announced]
	delete(b.skipped, w.Announced)
	removeItems(w, func(it *container.Written) bool {
		if slices.Contains(skipped, it.Type) {
			return true
		}
		if !inSync || len(b.claimedBy[it.Type]) > 0 {
			return false
		}
		created := len(it.Keys)+len(it.Finders) == 0
		if !it.Sync || created || w.Announced == 0 {
			if !it.Sync || created {
				b.unclaimed[it.Type]++
			}
			b.everSkipped[it.Type] = true
			return true
		}
		return false
	})
}

// endSkips ends the skips of announcement n, its database commit done
// or abandoned, and sends the claims' answers that waited for them.
// Called with pub held.
func (b *Bus) endSkips(n uint64) {
	var send []deferredReply
	b.cmu.Lock()
	for _, typ := range b.skipped[n] {
		if b.skipping[typ]--; b.skipping[typ] <= 0 {
			delete(b.skipping, typ)
			send = append(send, b.deferred[typ]...)
			delete(b.deferred, typ)
		}
	}
	b.cmu.Unlock()
	for _, r := range send {
		// Not the receiving goroutine's buffer: this is a commit's. The
		// type was left out, by the commits just ended.
		_ = b.nc.Publish(r.subject, appendClaimAnswer(nil, b.opts.Name, r.seq, true))
	}
}

// countUnclaimed counts the types committed announcement n left out.
// Called with pub held.
func (b *Bus) countUnclaimed(n uint64) {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	for _, typ := range b.skipped[n] {
		b.unclaimed[typ]++
	}
}

// takeClaim records peer's claim of typ (a claim message, numbered seq,
// whose answer goes to reply) and reports whether the answer must wait
// for commits in flight that skipped the type, and, when not, whether
// this server ever left the type out. Called with mu held.
func (b *Bus) takeClaim(typ, peer, reply string, seq uint64) (deferred, skipped bool) {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	b.claimFrom(typ, peer)
	if b.skipping[typ] == 0 || reply == "" || b.noDrain.Load() {
		return false, b.everSkipped[typ]
	}
	b.deferred[typ] = append(b.deferred[typ], deferredReply{subject: reply, seq: seq})
	return true, true
}

// Claim asks the peers to publish typ's writes here (container.Peers):
// it sends the claim on a goroutine of its own and returns (the
// container calls it holding a shard's mutex, which Container.Claimed
// takes); the answers complete it.
func (b *Bus) Claim(typ string) { go b.claimRound(typ) }

// claimRound sends (or sends again) this server's claim of typ.
func (b *Bus) claimRound(typ string) {
	b.pub.Lock()
	b.seq++
	m := message{Kind: kindClaim, From: b.opts.Name, Seq: b.seq, Sent: time.Now().UnixNano(), Claim: typ}
	b.cmu.Lock()
	c := b.mine[typ]
	if c == nil {
		c = &ownClaim{seqs: map[uint64]bool{}, answered: map[string]bool{}}
		b.mine[typ] = c
	}
	c.seqs[m.Seq], c.sent = true, time.Now()
	b.cmu.Unlock()
	_ = b.send(&m, true) // a claim not sent is sent again (heartbeats)
	b.pub.Unlock()
	b.checkClaim(typ)
}

// claimAnswered takes a peer's answer to claim message seq (skipped:
// the peer had left the type out); false when seq is no claim's.
func (b *Bus) claimAnswered(seq uint64, from string, skipped bool) bool {
	b.cmu.Lock()
	var typ string
	for t, c := range b.mine {
		if c.seqs[seq] {
			typ = t
			c.answered[from] = true
			c.stale = c.stale || skipped
		}
	}
	b.cmu.Unlock()
	if typ == "" {
		return false
	}
	b.checkClaim(typ)
	return true
}

// checkClaim completes this server's claim of typ once every peer
// heard, and with the run's server count known at least N-1 of them,
// has answered: the containers may then serve the type from memory.
func (b *Bus) checkClaim(typ string) {
	b.mu.Lock()
	var live []string
	for name, p := range b.peers {
		if !p.gone {
			live = append(live, name)
		}
	}
	containers := b.containers
	b.mu.Unlock()
	b.cmu.Lock()
	c := b.mine[typ]
	complete := c != nil && !c.done && len(c.answered) >= b.opts.Servers-1
	for _, name := range live {
		complete = complete && c.answered[name]
	}
	current := false
	if complete {
		c.done, current = true, !c.stale
	}
	b.cmu.Unlock()
	if complete {
		for _, ctr := range containers {
			ctr.Claimed([]string{typ}, current)
		}
		b.cmu.Lock()
		c.applied = true
		b.cmu.Unlock()
	}
}

// claimsDue sends again the claims unanswered for a deadline, and checks
// the others (a peer gone may have been all they waited for); it returns
// the types this server claims, for its heartbeat. Called by the
// heartbeats, with no lock held.
func (b *Bus) claimsDue(now time.Time) []string {
	var types, again, check []string
	b.cmu.Lock()
	for typ, c := range b.mine {
		types = append(types, typ)
		switch {
		case c.done:
		case now.Sub(c.sent) > b.opts.Deadline:
			again = append(again, typ)
		default:
			check = append(check, typ)
		}
	}
	b.cmu.Unlock()
	for _, typ := range again {
		b.claimRound(typ)
	}
	for _, typ := range check {
		b.checkClaim(typ)
	}
	slices.Sort(types)
	return types
}

// unclaimedOf is the count of typ's commits that published nothing.
func (b *Bus) unclaimedOf(typ string) int64 {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	return b.unclaimed[typ]
}
