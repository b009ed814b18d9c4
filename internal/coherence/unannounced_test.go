package coherence

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// Created identities are left out of the announcements (decision 0044):
// no peer can hold a row that does not exist yet. The settle names them
// apart (Written.Created), and the peer drops them without unmarking
// them, so a settle lifts exactly the marks its announcement made.

// wire counts what a server publishes, read off its subject by a
// subscriber of the test's own.
type wire struct {
	mu sync.Mutex
	wireCounts
}

// wireCounts: announcedKeys and announcedFinders are what the
// announcements named; settledKeys and created what the settles named
// (created: their Created).
type wireCounts struct {
	announcedKeys, announcedFinders, createdAnnounced int
	settles, settledKeys, created                     int
}

func listen(t *testing.T, url string, n *node) *wire {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w := &wire{}
	var d decoder // the handler runs on one goroutine
	if _, err := nc.Subscribe(n.bus.own, func(msg *nats.Msg) {
		var m message
		if d.decode(msg.Data, &m) != nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, ws := range m.Writes {
			if m.Kind == kindSettle {
				w.settles++
			}
			for _, it := range ws.Items {
				switch m.Kind {
				case kindAnnounce:
					w.announcedKeys += len(it.Keys)
					w.announcedFinders += len(it.Finders)
					w.createdAnnounced += len(it.Created)
				case kindSettle:
					w.settledKeys += len(it.Keys)
					w.created += len(it.Created)
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

// createOn creates account key on n, at initialCredit(key), and, when
// add is not 0, adds add to account 1 in the same commit.
func createOn(n *node, key, add int64) error {
	tx, err := n.ctr.Begin(context.Background(), 0)
	if err != nil {
		return err
	}
	if add != 0 {
		a, err := tx.Find(n.h, container.Key{A: 1})
		if err != nil {
			tx.Rollback()
			return err
		}
		a.SetInt(fCredit, a.Int(fCredit)+add)
	}
	a, err := tx.Create(n.h, container.Key{A: key})
	if err != nil {
		tx.Rollback()
		return err
	}
	a.SetString(0, fmt.Sprintf("n%d", key))
	a.SetInt(fCredit, initialCredit(key))
	return tx.Commit()
}

// k commits that each create an account announce no identity: with the
// type's finders cached, each announces the two finder entries a
// creation changes (byName's entry of its name, all of richerThan's);
// without them, the commit announces nothing at all (no announcement
// message, no wait). A last commit that changes account 1 and creates
// one announces account 1 alone. The peer drops every settle's
// identities and is left with no mark: it serves them from memory.
func TestCreationsAnnounceNoIdentity(t *testing.T) {
	url := testNATS(t)
	const k = 5
	for _, tt := range []struct {
		name      string
		noFinders bool
		// Per creation: finder entries; the last commit's (account 1's
		// credit changes richerThan's entries: all of them).
		finders, lastFinders int
	}{
		{"finders cached", false, 2, 3},
		{"no finders", true, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nodes := newCluster(t, storetest.SQLite(t), url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
				clusterOpts{servers: 2, threads: 1, deadline: 2 * time.Second, noFinders: tt.noFinders})
			s0, s1 := nodes[0], nodes[1]
			w := listen(t, url, s0)
			before := s0.bus.Counts()
			for n := range int64(k) {
				if err := createOn(s0, 100+n, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := createOn(s0, 200, 10); err != nil {
				t.Fatal(err)
			}
			// Sent: each settle's created identity and finder entries, and
			// the last one's account 1.
			sent := int64(k*(1+tt.finders) + 2 + tt.lastFinders)
			waitFor(t, "s1 applies the settles", func() bool { return s1.h.Stats().InvalidationsReceived == sent })
			waitFor(t, "the test's subscriber hears them", func() bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				return w.settles == k+1
			})
			w.mu.Lock()
			got := w.wireCounts
			w.mu.Unlock()
			if got.announcedKeys != 1 || got.createdAnnounced != 0 || got.announcedFinders != k*tt.finders+tt.lastFinders || got.settledKeys != 1 || got.created != k+1 {
				t.Errorf("announced %d identities (%d created) and %d finder entries, settled %d identities and %d created; want 1 (0), %d, 1 and %d",
					got.announcedKeys, got.createdAnnounced, got.announcedFinders, got.settledKeys, got.created, k*tt.finders+tt.lastFinders, k+1)
			}
			announced := int64(k + 1) // commits that announced something
			unannounced := int64(0)   // commits whose type announced nothing
			if tt.noFinders {
				announced, unannounced = 1, k
			}
			if c := s0.bus.Counts(); c.AnnouncedCommits-before.AnnouncedCommits != announced {
				t.Errorf("%d commits announced; want %d", c.AnnouncedCommits-before.AnnouncedCommits, announced)
			}
			st := s0.h.Stats()
			if st.InvalidationCommits != k+1 || st.InvalidationsSent != sent || st.CreatesUnannounced != k+1 || st.CommitsUnannounced != unannounced {
				t.Errorf("s0's Account: %d commits published, %d sent, %d created unannounced, %d commits unannounced; want %d, %d, %d, %d",
					st.InvalidationCommits, st.InvalidationsSent, st.CreatesUnannounced, st.CommitsUnannounced, k+1, sent, k+1, unannounced)
			}
			// No mark is left on s1: the second read of each is a hit.
			h := &history{}
			for _, key := range []int64{1, 100, 200} {
				readOn(t, s1, h, key)
				hits := s1.h.Stats().CacheHits
				readOn(t, s1, h, key)
				if s1.h.Stats().CacheHits != hits+1 {
					t.Errorf("s1's second read of account %d: not a cache hit (a mark left by a settle?)", key)
				}
			}
		})
	}
}

// A settle must lift only the marks its announcement made: another
// commit may hold the same identity in doubt. The steps, on PostgreSQL
// over three app servers, where a transaction outside them holds s2's
// commit back (an uncommitted insert of the key s2 creates):
//
//  1. s0 creates account 50; its announcement names the finder entries
//     only; s1, held, hears nothing yet, so s0's commit, its database
//     commit done, waits for s1's reply;
//  2. s2 adds to account 50 and creates account 99, and commits: its
//     announcement names account 50 and its database commit waits for
//     the other insert;
//  3. s1 is let go: it applies s0's announcement, s2's (account 50 is
//     marked), then s0's settle, which names account 50 as created;
//  4. s1 reads account 50: the row before s2's commit;
//  5. the other transaction rolls back and s2's commit returns; s1 is
//     held so that s2's settle does not reach it;
//  6. s1 reads account 50 again.
//
// Sound, s0's settle drops account 50 and leaves s2's mark: 4 is not
// kept, and 6 reads the database. Made unsound on purpose
// (Bus.unmarkCreated: the settle unmarks its created identities as if
// announced), it lifts s2's mark, s1 keeps the row of 4 and serves it
// from memory after s2's commit returned: the serial model's checker
// refuses the stale read.
func TestSerialModelCatchesCreatedIdentityUnmarked(t *testing.T) {
	url := testNATS(t)
	dsn := storetest.Postgres(t)
	ctx := context.Background()
	const key = 50
	for _, unsound := range []bool{false, true} {
		nodes := newCluster(t, dsn, url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
			clusterOpts{servers: 3, threads: 1, deadline: 5 * time.Second})
		s0, s1, s2 := nodes[0], nodes[1], nodes[2]
		s1.bus.unmarkCreated.Store(unsound)
		// held: s1's receiving goroutine is blocked on its mutex; a failure
		// meanwhile lets it go before the buses close.
		held := false
		hold := func(on bool) {
			if on {
				s1.bus.mu.Lock()
			} else {
				s1.bus.mu.Unlock()
			}
			held = on
		}
		t.Cleanup(func() {
			if held {
				hold(false)
			}
		})
		other := storetest.Open(t, dsn, store.Options{Threads: 1})
		exists := prepare(t, other, fmt.Sprintf("SELECT count(*) FROM acct WHERE id = %d", key))
		h := &history{}
		heard0 := s1.bus.heardFrom(s0.name)

		// 1.
		hold(true)
		created := make(chan error, 1)
		go func() { created <- createOn(s0, key, 0) }()
		waitFor(t, "s0's creation reaches the database", func() bool {
			var n int64
			return other.QueryRow(ctx, exists).Scan(&n) == nil && n == 1
		})

		// 2.
		began := h.now()
		var seq uint64
		hc := holdCommit(t, dsn, s2, key, func() { seq = s0.bus.heardFrom(s2.name) })
		read, committed := hc.read, hc.committed
		// Once s0 has applied s2's announcement, the broker has queued it
		// for s1 too, ahead of s0's settle, which s1's reply to s0's
		// announcement is still to release.
		waitFor(t, "s0 applies s2's announcement", func() bool { return s0.bus.heardFrom(s2.name) > seq })

		// 3.
		hold(false)
		if err := <-created; err != nil {
			t.Fatal(err)
		}
		waitFor(t, "s1 applies s0's announcement and settle", func() bool { return s1.bus.heardFrom(s0.name) >= heard0+2 })

		// 4.
		readOn(t, s1, h, key)
		select {
		case err := <-committed:
			t.Fatalf("unsound=%v: s2's commit returned (%v) while its insert waited for the other transaction", unsound, err)
		default:
		}

		// 5.
		hits := s1.h.Stats().CacheHits // (Stats takes the bus's mutex)
		hold(true)
		hc.release()
		if err := <-committed; err != nil {
			t.Fatal(err)
		}
		ended := h.now()
		h.writes = append(h.writes, write{key: key, read: read, wrote: read + 10, began: began, ended: ended})

		// 6.
		readOn(t, s1, h, key)
		hold(false)
		hit := s1.h.Stats().CacheHits > hits

		h.check(t, s0.db, promise{noStale: true}).oneStaleReadIf(t, unsound, hit, "created identity unmarked by the settle")
	}
}
