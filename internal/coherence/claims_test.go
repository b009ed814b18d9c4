package coherence

import (
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// A server publishes a type's writes only once another has claimed it
// (decision 0044): claims.go.

// claimAll makes each bus claim typ and waits until every claim has all
// its answers.
func claimAll(t testing.TB, typ string, buses ...*Bus) {
	t.Helper()
	for _, b := range buses {
		b.Claim(typ)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		done := true
		for _, b := range buses {
			done = done && b.claimDone(typ)
		}
		if done {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the claims of %s not answered after 10s", typ)
		}
	}
}

// claimDone reports whether the bus's claim of typ has every answer and
// its containers have been told: they serve the type from memory.
func (b *Bus) claimDone(typ string) bool {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	c := b.mine[typ]
	return c != nil && c.applied
}

// claimCount is how many types the bus has claimed.
func (b *Bus) claimCount() int {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	return len(b.mine)
}

// skipsInFlight are the bus's commits in flight that left typ out, and the
// claims of it whose answers wait for them.
func (b *Bus) skipsInFlight(typ string) (skipping, deferred int) {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	return b.skipping[typ], len(b.deferred[typ])
}

// Commits of a type nobody has claimed publish nothing of it: s0's
// read-write transactions (which across servers read from the database
// and claim nothing) change account 1 three times, and neither announce
// nor settle it. s1's first read claims the type; once s0 has answered,
// s1 serves it from memory, and s0's next commit announces it (s1 reads
// its value, not the cached one). s0's own claim then keeps what it
// read before the answer, as s1 never left the type out.
func TestUnclaimedTypeIsNotPublished(t *testing.T) {
	url := testNATS(t)
	nodes := newCluster(t, storetest.SQLite(t), url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
		clusterOpts{servers: 2, threads: 1, deadline: 2 * time.Second, lazyClaims: true})
	s0, s1 := nodes[0], nodes[1]
	w := listen(t, url, s0)
	h := &history{}
	for range 3 {
		addOn(t, s0, h, 1, 10)
	}
	if st := s0.h.Stats(); st.InvalidationCommits != 0 || st.CommitsUnclaimed != 3 {
		t.Errorf("s0's Account before any claim: %d commits published, %d unclaimed; want 0 and 3", st.InvalidationCommits, st.CommitsUnclaimed)
	}
	if c := s0.bus.Counts(); c.AnnouncedCommits != 0 {
		t.Errorf("%d commits announced before any claim; want 0", c.AnnouncedCommits)
	}
	if s0.bus.claimCount() != 0 {
		t.Errorf("s0 claimed Account: its read-write transactions read it from the database")
	}
	readOn(t, s1, h, 1) // from the database: the claim is made now
	waitFor(t, "s1's claim is answered", func() bool { return s1.bus.claimDone("Account") })
	readOn(t, s1, h, 1) // a load: the claim dropped what s1 held
	hits := s1.h.Stats().CacheHits
	readOn(t, s1, h, 1)
	if got := s1.h.Stats().CacheHits - hits; got != 1 {
		t.Errorf("s1's read after its claim: %d cache hits; want 1", got)
	}
	addOn(t, s0, h, 1, 10)
	readOn(t, s1, h, 1)
	if st := s0.h.Stats(); st.InvalidationCommits != 1 || st.CommitsUnclaimed != 3 {
		t.Errorf("s0's Account after s1's claim: %d commits published, %d unclaimed; want 1 and 3", st.InvalidationCommits, st.CommitsUnclaimed)
	}
	if v := h.check(t, s0.db, promise{noStale: true}); len(v.problems) > 0 {
		t.Errorf("the checker found %q; want none", v.problems)
	}
	// s0's own claim: s1 never left Account out, so what s0 read before
	// the answer came is kept, and served once it has.
	readOn(t, s0, h, 2)
	waitFor(t, "s0's claim is answered", func() bool { return s0.bus.claimDone("Account") })
	hits = s0.h.Stats().CacheHits
	readOn(t, s0, h, 2)
	if got := s0.h.Stats().CacheHits - hits; got != 1 {
		t.Errorf("s0's read after its claim, answered by a peer that left nothing out: %d cache hits; want 1", got)
	}
	waitFor(t, "the test's subscriber hears the settle", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.settles == 1
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.announcedKeys != 1 || w.settledKeys != 1 {
		t.Errorf("s0 announced %d identities and settled %d; want 1 and 1 (the commit after the claim)", w.announcedKeys, w.settledKeys)
	}
}

// A claim is answered only once the commits that left the type out have
// finished their database commits. The steps, on PostgreSQL, where a
// transaction outside the servers holds s0's commit back (an uncommitted
// insert of the key s0 creates):
//
//  1. s0 adds to account 1 and creates account 99, and commits: nobody
//     has claimed Account, so it announces nothing, and its database
//     commit waits for the other insert;
//  2. s1 reads account 1, which claims the type;
//  3. s1 reads account 1 again: the row before s0's commit;
//  4. the other transaction rolls back, s0's commit returns;
//  5. s1 reads account 1 once more, once its claim is answered.
//
// Sound, s0 answers after its database commit: s1 serves nothing from
// memory before (3 is not kept), and 5 reads the committed row. Made
// unsound on purpose (Bus.noDrain: s0 answers at once), s1 serves the
// row of 3 from memory in 5, after s0's commit returned: the serial
// model's checker refuses the stale read.
func TestSerialModelCatchesClaimAnsweredEarly(t *testing.T) {
	url := testNATS(t)
	dsn := storetest.Postgres(t)
	for _, unsound := range []bool{false, true} {
		nodes := newCluster(t, dsn, url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
			clusterOpts{servers: 2, threads: 1, deadline: 5 * time.Second, lazyClaims: true})
		s0, s1 := nodes[0], nodes[1]
		s0.bus.noDrain.Store(unsound)
		h := &history{}

		// 1.
		began := h.now()
		held := holdCommit(t, dsn, s0, 1, nil)
		read, committed := held.read, held.committed
		waitFor(t, "s0's commit leaves Account out", func() bool { skipping, _ := s0.bus.skipsInFlight("Account"); return skipping == 1 })

		// 2.
		readOn(t, s1, h, 1)
		if unsound {
			waitFor(t, "s0 answers s1's claim at once", func() bool { return s1.bus.claimDone("Account") })
		} else {
			waitFor(t, "s0 holds its answer to s1's claim", func() bool { _, deferred := s0.bus.skipsInFlight("Account"); return deferred == 1 })
			if s1.bus.claimDone("Account") {
				t.Fatal("s1's claim answered while s0's commit that left Account out is in flight")
			}
		}

		// 3.
		readOn(t, s1, h, 1)
		select {
		case err := <-committed:
			t.Fatalf("unsound=%v: s0's commit returned (%v) while its insert waited for the other transaction", unsound, err)
		default:
		}

		// 4.
		held.release()
		if err := <-committed; err != nil {
			t.Fatal(err)
		}
		ended := h.now()
		h.writes = append(h.writes, write{key: 1, read: read, wrote: read + 10, began: began, ended: ended})

		// 5.
		waitFor(t, "s1's claim is answered", func() bool { return s1.bus.claimDone("Account") })
		hits := s1.h.Stats().CacheHits
		readOn(t, s1, h, 1)
		hit := s1.h.Stats().CacheHits > hits

		h.check(t, s0.db, promise{noStale: true}).oneStaleReadIf(t, unsound, hit, "claim answered early")
	}
}
