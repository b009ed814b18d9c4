package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A Galera node killed mid-run, through the CLI: the run goes on on the
// two survivors, the result records the loss (when, and the transactions
// in doubt, retried and failed), and the workload's consistency checks
// pass. One cluster for both workloads; the node killed under
// Stock-Online rejoins before ECperf's run kills another.
func TestGaleraNodeKilledMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private three-node Galera cluster, a node killed mid-run")
	cluster := testsvc.Galera(t)
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
			code, err := p.Wait(2 * time.Minute)
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
