package coherence

import (
	"context"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// Announcements are group-committed: while one waits for its reply, the
// commits that announce meanwhile queue and go out together in one
// message, each commit returning once the peer has applied it, and each
// settled on its own. The peer is held (its receiving goroutine blocked
// on its mutex) until the four later commits have queued, so the
// messages are exactly two: the first commit's, and the four's.
func TestAnnouncementsAreGroupCommitted(t *testing.T) {
	url := testNATS(t)
	nodes := newCluster(t, storetest.SQLite(t), url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
		clusterOpts{servers: 2, threads: 1, deadline: 2 * time.Second})
	pub, peer := nodes[0].bus, nodes[1].bus
	before := pub.Counts()
	const commits = 5
	writes := make([]*container.Writes, commits)
	for n := range writes {
		writes[n] = &container.Writes{Phase: container.Announce, Items: []container.Written{{Type: "Account", Sync: true,
			Keys: []container.Key{{A: int64(n + 1)}}, Finders: []container.FinderEntry{{Finder: "richerThan", All: true}}}}}
	}
	peer.mu.Lock() // the peer hears nothing until released
	done := make(chan error, commits)
	announce := func(w *container.Writes) {
		err := pub.Publish(context.Background(), w)
		if err == nil {
			pub.Await(w, true) // as a commit does once the database has committed
		}
		done <- err
	}
	go announce(writes[0])
	waitFor(t, "the first announcement is in flight", func() bool {
		pub.pub.Lock()
		defer pub.pub.Unlock()
		return pub.inFlight
	})
	for _, w := range writes[1:] {
		go announce(w)
	}
	waitFor(t, "the other four queue behind it", func() bool {
		pub.pub.Lock()
		defer pub.pub.Unlock()
		return pub.queued != nil && len(pub.queued.writes) == commits-1
	})
	select {
	case err := <-done:
		t.Fatalf("a commit returned (%v) before the peer applied its announcement", err)
	default:
	}
	peer.mu.Unlock()
	for range commits {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	c := pub.Counts()
	if msgs, got := c.AnnounceMessages-before.AnnounceMessages, c.AnnouncedCommits-before.AnnouncedCommits; msgs != 2 || got != commits {
		t.Errorf("%d announcements in %d messages; want %d in 2", got, msgs, commits)
	}
	if c.PeersFenced != 0 {
		t.Errorf("%d peers fenced; want none (every reply came within the deadline)", c.PeersFenced)
	}
	// Each commit settles its own announcement: the peer unmarks every
	// identity and counts each settle's identity and finder entry.
	received := nodes[1].h.Stats().InvalidationsReceived
	for _, w := range writes {
		w.Phase = container.Settle
		if err := pub.Publish(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the peer applies the five settles", func() bool {
		return nodes[1].h.Stats().InvalidationsReceived-received == 2*commits
	})
	peer.mu.Lock()
	defer peer.mu.Unlock()
	for _, p := range peer.peers {
		if len(p.announced) != 0 {
			t.Errorf("the peer still holds %d of %s's announcements unsettled", len(p.announced), p.name)
		}
	}
}
