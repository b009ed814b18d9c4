package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// startRun starts a timed Stock-Online run of the binary against dsn and
// returns once its clients are driving.
func startRun(t *testing.T, dsn, out string, extra ...string) *testsvc.Proc {
	t.Helper()
	args := append([]string{"run", "stockonline", "--db", dsn, "--persistence", "direct", "--clients", "8", "--server-threads", "4",
		"--duration", "60s", "--ramp-up", "1s", "--think-time", "2ms", "--out", out}, extra...)
	p := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print"}, testsvc.Binary(t), args...)
	if err := p.WaitFor("failpoint run", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	return p
}

// A database lost mid-run and not coming back: the run ends on its own,
// prints its summary and writes its result with the failure, when it
// began and what it did, and exits 3.
func TestDatabaseLostForGoodStillWritesTheResult(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private PostgreSQL killed mid-run")
	t.Parallel()
	pg := testsvc.Postgres(t)
	out := filepath.Join(t.TempDir(), "result.json")
	p := startRun(t, pg.DSN(), out)
	time.Sleep(2 * time.Second) // into the steady state; synchronises nothing
	killed := time.Now()
	pg.Kill()
	code, err := p.Wait(OutageLimit)
	if err != nil {
		t.Fatalf("the run did not end within %v of the database's loss: %v", OutageLimit, err)
	}
	t.Logf("exited %v after the kill", time.Since(killed).Round(time.Millisecond))
	if code != 3 {
		t.Errorf("exit code %d, want 3 (infrastructure)", code)
	}
	if !strings.Contains(p.Stdout(), "FAILED during run") || !strings.Contains(p.Stdout(), "result: "+out) {
		t.Errorf("the summary does not say the run failed or where its result is:\n%s", p.Stdout())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	f := r.Summary.Failure
	if f == nil || f.Phase != "run" || f.AtS == nil || !strings.Contains(f.Error, "database was lost") || f.Effect == "" {
		t.Fatalf("failure %+v, want the run phase, when, the cause and the effect", f)
	}
	if *f.AtS < 2 || f.At.Before(killed.Add(-time.Second)) {
		t.Errorf("the failure is dated %v (%.1f s into the run); the database was killed at %v, 2 s into it", f.At, *f.AtS, killed)
	}
	if r.Summary.Passed || r.Summary.Operations == 0 || r.Summary.Errors == 0 {
		t.Errorf("passed %v with %d operations and %d errors; want a failed run that kept what it measured", r.Summary.Passed, r.Summary.Operations, r.Summary.Errors)
	}
}

// OutageLimit is how long a run may take to end after its database is
// lost: the watchdog's grace and the operations under way failing.
const OutageLimit = 45 * time.Second

// A database restarted mid-run: the run goes on, the operations of the
// restart are errors or in doubt, and the checks, which reconcile the
// commits in doubt, find the database consistent.
func TestDatabaseRestartMidRunKeepsTheDatabaseConsistent(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private PostgreSQL restarted mid-run")
	t.Parallel()
	pg := testsvc.Postgres(t)
	out := filepath.Join(t.TempDir(), "result.json")
	p := startRun(t, pg.DSN(), out, "--max-error-rate", "100%", "--duration", "8s")
	time.Sleep(2 * time.Second) // into the steady state; synchronises nothing
	pg.Restart()
	code, err := p.Wait(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, rerr := result.ReadFile(out)
	if rerr != nil {
		t.Fatalf("no result file: %v", rerr)
	}
	if code != 0 || !r.Summary.Passed || r.Summary.Failure != nil {
		t.Errorf("exit %d, passed %v, failure %+v; want a run that survived the restart", code, r.Summary.Passed, r.Summary.Failure)
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed after the restart: %s", c.Name, c.Detail)
		}
	}
	if r.Database.ConnectionsLost+r.Database.InDoubt == 0 {
		t.Errorf("no connection was lost: the restart did not happen under load (%+v)", r.Database)
	}
	t.Logf("%d errors, %d in doubt, database %+v", r.Summary.Errors, r.Summary.InDoubt, r.Database)
}
