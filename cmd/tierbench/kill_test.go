package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// count runs a COUNT(*) query on the database file.
func count(t *testing.T, dsn, sql string) int64 {
	t.Helper()
	// Closed at once, not at the test's end: a child process is to use
	// the file next.
	db, err := storetest.Backends().Open(context.Background(), store.MustParseDSN(dsn), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return storetest.Querier{T: t, DB: db}.Int(sql)
}

// ECperf with queue dispatch, SIGKILLed after a ScheduleWorkOrder committed
// its PO and outbox row and before the relay published it: the next run on
// the database publishes and sends that PO, once, and its checks pass.
func TestRunKilledBetweenCommitAndPublishLosesNoPO(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a run killed between commit and publish, then run again")
	t.Parallel()
	bin := testsvc.Binary(t)
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "db.sqlite")
	ecperf := []string{"run", "ecperf", "--db", dsn, "--po-dispatch", "queue", "--ramp-up", "1s",
		"--cycle-scale", "0.05", "--lead-time-unit", "10ms"}

	first := testsvc.StartEnv(t, []string{failpoint.Env + "=outbox-publish=kill"}, bin,
		append(ecperf, "--duration", "60s", "--out", filepath.Join(dir, "killed.json"))...)
	if err := first.WaitFor("failpoint outbox-publish: killing the process", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, err := first.Wait(30 * time.Second); err == nil {
		t.Fatalf("the first run exited %d; it was to be killed", code)
	}
	left := count(t, dsn, "SELECT COUNT(*) FROM s_outbox")
	if left == 0 {
		t.Fatal("the killed run left no outbox row: it was not killed between commit and publish")
	}

	out := filepath.Join(dir, "next.json")
	next := testsvc.Start(t, bin, append(ecperf, "--no-load", "--duration", "6s", "--out", out)...)
	code, err := next.Wait(3 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if code > 1 {
		t.Fatalf("the next run exited %d (1 is allowed: a short run misses the kit's ±5%% mix rule)", code)
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed after the kill: %s", c.Name, c.Detail)
		}
	}
	if n := count(t, dsn, "SELECT COUNT(*) FROM s_outbox"); n != 0 {
		t.Errorf("%d outbox rows left after the next run, want 0 (%d were left by the killed one)", n, left)
	}
	if n := count(t, dsn, "SELECT COUNT(*) FROM s_purchase_order WHERE po_status < 2"); n != 0 {
		t.Errorf("%d POs neither sent nor received after the next run's drain", n)
	}
	t.Logf("the killed run left %d outbox rows; the next one sent them", left)
}
