package main

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A Galera node lost mid-run, through the CLI, under each workload: cut
// from the others (--partition-db-node), then killed. One private cluster
// for all four runs, a start costing 10-40 s: each run only needs three
// Synced nodes and its own load of database test, which the run does.
// The cuts go first, as each cut node comes back (by IST) and leaves the
// cluster whole; the node the kills kill last would take an SST to come
// back, minutes on a loaded machine.
func TestGaleraNodeLostMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private three-node Galera cluster, a node cut from the others then nodes killed, mid-run")
	cluster := testsvc.Galera(t)
	t.Run("partitioned", func(t *testing.T) {
		t.Run("stockonline", func(t *testing.T) {
			galeraPartition(t, cluster, 1, []string{"run", "stockonline", "--persistence", "direct", "--clients", "8", "--server-threads", "6",
				"--ramp-up", "1s", "--think-time", "2ms", "--max-error-rate", "100%"})
		})
		t.Run("ecperf", func(t *testing.T) {
			galeraPartition(t, cluster, 2, []string{"run", "ecperf", "--po-dispatch", "poller", "--server-threads", "6", "--ramp-up", "1s",
				"--cycle-scale", "0.05", "--lead-time-unit", "10s", "--max-error-rate", "100%"})
		})
	})
	// The reset between the two: every node Synced again (a cut that
	// failed its test may still be healing), and database test dropped,
	// which the kills' runs load again: a killed node rejoins by a full
	// state transfer (SST), whose time grows with the data the cuts' runs
	// left (over the 90 s a start may take, under load).
	for _, n := range cluster.Nodes() {
		waitUntil(t, 2*time.Minute, "node "+n.Addr()+" Synced", func() bool { s, _ := n.Status("wsrep_local_state"); return s == "4" })
	}
	for _, ddl := range []string{"DROP DATABASE test", "CREATE DATABASE test"} {
		// A statement without rows: Query's scan says so (sql.ErrNoRows) after running it.
		if err := cluster.Node(0).Query(ddl); err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	t.Run("killed", func(t *testing.T) { galeraKills(t, cluster) })
}

// galeraKills kills a node in each workload's run: the run goes on on the
// two survivors, the result records the loss (when, and the transactions
// in doubt, retried and failed), and the workload's consistency checks
// pass. The node killed under Stock-Online rejoins before ECperf's run
// kills another.
func galeraKills(t *testing.T, cluster *testsvc.GaleraCluster) {
	runs := []struct {
		name string
		args []string
		kill int
	}{
		{"stockonline", []string{"run", "stockonline", "--persistence", "direct", "--clients", "8", "--server-threads", "6",
			"--duration", "10s", "--ramp-up", "1s", "--think-time", "2ms", "--max-error-rate", "100%"}, 1},
		{"ecperf", []string{"run", "ecperf", "--po-dispatch", "poller", "--server-threads", "6", "--duration", "10s", "--ramp-up", "1s",
			"--cycle-scale", "0.05", "--lead-time-unit", "10s", "--max-error-rate", "100%"}, 2},
	}
	for i, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			if i > 0 {
				cluster.Node(runs[i-1].kill).Start() // rejoins: two of three keep the quorum
			}
			out := filepath.Join(t.TempDir(), "result.json")
			args := append(run.args, "--db", cluster.DSN(), "--out", out)
			p := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print"}, testsvc.Binary(t), args...)
			if err := p.WaitFor("failpoint run", 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // into the steady state; synchronises nothing
			killed := time.Now()
			victim := cluster.Node(run.kill)
			victim.Kill()
			code, err := p.Wait(4 * time.Minute) // a loaded machine drains ECperf for minutes
			if err != nil {
				t.Fatal(err)
			}
			r, rerr := result.ReadFile(out)
			if rerr != nil {
				t.Fatalf("no result file: %v\n%s", rerr, p.Stdout())
			}
			// The survivors stall until the cluster evicts the dead node
			// (evs.suspect_timeout, 5 s): ECperf's response-time rules
			// may fail (exit 1), but the run must not (exit 3).
			if code == 2 || code == 3 || r.Summary.Failure != nil {
				t.Errorf("exit %d, failure %+v; want a run that went on without the node\n%s", code, r.Summary.Failure, p.Stdout())
			}
			for _, c := range r.Checks {
				if !c.Passed {
					t.Errorf("check %s failed after the node's loss: %s", c.Name, c.Detail)
				}
			}
			if len(r.Checks) == 0 {
				t.Error("no consistency checks ran")
			}
			lost := r.Database.NodesLost
			if len(lost) != 1 || lost[0].Node != victim.Addr() || lost[0].At.Before(killed) {
				t.Fatalf("nodes lost %+v; want %s, after %v", lost, victim.Addr(), killed)
			}
			l := lost[0]
			// Six threads, two on the victim: what they were doing when it
			// died is in doubt, retried or failed; the driver's counts
			// hold them.
			if l.InDoubt != r.Database.InDoubt || l.InDoubt > 2 || l.InDoubt+l.Retried+l.Failed > 2*int64(r.Summary.Retries+1) {
				t.Errorf("loss %+v against database %+v and %d retries", l, r.Database, r.Summary.Retries)
			}
			t.Logf("%s: node %s lost %.1f s after the kill: %d in doubt, %d retried, %d failed; run: %d operations, %d errors, %d in doubt, %d retries, aborts %+v",
				run.name, l.Node, l.At.Sub(killed).Seconds(), l.InDoubt, l.Retried, l.Failed,
				r.Summary.Operations, r.Summary.Errors, r.Summary.InDoubt, r.Summary.Retries, r.Summary.Aborts)
		})
	}
}

// galeraPartition runs args with node cut from the others 2 s into the
// measured run for 8 s (--partition-db-node; a 3-s cut, measured under
// load, only stalled the node's clients for 3 s: none failed, so the run
// lost no node) and asserts what the run
// must show: it ends as documented (0; ECperf's response-time rules may
// fail it, 1), its checks pass, every node holds the same data and, for
// Stock-Online, exactly the trades the run counted; the result records
// the cut and the node's loss and return; and the threads of that node
// ran on it again after its return (its local commits rose).
func galeraPartition(t *testing.T, cluster *testsvc.GaleraCluster, node int, args []string) {
	victim := cluster.Node(node)
	out := filepath.Join(t.TempDir(), "result.json")
	args = append(args, "--duration", "30s", "--db", cluster.DSN(), "--out", out, "--partition-db-node", fmt.Sprintf("%d,2s,8s", node))
	p := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print"}, testsvc.Binary(t), args...)
	if err := p.WaitFor("failpoint run", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	// The node leaves (not Synced) and comes back (Synced): from then
	// on the run's threads of that node must commit on it again.
	state := func() string { s, _ := victim.Status("wsrep_local_state"); return s }
	waitUntil(t, 30*time.Second, "the node cut", func() bool { return state() != "4" })
	waitUntil(t, 2*time.Minute, "the node back (Synced)", func() bool { return state() == "4" })
	backAt := time.Now()
	time.Sleep(time.Second) // the store probes every 250 ms
	before, err := victim.Status("wsrep_local_commits")
	if err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait(4 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := victim.Status("wsrep_local_commits")
	r, rerr := result.ReadFile(out)
	if rerr != nil {
		t.Fatalf("no result file: %v\n%s", rerr, p.Stdout())
	}
	if code != 0 && (code != 1 || args[1] != "ecperf") || r.Summary.Failure != nil {
		t.Errorf("exit %d, failure %+v; want 0 (ECperf: 0 or 1, its response-time rules)\n%s", code, r.Summary.Failure, p.Stdout())
	}
	if len(r.Checks) == 0 {
		t.Error("no consistency checks ran")
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed after the partition: %s", c.Name, c.Detail)
		}
	}
	if ps := r.Environment.Partitions; len(ps) != 1 || !strings.Contains(ps[0].Between[0], victim.Addr()) || ps[0].ToS-ps[0].FromS < 8 {
		t.Errorf("partitions %+v; want node %s cut for 8 s", ps, victim.Addr())
	}
	lost := r.Database.NodesLost
	if len(lost) != 1 || lost[0].Node != victim.Addr() || lost[0].Back == nil || !lost[0].Back.After(lost[0].At) {
		t.Fatalf("nodes lost %+v; want %s, lost and back", lost, victim.Addr())
	}
	l := lost[0]
	if l.InDoubt != r.Database.InDoubt || l.InDoubt > 2 {
		t.Errorf("loss %+v against database %+v", l, r.Database)
	}
	b, _ := strconv.ParseInt(before, 10, 64)
	a, _ := strconv.ParseInt(after, 10, 64)
	if a <= b {
		t.Errorf("node %s's local commits %d after its return, %d at the end: the run's threads did not move back to it", victim.Addr(), b, a)
	}
	// Every node holds what the run committed, the returned one too.
	table, count := "test.StockTransaction", "COUNT(*)"
	if args[1] == "ecperf" {
		table, count = "test.m_workorder", "COUNT(*)"
	}
	var counts [testsvc.GaleraNodes]int64
	for i, n := range cluster.Nodes() {
		if err := n.Query("SELECT "+count+" FROM "+table, &counts[i]); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	if counts[0] != counts[1] || counts[1] != counts[2] {
		t.Errorf("%s rows on the three nodes: %v; want the same on each", table, counts)
	}
	if args[1] == "stockonline" {
		// Exactly the trades the run counted, none lost or doubled.
		for _, c := range r.Checks {
			var written, buys, sells int64
			if c.Name != "transactions-match-trades" {
				continue
			}
			if _, err := fmt.Sscanf(c.Detail, "%d StockTransaction rows written = %d successful Buy + %d successful Sell", &written, &buys, &sells); err != nil {
				t.Fatalf("%s: %q: %v", c.Name, c.Detail, err)
			}
			if counts[0] != written || l.InDoubt == 0 && written != buys+sells {
				t.Errorf("%d StockTransaction rows, the check read %d, the run counted %d buys + %d sells (%d in doubt)", counts[0], written, buys, sells, l.InDoubt)
			}
		}
	}
	t.Logf("%s: node %s cut %.1f-%.1f s; lost %s, back %s (%.1f s later; the test saw it synced %.1f s after the loss): %d in doubt, %d retried, %d failed; local commits on it after its return: %d; run: %d operations, %d errors, %d in doubt, %d retries, aborts %+v; exit %d",
		args[1], l.Node, r.Environment.Partitions[0].FromS, r.Environment.Partitions[0].ToS, l.At.UTC().Format("15:04:05.000"), l.Back.UTC().Format("15:04:05.000"),
		l.Back.Sub(l.At).Seconds(), backAt.Sub(l.At).Seconds(), l.InDoubt, l.Retried, l.Failed, a-b,
		r.Summary.Operations, r.Summary.Errors, r.Summary.InDoubt, r.Summary.Retries, r.Summary.Aborts, code)
}

// waitUntil polls cond every 100 ms until it holds, or fails the test
// after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
