package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// A second interrupt 0.3 s after the first stops a run at once, even one
// stuck where no interrupt reaches (its checks hang): the result file, by
// --out and under the default name, is complete, marked interrupted and
// aborted, holds what was measured, and report reads it; exit 1.
func TestSecondInterruptKeepsTheResult(t *testing.T) {
	bin := testsvc.Binary(t)
	for _, tt := range []struct {
		name          string
		first, second syscall.Signal
		defaultName   bool
	}{
		{"SIGINT+SIGINT --out", syscall.SIGINT, syscall.SIGINT, false},
		{"SIGTERM+SIGINT --out", syscall.SIGTERM, syscall.SIGINT, false},
		{"SIGINT+SIGINT default name", syscall.SIGINT, syscall.SIGINT, true},
		{"SIGTERM+SIGINT default name", syscall.SIGTERM, syscall.SIGINT, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// make test runs two cells that cover each signal and each
			// way of naming the result: SIGINT with --out, SIGTERM with
			// the default name.
			if (tt.first == syscall.SIGINT) == tt.defaultName {
				testsvc.SkipUnlessLong(t, "every pair of first signal and result name")
			} else {
				skipWhatMakeTestRan(t)
			}
			t.Parallel()
			dir := t.TempDir()
			args := []string{"run", "stockonline", "--db", "sqlite:" + filepath.Join(dir, "db.sqlite"),
				"--clients", "4", "--duration", "60s", "--ramp-up", "1s", "--think-time", "10ms"}
			out := filepath.Join(dir, "result.json")
			if !tt.defaultName {
				args = append(args, "--out", out)
			}
			p := testsvc.StartIn(t, dir, []string{failpoint.Env + "=run=print,checks=hang"}, bin, args...)
			if err := p.WaitFor("failpoint run", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // into the steady state; it synchronises nothing
			interruptTwice(t, p, tt.first, tt.second)
			if tt.defaultName {
				files, _ := filepath.Glob(filepath.Join(dir, "results", "stockonline-*.json"))
				if len(files) != 1 {
					t.Fatalf("result files %v, want one under results/", files)
				}
				out = files[0]
			}
			r, err := result.ReadFile(out)
			if err != nil {
				st, _ := os.Stat(out)
				t.Fatalf("result (%v): %v", st, err)
			}
			s := r.Summary
			if !s.Interrupted || !s.Aborted || s.Passed || s.Operations == 0 || len(r.Checks) != 0 || s.Unchecked == "" {
				t.Errorf("summary: interrupted %v during %q, aborted %v, passed %v, %d operations, %d checks, unchecked %q; want an aborted, interrupted run with operations and no checks",
					s.Interrupted, s.InterruptedDuring, s.Aborted, s.Passed, s.Operations, len(r.Checks), s.Unchecked)
			}
			rep := testsvc.Start(t, bin, "report", "--no-html", out)
			if code, err := rep.Wait(time.Minute); err != nil || code != 0 {
				t.Errorf("report: exit %d, %v:\n%s", code, err, rep.Stderr())
			}
		})
	}
}

// interruptTwice sends first, then second 0.3 s later, and expects the
// process to exit 1 (interrupted) promptly.
func interruptTwice(t *testing.T, p *testsvc.Proc, first, second syscall.Signal) {
	t.Helper()
	if err := p.Signal(first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := p.Signal(second); err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait(prompt)
	if err != nil {
		t.Fatalf("after the second interrupt: %v", err)
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1 (interrupted)", code)
	}
}

// drive takes the second interrupt as run does: a drive of a served
// Stock-Online whose checks (over its --db) hang.
func TestSecondInterruptKeepsTheDriveResult(t *testing.T) {
	bin := testsvc.Binary(t)
	url, dsn := servedStockOnline(t, bin)
	out := filepath.Join(t.TempDir(), "drive.json")
	p := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print,checks=hang"}, bin, "drive", "stockonline", "--target", url, "--db", dsn,
		"--clients", "4", "--duration", "60s", "--ramp-up", "1s", "--out", out)
	if err := p.WaitFor("failpoint run", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	interruptTwice(t, p, syscall.SIGINT, syscall.SIGINT)
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Summary; !s.Interrupted || !s.Aborted || s.Operations == 0 || r.Environment.Target != url {
		t.Errorf("drive result: interrupted %v, aborted %v, %d operations, target %q", s.Interrupted, s.Aborted, s.Operations, r.Environment.Target)
	}
}

// A drive over agents whose coordinator's checks hang: the second
// interrupt keeps the merged result, checks not run.
func TestSecondInterruptKeepsTheAgentsResult(t *testing.T) {
	bin := testsvc.Binary(t)
	nats := testsvc.NATS(t)
	target, dsn := servedStockOnline(t, bin)
	startAgents(t, bin, nats.URL(), "abort", 2)
	out := filepath.Join(t.TempDir(), "drive.json")
	p := testsvc.StartEnv(t, []string{failpoint.Env + "=checks=hang"}, bin, "drive", "stockonline", "--target", target, "--agents", "2",
		"--broker", nats.URL(), "--clients", "4", "--iterations", "2", "--db", dsn, "--out", out)
	if err := p.WaitFor("failpoint checks: hanging", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	interruptTwice(t, p, syscall.SIGTERM, syscall.SIGINT)
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(4 * 2 * stockonline.Mix().PerIteration())
	s := r.Summary
	if got := s.Operations + s.Errors + s.InDoubt; got != want || !s.Aborted || s.InterruptedDuring != "checks" || len(r.Agents) != 2 || len(r.Checks) != 0 {
		t.Errorf("merged result: %d operations (want %d), aborted %v during %q, %d agents, %d checks; want all operations, aborted during checks, 2 agents, no checks",
			got, want, s.Aborted, s.InterruptedDuring, len(r.Agents), len(r.Checks))
	}
}

// A command that does not take the abort (a sweep, here stuck in a
// point's checks) is ended by the second interrupt, as before. (It was
// report blocked opening a FIFO, which report now refuses at once.)
func TestSecondInterruptEndsOtherCommands(t *testing.T) {
	bin := testsvc.Binary(t)
	p := testsvc.StartEnv(t, []string{failpoint.Env + "=checks=hang"}, bin, "sweep", filepath.Join("..", "..", "experiments", "brebner-ran.yaml"),
		"--experiment", "experiment-1", "--clients", "2", "--iterations", "1", "--out-dir", t.TempDir(), "--quiet")
	if err := p.WaitFor("failpoint checks: hanging", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGINT)
	if _, err := p.Wait(300 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("the sweep, stuck in its checks, ended at the first interrupt (%v); the test shows nothing", err)
	}
	p.Signal(syscall.SIGINT)
	if code, err := p.Wait(5 * time.Second); code == 0 || (err != nil && !strings.Contains(err.Error(), "killed by interrupt")) {
		t.Errorf("sweep after two interrupts: exit %d, %v; want it ended by the interrupt", code, err)
	}
}

// A second interrupt while the agents still drive, their results not yet
// merged (here they are stopped, SIGSTOP, so they answer nothing), keeps
// what their per-second reports said: a complete result, aborted during
// the run, with every agent named and as many operations as the
// coordinator's live metrics counted.
func TestSecondInterruptKeepsTheAgentsLiveResult(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a drive over agents interrupted twice mid-run")
	bin := testsvc.Binary(t)
	nats := testsvc.NATS(t)
	target, _ := servedStockOnline(t, bin)
	agents := startAgents(t, bin, nats.URL(), "live", 2)
	out := filepath.Join(t.TempDir(), "drive.json")
	p := testsvc.Start(t, bin, "drive", "stockonline", "--target", target, "--agents", "2", "--broker", nats.URL(),
		"--clients", "4", "--duration", "2m", "--out", out, "--metrics-listen", "127.0.0.1:0")
	if err := p.WaitFor("metrics: http", time.Minute); err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`metrics: (http://\S+)`).FindStringSubmatch(p.Stderr())[1]
	var live int64
	for deadline := time.Now().Add(time.Minute); live == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the agents reported no operation in a minute")
		}
		time.Sleep(200 * time.Millisecond) // polling the coordinator's metrics
		live = completedIn(t, scrape(t, url))
	}
	for _, a := range agents {
		a.Signal(syscall.SIGSTOP)
		t.Cleanup(func() { a.Signal(syscall.SIGCONT) })
	}
	live = completedIn(t, scrape(t, url)) // nothing arrives from stopped agents
	interruptTwice(t, p, syscall.SIGINT, syscall.SIGINT)
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if !s.Aborted || s.InterruptedDuring != "run" || len(r.Agents) != 2 || len(r.Checks) != 0 || !strings.Contains(s.Unchecked, "per-second reports") {
		t.Errorf("result: aborted %v during %q, %d agents, %d checks, unchecked %q; want aborted during run, 2 agents, no checks, saying where its figures come from",
			s.Aborted, s.InterruptedDuring, len(r.Agents), len(r.Checks), s.Unchecked)
	}
	if s.Operations < live || s.Operations == 0 {
		t.Errorf("result: %d operations; the coordinator's live metrics had counted %d before the agents stopped", s.Operations, live)
	}
	if code, err := testsvc.Start(t, bin, "report", out).Wait(time.Minute); code != 0 || err != nil {
		t.Errorf("report on the kept result: exit %d, %v", code, err)
	}
}
