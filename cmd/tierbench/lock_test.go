package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// wantLocked runs tierbench with args and checks that it is refused at
// once (exit 3) naming the holder: its pid, this host, a start time and
// what it does.
func wantLocked(t *testing.T, bin string, holder int, what string, args ...string) {
	t.Helper()
	p := testsvc.Start(t, bin, args...)
	code, err := p.Wait(time.Minute)
	host, _ := os.Hostname()
	named := regexp.MustCompile(fmt.Sprintf(`in use by tierbench %s \(pid %d on host %s, since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, `,
		regexp.QuoteMeta(what), holder, regexp.QuoteMeta(host)))
	if err != nil || code != 3 || !named.MatchString(p.Stderr()) {
		t.Errorf("%s: exited %d (%v), want 3 and the holder named (%s): %s", strings.Join(args[:2], " "), code, err, named, p.Stderr())
	}
}

// Two commands cannot destroy each other's database (issue 27 §3): while
// a run holds it, another run, a load, a run --no-load, a serve and a
// drive --db are refused; SIGKILLed, the run leaves it free; a run's own
// tier serves under its lock; two serves share it, and a load is refused
// while they do.
func TestDatabaseLockRefusesASecondCommand(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	storetest.Each(t, func(t *testing.T, dsn string) {
		t.Parallel()
		dir := t.TempDir()
		load := []string{"load", "stockonline", "--db", dsn}
		if p := testsvc.Start(t, bin, load...); func() bool { code, err := p.Wait(2 * time.Minute); return err != nil || code != 0 }() {
			t.Fatalf("load: %s", p.Stderr())
		}
		// Paused where it would rebuild the tables: the run holds the
		// database from its start.
		first := testsvc.StartEnv(t, []string{failpoint.Env + "=load=pause"}, bin,
			"run", "stockonline", "--db", dsn, "--iterations", "1", "--out", filepath.Join(dir, "first.json"))
		if err := first.WaitFor("failpoint load: paused", time.Minute); err != nil {
			t.Fatalf("%v: %s", err, first.Stderr())
		}
		second := filepath.Join(dir, "second.json")
		wantLocked(t, bin, first.PID(), "run stockonline", "run", "stockonline", "--db", dsn, "--iterations", "1", "--out", second)
		wantLocked(t, bin, first.PID(), "run stockonline", "run", "stockonline", "--db", dsn, "--no-load", "--iterations", "1", "--out", second)
		wantLocked(t, bin, first.PID(), "run stockonline", load...)
		wantLocked(t, bin, first.PID(), "run stockonline", "serve", "stockonline", "--db", dsn, "--listen", "127.0.0.1:0")
		// A drive's checks read the database before it reaches its target.
		wantLocked(t, bin, first.PID(), "run stockonline", "drive", "stockonline", "--target", "http://127.0.0.1:1", "--db", dsn, "--out", second)

		// The kernel ends the killed process's connection or file, and
		// with it the lock.
		first.Kill()
		if p := testsvc.Start(t, bin, load...); func() bool { code, err := p.Wait(2 * time.Minute); return err != nil || code != 0 }() {
			t.Fatalf("load after the holder was killed: %s", p.Stderr())
		}
		// The tier a run starts as its child serves under its parent's
		// lock.
		tiers := testsvc.Start(t, bin, "run", "stockonline", "--tiers", "2", "--db", dsn, "--clients", "2", "--iterations", "1", "--out", filepath.Join(dir, "tiers.json"))
		if code, err := tiers.Wait(2 * time.Minute); err != nil || code != 0 {
			t.Fatalf("run --tiers 2 exited %d (%v): %s", code, err, tiers.Stderr())
		}

		var serves []*testsvc.Proc
		for range 2 {
			srv := testsvc.Start(t, bin, "serve", "stockonline", "--db", dsn, "--listen", "127.0.0.1:0")
			if err := srv.WaitFor("serving stockonline ", time.Minute); err != nil {
				t.Fatalf("%v: %s", err, srv.Stderr())
			}
			serves = append(serves, srv)
		}
		wantLocked(t, bin, serves[0].PID(), "serve stockonline", load...)
	})
}
