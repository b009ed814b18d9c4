package coherence

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// The wait for the peers' replies overlaps the writer's database commit
// (decision 0034), so a peer can apply an announcement while the row
// still holds its old value, and read that value. The announcement
// holds the identity in doubt (marked) until the settle: what the peer
// reads meanwhile it does not keep. The steps, on PostgreSQL, where a
// transaction outside the servers holds the writer's commit back (an
// uncommitted insert of the key the writer creates):
//
//  1. s1 caches account 1;
//  2. s0 adds to account 1 and creates account 99, and commits: its
//     announcement goes out, s1 applies it and replies, and its database
//     commit waits for the other insert;
//  3. s1 reads account 1 (the old row);
//  4. the other transaction rolls back, s0's commit completes and
//     returns; s1 is held (its receiving goroutine blocked on its
//     mutex) so that the settle that follows does not reach it;
//  5. s1 reads account 1 again.
//
// With the in-doubt state, 5 reads the new row from the database; with
// it switched off (Bus.noDoubt), s1 kept the row of 3 and serves it from
// memory after s0's commit returned: the serial model's checker refuses
// the stale read.
func TestSerialModelCatchesInDoubtSwitchedOff(t *testing.T) {
	url := testNATS(t)
	dsn := storetest.Postgres(t)
	for _, off := range []bool{false, true} {
		nodes := newCluster(t, dsn, url, cachingSettings(container.OptionA, container.Invalidate, time.Hour),
			clusterOpts{servers: 2, threads: 1, deadline: 2 * time.Second})
		s0, s1 := nodes[0], nodes[1]
		s1.bus.noDoubt.Store(off)
		h := &history{}
		readOn(t, s1, h, 1)
		readOn(t, s1, h, 1)

		began := h.now()
		var seq uint64
		held := holdCommit(t, dsn, s0, 1, func() { seq = s1.bus.heardFrom(s0.name) })
		read, committed := held.read, held.committed
		waitFor(t, "s1 applies s0's announcement", func() bool { return s1.bus.heardFrom(s0.name) > seq })
		readOn(t, s1, h, 1)
		select {
		case err := <-committed:
			t.Fatalf("off=%v: s0's commit returned (%v) while its insert waited for the other transaction", off, err)
		default:
		}

		hits := s1.h.Stats().CacheHits // (Stats takes the bus's mutex)
		s1.bus.mu.Lock()
		held.release()
		if err := <-committed; err != nil {
			s1.bus.mu.Unlock()
			t.Fatal(err)
		}
		ended := h.now()
		h.writes = append(h.writes, write{key: 1, read: read, wrote: read + 10, began: began, ended: ended})
		readOn(t, s1, h, 1)
		s1.bus.mu.Unlock()
		hit := s1.h.Stats().CacheHits > hits

		h.check(t, s0.db, promise{noStale: true}).oneStaleReadIf(t, off, hit, "in-doubt state switched off")
	}
}

// heldCommit is a commit held at its database commit: a transaction
// outside the servers holds an uncommitted insert of account 99, and the
// commit, which adds 10 to an account and creates account 99, waits for
// it until release rolls it back.
type heldCommit struct {
	// read is the credit the transaction read; committed its outcome.
	read      int64
	committed chan error
	release   func()
}

// holdCommit starts a held commit on n, adding to account key; before
// runs once the transaction's writes are made, just before its commit.
func holdCommit(t *testing.T, dsn string, n *node, key int64, before func()) heldCommit {
	t.Helper()
	ctx := context.Background()
	other := storetest.Open(t, dsn, store.Options{Threads: 1})
	insert := prepare(t, other, "INSERT INTO acct (id, name, credit) VALUES (99, 'other', 0)")
	inserted, undo, otherDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	errUndo := errors.New("undone")
	go func() {
		otherDone <- other.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, insert); err != nil {
				return err
			}
			close(inserted)
			<-undo
			return errUndo
		})
	}()
	select {
	case <-inserted:
	case err := <-otherDone:
		t.Fatalf("the other transaction: %v", err)
	}
	tx, err := n.ctr.Begin(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := tx.Find(n.h, container.Key{A: key})
	if err != nil {
		t.Fatal(err)
	}
	hc := heldCommit{read: a.Int(fCredit), committed: make(chan error, 1)}
	a.SetInt(fCredit, hc.read+10)
	c, err := tx.Create(n.h, container.Key{A: 99})
	if err != nil {
		t.Fatal(err)
	}
	c.SetString(0, "ninety-nine")
	if before != nil {
		before()
	}
	go func() { hc.committed <- tx.Commit() }()
	hc.release = func() {
		close(undo)
		if err := <-otherDone; !errors.Is(err, errUndo) {
			t.Fatalf("the other transaction: %v", err)
		}
	}
	return hc
}
