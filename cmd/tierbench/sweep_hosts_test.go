package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// hostsSweep is a sweep of two Stock-Online points on hosts, its business
// tier apart, over 100 Mbit with and without a delay.
const hostsSweep = `name: hosts-sweep
base:
  workload: stockonline
  placement: hosts
  tiers: 2
  persistence: direct
  clients: 2
  iterations: 1
repetitions: 1
experiments:
  - name: link
    axes:
      link: [100mbit, "100mbit,1ms"]
`

// startHostsSweep starts hostsSweep with env once the machine can make
// hosts; it returns the sweep, the links here before it and its results'
// directory. (The long-test gate stays in each test's body, where
// internal/testsvc/longtests finds it.)
func startHostsSweep(t *testing.T, env []string) (run *testsvc.Proc, links []string, dir string) {
	t.Helper()
	hostsAvailable(t)
	bin := testsvc.Binary(t)
	links = rootLinks(t)
	file := filepath.Join(t.TempDir(), "hosts.yaml")
	if err := os.WriteFile(file, []byte(hostsSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "out")
	return testsvc.StartEnv(t, env, bin, "sweep", file, "--out-dir", dir), links, dir
}

// A sweep runs its points of --placement hosts each on hosts of its own:
// every transaction of both points done and checked, each point's link
// recorded as the point set it, and the hosts of the first removed before
// the second (both points' namespaces have the sweep's PID in their names,
// so the second's could not have been made beside the first's); nothing
// is left behind.
func TestSweepOnHosts(t *testing.T) {
	testsvc.SkipUnlessLong(t, "two runs on hosts of their own, about 40 s (4 min under load)")
	t.Parallel()
	run, links, dir := startHostsSweep(t, nil)
	code, err := run.Wait(6 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("exit %d (%v): %s%s", code, err, run.Stdout(), run.Stderr())
	}
	pid := run.PID()
	if got := strings.Count(run.Stderr(), "placement hosts: 3 hosts on "+fmt.Sprintf("10.%d.%d.0/24", (pid>>8)&0xff, pid&0xff)); got != 2 {
		t.Errorf("hosts made %d times under the sweep's PID, want 2 (once a point): %s", got, run.Stderr())
	}
	for _, tc := range []struct {
		file    string
		rate    int64
		delayMS float64
	}{
		{"link=100mbit-1.json", 100e6, 0},
		{"link=100mbit_1ms-1.json", 100e6, 1},
	} {
		res := hostsResult(t, filepath.Join(dir, "link", tc.file))
		// Stock-Online's deck: 43 transactions an iteration, 1 of 2 clients.
		if res.Summary.Operations != 2*43 || res.Summary.Errors != 0 || !res.Summary.Passed {
			t.Errorf("%s: operations %d, errors %d, passed %v; want %d, 0, true", tc.file, res.Summary.Operations, res.Summary.Errors, res.Summary.Passed, 2*43)
		}
		env := res.Environment
		if l := env.Link; env.Placement != "hosts" || l == nil || l.RateBitS != tc.rate || l.DelayMS != tc.delayMS {
			t.Errorf("%s: placement %s, link %+v; want hosts, %d bit/s, %g ms", tc.file, env.Placement, l, tc.rate, tc.delayMS)
		}
		var names []string
		for _, h := range env.Hosts {
			names = append(names, h.Namespace)
		}
		want := []string{fmt.Sprintf("tierbench-%d-db", pid), fmt.Sprintf("tierbench-%d-business", pid), fmt.Sprintf("tierbench-%d-driver", pid)}
		if !slices.Equal(names, want) {
			t.Errorf("%s: hosts %v, want %v", tc.file, names, want)
		}
	}
	if !strings.Contains(run.Stdout(), "link=100mbit,1ms") {
		t.Errorf("the sweep's table names no point: %s", run.Stdout())
	}
	leftNothing(t, pid, links)
}

// An interrupt during a point on hosts ends that point's run (the sweep
// passes it on), keeps its result, runs no further point, and leaves no
// namespace, link or tier behind.
func TestSweepOnHostsInterrupted(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a run on hosts interrupted, about 20 s (2 min under load)")
	t.Parallel()
	run, links, dir := startHostsSweep(t, []string{failpoint.Env + "=run=pause"})
	if err := run.WaitFor("failpoint run: paused", 4*time.Minute); err != nil {
		t.Fatalf("%v: %s", err, run.Stderr())
	}
	if got := len(netnsOf(t, run.PID())); got != 4 {
		t.Errorf("%d namespaces while the point runs, want 4 (switch, db, business, driver)", got)
	}
	tiers := tierPIDs(t, run.Stderr())
	if len(tiers) != 1 {
		t.Errorf("tiers started: %v, want the business tier", tiers)
	}
	if err := run.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code != 1 || !strings.Contains(run.Stderr(), "sweep interrupted") {
		t.Errorf("exit %d (%v), want 1 and the sweep interrupted: %s", code, err, run.Stderr())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "link", "*.json"))
	if len(files) != 1 || filepath.Base(files[0]) != "link=100mbit-1.json" {
		t.Errorf("results %v, want the first point's alone", files)
	}
	if strings.Count(run.Stderr(), "placement hosts: 3 hosts on ") != 1 {
		t.Errorf("hosts made for a point after the interrupt: %s", run.Stderr())
	}
	leftNothing(t, run.PID(), links, tiers...)
}
