package coherence

import (
	"slices"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// deafen stops the bus hearing its peers (it still publishes its
// heartbeats), as a server whose inbound messages are lost would;
// hearAgain subscribes it again.
func (b *Bus) deafen(t *testing.T) {
	t.Helper()
	if err := b.fromPeers.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func (b *Bus) hearAgain(t *testing.T) {
	t.Helper()
	sub, err := b.nc.Subscribe(b.prefix+".peer.*", b.receive)
	if err != nil {
		t.Fatal(err)
	}
	b.fromPeers = sub
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond (state another goroutine moves: the bus's leases
// and heartbeats) until it holds or 5s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not after 5s: %s", what)
		}
	}
}

// A peer that does not answer within the deadline is fenced: the commit
// returns after the deadline, the peer is no longer waited for, and by
// then its lease has lapsed, so it serves nothing from memory and reads
// the commit's data. Heard again, it finds the numbers it missed,
// clears its cache, and is waited for once more.
func TestSilentPeerIsFencedAndComesBack(t *testing.T) {
	url := testNATS(t)
	const deadline = 500 * time.Millisecond
	nodes := newCluster(t, storetest.SQLite(t), url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
		clusterOpts{servers: 2, threads: 1, deadline: deadline})
	s0, s1 := nodes[0], nodes[1]
	h := &history{}
	readOn(t, s1, h, 1)
	readOn(t, s1, h, 1)
	if hits := s1.h.Stats().CacheHits; hits != 1 {
		t.Fatalf("s1: %d cache hits before the silence, want 1", hits)
	}

	s1.bus.deafen(t)
	start := time.Now()
	addOn(t, s0, h, 1, 10)
	if took := time.Since(start); took < deadline {
		t.Errorf("the commit returned after %v, before the deadline %v, without s1's reply", took, deadline)
	}
	if c := s0.bus.Counts(); c.PeersFenced != 1 || slices.Contains(c.Members, "s1") {
		t.Errorf("s0 after the deadline: %+v; want s1 fenced and not waited for", c)
	}
	// s1 still sends heartbeats, naming no fence notice applied: they
	// must not make it a member again, however many come.
	time.Sleep(5 * deadline / 20)
	if c := s0.bus.Counts(); slices.Contains(c.Members, "s1") {
		t.Errorf("s0 after s1's heartbeats: %+v; want s1 kept out until it applies the fence notice", c)
	}
	if st := s0.h.Stats(); st.PeersFenced != 1 {
		t.Errorf("s0's Account stats: %d peers fenced, want 1", st.PeersFenced)
	}
	// s1 heard nothing since: its lease has lapsed.
	if s1.bus.synced() {
		t.Fatal("s1 still serves from memory after missing a commit for longer than the deadline")
	}
	readOn(t, s1, h, 1)
	if hits := s1.h.Stats().CacheHits; hits != 1 {
		t.Errorf("s1 served %d more cache hits while fenced", hits-1)
	}
	if v := h.check(t, s0.db, promise{noStale: true}); len(v.problems) > 0 {
		t.Errorf("while s1 was silent: %q", v.problems)
	}

	s1.bus.hearAgain(t)
	waitFor(t, "s1 notices the numbers it missed", func() bool { return s1.bus.Counts().Gaps >= 1 })
	waitFor(t, "s0 waits for s1 again", func() bool { return slices.Contains(s0.bus.Counts().Members, "s1") })
	waitFor(t, "s1 serves from memory again", s1.bus.synced)
	if st := s1.h.Stats(); st.Fences < 1 {
		t.Errorf("s1's Account stats: %d fences, want at least 1 (its cache cleared)", st.Fences)
	}
	// Synchronous again: s1 reads what s0 commits next.
	readOn(t, s1, h, 1)
	addOn(t, s0, h, 1, 5)
	readOn(t, s1, h, 1)
	if v := h.check(t, s0.db, promise{noStale: true}); len(v.problems) > 0 {
		t.Errorf("after s1 came back: %q", v.problems)
	}
}

// Two runs on one broker never see each other's messages: their
// subjects differ by the run's name.
func TestRunsDoNotMix(t *testing.T) {
	url := testNATS(t)
	s := cachingSettings(container.OptionA, container.Invalidate, time.Hour)
	a := newCluster(t, storetest.SQLite(t), url, s, clusterOpts{servers: 2, threads: 1, deadline: 300 * time.Millisecond})
	b := newCluster(t, storetest.SQLite(t), url, s, clusterOpts{servers: 2, threads: 1, deadline: 300 * time.Millisecond})
	h := &history{}
	addOn(t, a[0], h, 1, 10)
	// The write of account 1's credit names its identity and
	// richerThan's entries (all of them: a range's entries have no name
	// to aim at); byName reads no column it changed.
	if st := a[0].h.Stats(); st.InvalidationCommits != 1 || st.InvalidationsSent != 2 {
		t.Errorf("the writer: %d commits published, %d invalidations sent; want 1 and 2", st.InvalidationCommits, st.InvalidationsSent)
	}
	// The settle is not waited for: it reaches the peer when it does.
	waitFor(t, "the run's own peer receives the settle", func() bool { return a[1].h.Stats().InvalidationsReceived >= 2 })
	if got := a[1].h.Stats().InvalidationsReceived; got != 2 {
		t.Errorf("the run's own peer received %d invalidations, want 2", got)
	}
	// By now the settle has reached every subscriber it was for.
	if got := b[0].h.Stats().InvalidationsReceived + b[1].h.Stats().InvalidationsReceived; got != 0 {
		t.Errorf("the other run's servers received %d invalidations", got)
	}
	for _, n := range append(a, b...) {
		if m := n.bus.Counts().Members; len(m) != 1 {
			t.Errorf("%s waits for %v; want its one peer", n.name, m)
		}
	}
}
