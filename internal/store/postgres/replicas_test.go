package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// replicaRig is a private primary with two streaming standbys, a table
// t(id, v) holding row (1, 0), and statements to read and bump it.
type replicaRig struct {
	c          *testsvc.PGCluster
	read, bump *store.Stmt
}

func newReplicaRig(t *testing.T) replicaRig {
	c := testsvc.PGReplicas(t, 2)
	db := openPrimary(t, c, nil, store.ReplicaOptions{})
	q := storetest.Querier{T: t, DB: db}
	q.Exec("CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)")
	q.Exec("INSERT INTO t VALUES (1, 0)")
	return replicaRig{c: c}
}

// openPrimary opens the rig's primary with replicas (none when nil),
// prepares the rig's statements and waits for the standbys to have the
// table.
func openPrimary(t *testing.T, c *testsvc.PGCluster, replicas []*testsvc.PG, opts store.ReplicaOptions) *store.DB {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, c.Primary.DSNOf("test"), store.Options{Threads: 1})
	var dsns []store.DSN
	for _, r := range replicas {
		dsns = append(dsns, store.MustParseDSN(r.DSNOf("test")))
	}
	if err := storetest.Backends().AttachReplicas(ctx, db, dsns, opts); err != nil {
		t.Fatal(err)
	}
	if err := db.AwaitReplicas(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	return db
}

func (r *replicaRig) open(t *testing.T, reads store.ReplicaReads) *store.DB {
	return r.openWaiting(t, reads, 0)
}

// openWaiting is open with causal reads waiting up to wait.
func (r *replicaRig) openWaiting(t *testing.T, reads store.ReplicaReads, wait time.Duration) *store.DB {
	t.Helper()
	db := openPrimary(t, r.c, r.c.Standbys, store.ReplicaOptions{Reads: reads, CausalWait: wait})
	q := storetest.Querier{T: t, DB: db}
	r.read, r.bump = q.Stmt("SELECT v FROM t WHERE id = 1"), q.Stmt("UPDATE t SET v = v + 1 WHERE id = 1")
	return db
}

// write bumps the row in a transaction of thread 0.
func (r *replicaRig) write(t *testing.T, ctx context.Context, db *store.DB) {
	t.Helper()
	err := db.Thread(0).InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, r.bump)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readOnly reads the row as a read-only transaction of thread 0, run again
// on ErrNodeLost as the driver does.
func (r *replicaRig) readOnly(ctx context.Context, db *store.DB) (v int64, err error) {
	err = store.Retry(ctx, 3, func() error {
		return db.ReadOnly(ctx, 0).QueryRow(ctx, r.read).Scan(&v)
	})
	return v, err
}

func replicaStats(db *store.DB) *store.ReplicaSummary { return db.Stats().Replicas }

// TestReplicas runs on one private cluster (its start takes seconds):
// routing, read-your-writes violations with replay paused, causal reads,
// a replica killed.
func TestReplicas(t *testing.T) {
	r := newReplicaRig(t)
	ctx := context.Background()

	t.Run("routing", func(t *testing.T) {
		db := r.open(t, store.Eventual)
		before := db.Stats()
		for range 10 {
			if _, err := r.readOnly(ctx, db); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			r.write(t, ctx, db)
		}
		s := db.Stats().Sub(before)
		rs := s.Replicas
		// In turn: five reads each, and nothing but those reads (no
		// terminal: no probes).
		for i, st := range rs.Replicas {
			if st.Reads != 5 || st.Statements != 5 || st.Probes != 0 {
				t.Errorf("replica %d: %d reads, %d statements, %d probes; want 5, 5, 0", i, st.Reads, st.Statements, st.Probes)
			}
		}
		// The primary ran the writes alone: an UPDATE each.
		if rs.PrimaryReads != 0 || s.Statements != 3 || s.Commits != 3 {
			t.Errorf("primary: %d reads, %d statements, %d commits; want 0, 3, 3", rs.PrimaryReads, s.Statements, s.Commits)
		}

		// Without replicas the same reads are the primary's.
		plain := openPrimary(t, r.c, nil, store.ReplicaOptions{})
		before = plain.Stats()
		for range 10 {
			if _, err := r.readOnly(ctx, plain); err != nil {
				t.Fatal(err)
			}
		}
		if s := plain.Stats().Sub(before); s.Replicas != nil || s.Statements != 10 {
			t.Errorf("without replicas: %d statements on the primary, replicas %+v; want 10, none", s.Statements, s.Replicas)
		}
	})

	t.Run("read-your-writes", func(t *testing.T) {
		db := r.open(t, store.Eventual)
		for _, s := range r.c.Standbys {
			s.Exec(t, "SELECT pg_wal_replay_pause()")
		}
		term := &store.Terminal{}
		tctx := store.WithTerminal(ctx, term)
		before, _ := r.readOnly(ctx, db)
		for i := range 3 {
			r.write(t, tctx, db)
			v, err := r.readOnly(tctx, db)
			if err != nil {
				t.Fatal(err)
			}
			// The replica really is behind: the terminal reads what was
			// there before its writes.
			if v != before {
				t.Fatalf("read %d: %d, want the stale %d (replay paused)", i, v, before)
			}
		}
		// Another client (no terminal) reads as stale, but has no write
		// of its own to miss: the counter follows the terminal's position.
		if _, err := r.readOnly(ctx, db); err != nil {
			t.Fatal(err)
		}
		var missed int64
		for _, st := range replicaStats(db).Replicas {
			missed += st.ReadYourWritesViolations
		}
		if missed != 3 {
			t.Errorf("read-your-writes violations: %d, want 3", missed)
		}
		for _, s := range r.c.Standbys {
			s.Exec(t, "SELECT pg_wal_replay_resume()")
		}
		if err := db.AwaitReplicas(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if v, err := r.readOnly(tctx, db); err != nil || v != before+3 {
			t.Fatalf("after replay: %d, %v; want %d", v, err, before+3)
		}
		missed = 0
		for _, st := range replicaStats(db).Replicas {
			missed += st.ReadYourWritesViolations
		}
		if missed != 3 {
			t.Errorf("violations after the replicas caught up: %d, want still 3", missed)
		}
	})

	t.Run("causal", func(t *testing.T) {
		// Reads that give up after 200 ms, and reads that wait as long
		// as a loaded machine may need to resume replay.
		db := r.openWaiting(t, store.Causal, 200*time.Millisecond)
		patient := r.openWaiting(t, store.Causal, time.Minute)
		for _, s := range r.c.Standbys {
			s.Exec(t, "SELECT pg_wal_replay_pause()")
		}
		tctx := store.WithTerminal(ctx, &store.Terminal{})
		// Both replicas paused: each read waits its 200 ms, then runs on
		// the primary, and sees the terminal's write.
		for i := range 2 {
			r.write(t, tctx, db)
			want, _ := r.readOnlyPrimary(t, db)
			v, err := r.readOnly(tctx, db)
			if err != nil || v != want {
				t.Fatalf("read %d: %d, %v; want the primary's %d", i, v, err, want)
			}
		}
		rs := replicaStats(db)
		var fellBack, missed int64
		for _, st := range rs.Replicas {
			fellBack += st.CausalFallbacks
			missed += st.ReadYourWritesViolations
		}
		if fellBack != 2 || rs.PrimaryReads != 2 || missed != 0 {
			t.Errorf("fallbacks %d, primary reads %d, violations %d; want 2, 2, 0", fellBack, rs.PrimaryReads, missed)
		}
		// Replay resumed while a read waits: it waits, then reads on its
		// replica what the terminal wrote.
		r.write(t, tctx, patient)
		want, _ := r.readOnlyPrimary(t, patient)
		done := make(chan error, 1)
		var v int64
		go func() {
			var err error
			v, err = r.readOnly(tctx, patient)
			done <- err
		}()
		for probes(patient) == 0 { // the read has found its replica behind
			time.Sleep(time.Millisecond)
		}
		for _, s := range r.c.Standbys {
			s.Exec(t, "SELECT pg_wal_replay_resume()")
		}
		if err := <-done; err != nil || v != want {
			t.Fatalf("read: %d, %v; want %d", v, err, want)
		}
		rs = replicaStats(patient)
		var waits int64
		for _, st := range rs.Replicas {
			waits += st.CausalWaits
			fellBack += st.CausalFallbacks
			missed += st.ReadYourWritesViolations
		}
		if rs.PrimaryReads != 0 || waits != 1 || fellBack != 2 || missed != 0 {
			t.Errorf("primary reads %d, waits %d, fallbacks %d, violations %d; want 0, 1, none more, 0", rs.PrimaryReads, waits, fellBack, missed)
		}
	})

	t.Run("replica-killed", func(t *testing.T) {
		db := r.open(t, store.Eventual)
		// bare runs its reads without a retry.
		bare := r.open(t, store.Eventual)
		r.c.Standbys[0].Kill()
		for range 6 {
			if _, err := r.readOnly(ctx, db); err != nil {
				t.Fatalf("a read with one replica killed: %v", err)
			}
		}
		rs := replicaStats(db)
		if rs.Replicas[0].Lost == nil || rs.Replicas[1].Lost != nil {
			t.Fatalf("lost: %v, %v; want the first replica alone", rs.Replicas[0].Lost, rs.Replicas[1].Lost)
		}
		// In turn from the second: the second read found the first dead
		// and went again, to the second, as did every read after it.
		if rs.Replicas[0].Reads != 1 || rs.Replicas[1].Reads != 6 || rs.PrimaryReads != 0 {
			t.Errorf("reads %d, %d, primary %d; want 1 (cut), 6, 0", rs.Replicas[0].Reads, rs.Replicas[1].Reads, rs.PrimaryReads)
		}
		r.c.Standbys[1].Kill()
		for range 4 {
			if _, err := r.readOnly(ctx, db); err != nil {
				t.Fatalf("a read with both replicas killed: %v", err)
			}
		}
		if rs := replicaStats(db); rs.PrimaryReads != 4 || rs.Replicas[1].Lost == nil {
			t.Errorf("primary reads %d, second lost %v; want 4 on the primary, the second lost", rs.PrimaryReads, rs.Replicas[1].Lost)
		}
		// Without the retry, the read that meets a dead replica fails,
		// with ErrNodeLost: retryable, which is what moves it.
		var v int64
		err := bare.ReadOnly(ctx, 0).QueryRow(ctx, r.read).Scan(&v)
		if !errors.Is(err, store.ErrNodeLost) || !store.Retryable(err) {
			t.Errorf("a read on a dead replica: %v; want ErrNodeLost, retryable", err)
		}
	})

	// A standby killed by PID and started again on its port is taken
	// back by the primary's probes, and gets its share of the reads
	// again; the outage is recorded with both times.
	t.Run("replica-back", func(t *testing.T) {
		for _, s := range r.c.Standbys {
			if s.PID() == 0 {
				s.Start() // killed above
			}
		}
		db := openPrimary(t, r.c, r.c.Standbys, store.ReplicaOptions{Rejoin: 20 * time.Millisecond})
		q := storetest.Querier{T: t, DB: db}
		r.read, r.bump = q.Stmt("SELECT v FROM t WHERE id = 1"), q.Stmt("UPDATE t SET v = v + 1 WHERE id = 1")
		was, _ := r.readOnlyPrimary(t, db)
		r.c.Standbys[0].Kill()
		for range 4 {
			if _, err := r.readOnly(ctx, db); err != nil {
				t.Fatalf("a read with one replica killed: %v", err)
			}
		}
		rs := replicaStats(db)
		if rs.Replicas[0].Lost == nil || len(rs.Replicas[0].Outages) != 1 || rs.Replicas[0].Outages[0].Back != nil {
			t.Fatalf("first replica: lost %v, outages %+v; want lost, not back", rs.Replicas[0].Lost, rs.Replicas[0].Outages)
		}
		// Writes while it is down, which it must replay to be taken back.
		for range 3 {
			r.write(t, ctx, db)
		}
		r.c.Standbys[0].Start() // returns once it streams again
		deadline := time.Now().Add(time.Minute)
		for replicaStats(db).Replicas[0].Outages[0].Back == nil {
			if time.Now().After(deadline) {
				t.Fatalf("the restarted standby was not taken back within a minute: %+v", replicaStats(db).Replicas[0])
			}
			time.Sleep(5 * time.Millisecond) // the probes run every 20 ms
		}
		if err := db.AwaitReplicas(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		before := replicaStats(db)
		for range 10 {
			v, err := r.readOnly(ctx, db)
			if err != nil || v != was+3 {
				t.Fatalf("a read after the standby came back: %d, %v; want %d", v, err, was+3)
			}
		}
		rs = replicaStats(db)
		if d0, d1 := rs.Replicas[0].Reads-before.Replicas[0].Reads, rs.Replicas[1].Reads-before.Replicas[1].Reads; d0 != 5 || d1 != 5 || rs.PrimaryReads != 0 {
			t.Errorf("reads after it came back: %d and %d, %d on the primary; want 5, 5, 0", d0, d1, rs.PrimaryReads)
		}
		o := rs.Replicas[0].Outages
		if len(o) != 1 || o[0].Back == nil || !o[0].Back.After(o[0].Lost) || o[0].ReadsAfter != 5 {
			t.Errorf("outages %+v; want one, back after lost, 5 reads after", o)
		}
		if rs.Replicas[1].Outages != nil {
			t.Errorf("second replica's outages %+v; want none", rs.Replicas[1].Outages)
		}
	})
}

// readOnlyPrimary reads the row on the primary.
func (r *replicaRig) readOnlyPrimary(t *testing.T, db *store.DB) (int64, error) {
	var v int64
	err := db.Thread(0).QueryRow(context.Background(), r.read).Scan(&v)
	if err != nil {
		t.Fatal(err)
	}
	return v, err
}

func probes(db *store.DB) int64 {
	var n int64
	for _, st := range replicaStats(db).Replicas {
		n += st.Probes
	}
	return n
}
