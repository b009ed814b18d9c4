package mysql_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// TestGalera runs the store on a private three-node Galera cluster, one
// start for all its subtests (a start takes 10-40 s); the node kill comes
// last.
func TestGalera(t *testing.T) {
	testsvc.SkipUnlessLong(t, "starts a three-node Galera cluster, 30 s on 2 idle cores")
	cluster := testsvc.Galera(t)
	ctx := context.Background()
	databases := 0
	// newDSN is a fresh database on the cluster, named with every node.
	newDSN := func(t testing.TB) string {
		t.Helper()
		admin := storetest.Open(t, cluster.Node(0).DSN(), store.Options{Threads: 1})
		databases++
		name := "tb_galera_" + strconv.Itoa(databases)
		if err := admin.ExecScript(ctx, "DROP DATABASE IF EXISTS "+name+";\nCREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(cluster.DSN(), "/test") + "/" + name
	}

	t.Run("conformance", func(t *testing.T) { storetest.Exercise(t, newDSN) })

	t.Run("threads spread over the nodes", func(t *testing.T) {
		db := storetest.Open(t, newDSN(t), store.Options{Threads: 4})
		if !strings.Contains(db.Version(), "galera, 3 nodes") {
			t.Errorf("version %q does not name the cluster", db.Version())
		}
		q := storetest.Querier{T: t, DB: db}
		port := q.Stmt("SELECT @@port")
		for i, node := range []int{0, 1, 2, 0} {
			var got int64
			if err := db.Thread(i).QueryRow(ctx, port).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := cluster.Node(node).Addr(); !strings.HasSuffix(want, ":"+strconv.FormatInt(got, 10)) {
				t.Errorf("thread %d runs on port %d, want node %d (%s)", i, got, node, want)
			}
		}
	})

	t.Run("a certification failure is its own class and is retried", func(t *testing.T) {
		db, q, inc, get := accounts(t, newDSN(t), 4)
		// Every node has applied the rows before the transactions read
		// them, or the first would fail certification against the insert.
		for _, th := range []int{0, 1} {
			waitFor(t, func() bool {
				var n int64
				return db.Thread(th).QueryRow(ctx, get, 1).Scan(&n) == nil
			})
		}
		before := db.Stats()
		attempts := 0
		err := store.Retry(ctx, 3, func() error {
			attempts++
			tx0, err := db.Thread(0).Begin(ctx) // node 0
			if err != nil {
				return err
			}
			if _, err := tx0.Exec(ctx, inc, 1); err != nil {
				tx0.Rollback(ctx)
				return err
			}
			if attempts == 1 {
				// Node 1 commits a write of the same row meanwhile: its
				// write set wins and aborts tx0 on node 0.
				if err := db.Thread(1).InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.Exec(ctx, inc, 1)
					return err
				}); err != nil {
					t.Fatalf("the write on node 1: %v", err)
				}
			}
			err = tx0.Commit(ctx)
			if attempts == 1 && (!errors.Is(err, store.ErrCertification) || !store.Retryable(err)) {
				t.Errorf("the conflicting commit on node 0: %v; want a retryable certification failure", err)
			}
			return err
		})
		if err != nil || attempts != 2 {
			t.Fatalf("retried: %v after %d attempts; want success at the second", err, attempts)
		}
		st := db.Stats().Sub(before)
		if st.CertificationFailures != 1 || st.Deadlocks != 0 {
			t.Errorf("certification failures %d, deadlocks %d; want 1 and 0", st.CertificationFailures, st.Deadlocks)
		}
		if n := q.IntOf(get, 1); n != 2 {
			t.Errorf("row 1 = %d after one write on node 1 and the retried one on node 0; want 2", n)
		}

		// Threads 0 and 3 share node 0: their deadlock is InnoDB's, not
		// a certification failure.
		before = db.Stats()
		a, _ := db.Thread(0).Begin(ctx)
		b, _ := db.Thread(3).Begin(ctx)
		if _, err := a.Exec(ctx, inc, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Exec(ctx, inc, 2); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := a.Exec(ctx, inc, 2); done <- err }()
		time.Sleep(200 * time.Millisecond) // a waits for b's lock
		_, errB := b.Exec(ctx, inc, 1)
		errA := <-done
		a.Rollback(ctx)
		b.Rollback(ctx)
		if !errors.Is(errA, store.ErrDeadlock) && !errors.Is(errB, store.ErrDeadlock) {
			t.Errorf("local deadlock on node 0: %v / %v; want one ErrDeadlock", errA, errB)
		}
		if st := db.Stats().Sub(before); st.Deadlocks != 1 || st.CertificationFailures != 0 {
			t.Errorf("deadlocks %d, certification failures %d; want 1 and 0", st.Deadlocks, st.CertificationFailures)
		}
	})

	// Last: the cluster keeps two nodes.
	t.Run("a node killed: its connections move, counted", func(t *testing.T) {
		dsn := newDSN(t)
		db, q, inc, get := accounts(t, dsn, 6)
		waitFor(t, func() bool { var n int64; return db.Thread(2).QueryRow(ctx, get, 3).Scan(&n) == nil })
		// A second DB on the cluster, whose thread 2 runs a statement
		// outside a transaction that sleeps on node 2 before it writes:
		// under way when the node dies, it is in doubt. Its own DB, so
		// that its meeting the loss does not race the first DB's.
		other := storetest.Open(t, dsn, store.Options{Threads: 3})
		sleepy := storetest.Querier{T: t, DB: other}.Stmt("INSERT INTO acct (id, n) SELECT ?, 0 FROM (SELECT SLEEP(60)) AS s")
		cut := make(chan error, 1)
		go func() { _, err := other.Thread(2).Exec(ctx, sleepy, 10); cut <- err }()
		waitFor(t, func() bool {
			var n int64
			return cluster.Node(2).Query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'INSERT INTO acct%'", &n) == nil && n == 1
		})
		// Threads 2 and 5 run on node 2.
		a, _ := db.Thread(2).Begin(ctx)
		b, _ := db.Thread(5).Begin(ctx)
		if _, err := a.Exec(ctx, inc, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Exec(ctx, inc, 2); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		cluster.Node(2).Kill()
		// The first to meet the loss: a SELECT outside a transaction on
		// thread 2, whose pool holds connections to node 2. It wrote
		// nothing, so it runs again on a survivor and succeeds.
		var before int64
		if err := db.Thread(2).QueryRow(ctx, get, 1).Scan(&before); err != nil {
			t.Errorf("a SELECT outside a transaction on the killed node: %v; want it run again on a survivor", err)
		}
		if err := a.Commit(ctx); !errors.Is(err, store.ErrInDoubt) {
			t.Errorf("COMMIT sent to the killed node: %v; want ErrInDoubt", err)
		}
		if err := <-cut; !errors.Is(err, store.ErrInDoubt) {
			t.Errorf("a statement outside a transaction under way on the killed node: %v; want ErrInDoubt", err)
		}
		_, err := b.Exec(ctx, inc, 3)
		if !errors.Is(err, store.ErrNodeLost) || !store.Retryable(err) {
			t.Errorf("a statement of an open transaction on the killed node: %v; want a retryable ErrNodeLost", err)
		}
		b.Rollback(ctx)
		// Both threads go on, on a survivor.
		for _, th := range []int{2, 5} {
			if err := db.Thread(th).InTx(ctx, func(tx *store.Tx) error { _, err := tx.Exec(ctx, inc, 3); return err }); err != nil {
				t.Errorf("thread %d after the loss: %v", th, err)
			}
		}
		st := db.Stats()
		if len(st.NodesLost) != 1 {
			t.Fatalf("nodes lost: %+v; want one", st.NodesLost)
		}
		l := st.NodesLost[0]
		if l.Node != cluster.Node(2).Addr() || l.InDoubt != 1 || l.Retried != 2 || l.Failed != 0 || l.At.Before(killed) {
			t.Errorf("loss %+v; want node %s after %v, 1 in doubt, 2 retried (the SELECT and the open transaction), 0 failed", l, cluster.Node(2).Addr(), killed)
		}
		if lost := other.Stats().NodesLost; len(lost) != 1 || lost[0].InDoubt != 1 || lost[0].Retried != 0 || lost[0].Failed != 0 {
			t.Errorf("the second DB's losses %+v; want node 2's, 1 in doubt (the statement outside a transaction), none retried or failed", lost)
		}
		if n := q.Int("SELECT COUNT(*) FROM acct WHERE id = ?", 10); n != 0 {
			t.Errorf("%d rows 10; the statement cut while it slept must not have written", n)
		}
		if n := q.IntOf(get, 3); n != 2 {
			t.Errorf("row 3 = %d; want the 2 writes made after the loss", n)
		}
		if n := q.IntOf(get, 2); n != 0 {
			t.Errorf("row 2 = %d; the transaction cut before its COMMIT must not have committed", n)
		}
	})
}

// accounts opens dsn with threads server threads and makes a table of
// three counters at 0, with statements to increment and read one.
func accounts(t *testing.T, dsn string, threads int) (db *store.DB, q storetest.Querier, inc, get *store.Stmt) {
	db = storetest.Open(t, dsn, store.Options{Threads: threads})
	q = storetest.Querier{T: t, DB: db}
	q.Exec("CREATE TABLE acct (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
	q.Exec("INSERT INTO acct VALUES (1, 0), (2, 0), (3, 0)")
	return db, q, q.Stmt("UPDATE acct SET n = n + 1 WHERE id = ?"), q.Stmt("SELECT n FROM acct WHERE id = ?")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not within 10 s")
		}
		time.Sleep(20 * time.Millisecond) // polling a replica's apply
	}
}
