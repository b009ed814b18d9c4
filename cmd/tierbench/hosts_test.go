package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// hostsAvailable skips unless the test may make namespaces and start a
// private PostgreSQL.
func hostsAvailable(t *testing.T) {
	t.Helper()
	testsvc.Namespaces(t)
	if err := placement.Check(); err != nil {
		if testsvc.Require() {
			t.Fatalf("%v (TIERBENCH_REQUIRE_SERVICES=1)", err)
		}
		t.Skipf("skipping: %v; set TIERBENCH_REQUIRE_SERVICES=1 to fail instead", err)
	}
}

// hostsResult reads the result file at path.
func hostsResult(t *testing.T, path string) result.Result {
	t.Helper()
	var res result.Result
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// netnsOf lists the namespaces a run of process pid made that are still
// there.
func netnsOf(t *testing.T, pid int) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], fmt.Sprintf("tierbench-%d-", pid)) {
			ours = append(ours, f[0])
		}
	}
	return ours
}

// rootLinks lists the links of the namespace the test runs in.
func rootLinks(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			links = append(links, strings.TrimSuffix(f[1], ":"))
		}
	}
	slices.Sort(links)
	return links
}

// leftNothing checks that the run of pid left no namespace and made no
// link here, and that the processes it named are gone.
func leftNothing(t *testing.T, pid int, linksBefore []string, pids ...int) {
	t.Helper()
	if left := netnsOf(t, pid); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
	if after := rootLinks(t); !slices.Equal(after, linksBefore) {
		t.Errorf("links here after the run %v, before %v", after, linksBefore)
	}
	for _, p := range pids {
		if syscall.Kill(p, 0) == nil {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			t.Errorf("process %d still running: %q", p, b)
		}
	}
}

// A Stock-Online run with its business tier apart on three hosts over a
// 100mbit link with 1 ms each way: every transaction done, the checks
// passed, the hosts and the link recorded, and nothing left behind.
func TestHostsRun(t *testing.T) {
	t.Parallel()
	hostsAvailable(t)
	bin := testsvc.Binary(t)
	links := rootLinks(t)
	out := filepath.Join(t.TempDir(), "r.json")
	run := testsvc.Start(t, bin, "run", "stockonline", "--placement", "hosts", "--link", "100mbit,1ms", "--tiers", "2",
		"--persistence", "direct", "--clients", "4", "--iterations", "2", "--pg-setting", "work_mem=8MB", "--out", out)
	code, err := run.Wait(4 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("exit %d (%v): %s", code, err, run.Stderr())
	}
	res := hostsResult(t, out)
	// Stock-Online's deck: 43 transactions an iteration, 2 of 4 clients.
	if res.Summary.Operations != 4*2*43 || res.Summary.Errors != 0 || !res.Summary.Passed {
		t.Errorf("operations %d, errors %d, passed %v; want %d, 0, true", res.Summary.Operations, res.Summary.Errors, res.Summary.Passed, 4*2*43)
	}
	env := res.Environment
	pid := run.PID()
	net := fmt.Sprintf("10.%d.%d.", (pid>>8)&0xff, pid&0xff)
	var roles []string
	for i, h := range env.Hosts {
		roles = append(roles, h.Role)
		if h.Namespace != fmt.Sprintf("tierbench-%d-%s", pid, h.Role) || h.Address != fmt.Sprintf("%s%d", net, i+2) || len(h.Runs) != 1 {
			t.Errorf("host %+v", h)
		}
	}
	if !slices.Equal(roles, []string{"db", "business", "driver"}) || env.Placement != "hosts" {
		t.Errorf("placement %s, hosts %v; want db, business, driver", env.Placement, roles)
	}
	if len(env.Hosts) == 3 && (!strings.HasPrefix(env.Hosts[0].Runs[0], "PostgreSQL ") || !strings.HasPrefix(env.Hosts[1].Runs[0], "the business tier (pid ")) {
		t.Errorf("what ran: %v, %v", env.Hosts[0].Runs, env.Hosts[1].Runs)
	}
	if l := env.Link; l == nil || l.RateBitS != 100e6 || l.DelayMS != 1 || !strings.Contains(l.How, "tbf") || !strings.Contains(l.How, "delaying TCP proxy") {
		t.Errorf("link %+v", l)
	}
	if got := env.PGSettings["work_mem"]; got != "8MB" {
		t.Errorf("the db host's server reports work_mem %q, want the --pg-setting's 8MB", got)
	}
	if res.Config.Link != "100mbit,1ms" || res.Config.DB.String() != "" {
		t.Errorf("config link %q, db %q", res.Config.Link, res.Config.DB)
	}
	// Over the delayed link a transaction pays at least two round trips
	// (driver to business tier, business tier to database): 4 ms.
	if p50 := res.Operations["QueryById"].Latency.P50; p50 < 4 {
		t.Errorf("QueryById p50 %.3f ms, want at least 4 (two round trips of 2 × 1 ms)", p50)
	}
	leftNothing(t, pid, links)
}

// An interrupt while the tiers run ends the run on the driver's host,
// which stops its tiers and its server; then the hosts go.
func TestHostsInterrupted(t *testing.T) {
	t.Parallel()
	hostsAvailable(t)
	bin := testsvc.Binary(t)
	links := rootLinks(t)
	run := testsvc.StartEnv(t, []string{failpoint.Env + "=run=pause"}, bin, "run", "rubis", "--placement", "hosts", "--tiers", "3", "--style", "facade",
		"--link", "1gbit", "--clients", "2", "--duration", "1m", "--out", filepath.Join(t.TempDir(), "r.json"))
	if err := run.WaitFor("failpoint run: paused", 4*time.Minute); err != nil {
		t.Fatalf("%v: %s", err, run.Stderr())
	}
	if got := len(netnsOf(t, run.PID())); got != 5 {
		t.Errorf("%d namespaces while the run runs, want 5 (switch, db, business, web, driver)", got)
	}
	tiers := tierPIDs(t, run.Stderr())
	if len(tiers) != 2 {
		t.Errorf("tiers started: %v, want the business and web tiers", tiers)
	}
	if err := run.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code == 0 {
		t.Errorf("exit %d (%v), want the interrupted run's failure: %s", code, err, run.Stderr())
	}
	leftNothing(t, run.PID(), links, tiers...)
}

// tierPIDs reads "started the … tier: pid N, URL" lines.
func tierPIDs(t *testing.T, stderr string) []int {
	var pids []int
	for _, line := range strings.Split(stderr, "\n") {
		var pid int
		if _, rest, ok := strings.Cut(line, "tier: pid "); ok && strings.HasPrefix(line, "started the ") {
			if _, err := fmt.Sscanf(rest, "%d,", &pid); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// A run that dies on the driver's host (killed while it loads) takes its
// server with it, and the hosts still go: the parent removes them.
func TestHostsRunDiesHostsGo(t *testing.T) {
	t.Parallel()
	hostsAvailable(t)
	bin := testsvc.Binary(t)
	links := rootLinks(t)
	run := testsvc.StartEnv(t, []string{failpoint.Env + "=load=kill"}, bin, "run", "stockonline", "--placement", "hosts", "--tiers", "2",
		"--clients", "1", "--iterations", "1", "--out", filepath.Join(t.TempDir(), "r.json"))
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit %d (%v), want %d (the run on the driver's host killed): %s", code, err, 128+int(syscall.SIGKILL), run.Stderr())
	}
	leftNothing(t, run.PID(), links)
}

// Bad uses of the hosts' flags are usage errors (exit 2) naming what is
// allowed, and make no namespace.
func TestHostsUsage(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--link", "100mbit"}, "--link 100mbit joins the hosts of --placement hosts; give --placement hosts, or drop --link"},
		{[]string{"--partition", "2s,5s"}, "--partition 2s,5s joins the hosts of --placement hosts"},
		{[]string{"--placement", "hosts", "--link", "100mb"}, `--link "100mb": rate "100mb" has no unit; want RATE[,DELAY]: a rate in bit, kbit, mbit or gbit per second (100mbit) and a one-way delay (0.5ms, at most 1s)`},
		{[]string{"--placement", "hosts", "--link", "100mbit,slow"}, `--link "100mbit,slow": delay "slow" is not a duration`},
		{[]string{"--placement", "hosts", "--db", "sqlite"}, "SQLite, a file inside tierbench's processes, cannot be placed on a CPU or a host of its own); leave --db unset"},
		{[]string{"--placement", "hosts", "--partition", "soon"}, `--partition "soon": want AT,FOR`},
		{[]string{"--placement", "hosts", "--partition", "2s,5s"}, "--partition cuts the business tier from its caller, and this run has none apart: give --tiers 2 (stockonline) or --tiers 3 (rubis)"},
		{[]string{"--placement", "hosts", "--tiers", "2", "--app-servers", "2"}, "--placement hosts puts one middle tier on hosts of its own: drop --app-servers and --balancer"},
	} {
		run := testsvc.Start(t, bin, append([]string{"run", "stockonline", "--iterations", "1", "--clients", "1", "--out", filepath.Join(t.TempDir(), "r.json")}, tc.args...)...)
		code, err := run.Wait(time.Minute)
		if err != nil || code != 2 || !strings.Contains(run.Stderr(), tc.want) || strings.Count(run.Stderr(), "tierbench: ") != 2 {
			t.Errorf("%v: exit %d (%v), stderr %q; want 2 and %q", tc.args, code, err, run.Stderr(), tc.want)
		}
		if os.Geteuid() == 0 {
			if left := netnsOf(t, run.PID()); len(left) > 0 {
				t.Errorf("%v: namespaces made: %v", tc.args, left)
			}
		}
	}
}

// The business tier cut from the web tier for 5 s mid-run: the pages
// under way wait for the link and go on once it heals (TCP retransmits
// across the cut); nothing fails, nothing is lost or doubled (the
// checks reconcile every table with the successful interactions), and
// the result records the cut.
func TestHostsPartition(t *testing.T) {
	t.Parallel()
	testsvc.SkipUnlessLong(t, "a 5 s partition in a 12 s run")
	hostsAvailable(t)
	bin := testsvc.Binary(t)
	links := rootLinks(t)
	out := filepath.Join(t.TempDir(), "r.json")
	run := testsvc.Start(t, bin, "run", "rubis", "--placement", "hosts", "--tiers", "3", "--style", "facade", "--link", "100mbit",
		"--clients", "5", "--duration", "12s", "--think-scale", "0.05", "--partition", "2s,5s", "--out", out)
	code, err := run.Wait(5 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("exit %d (%v): %s", code, err, run.Stderr())
	}
	res := hostsResult(t, out)
	if res.Summary.Errors != 0 || res.Summary.InDoubt != 0 || !res.Summary.Passed || len(res.Checks) != 9 {
		t.Errorf("errors %d, in doubt %d, passed %v, %d checks; want 0, 0, true, 9", res.Summary.Errors, res.Summary.InDoubt, res.Summary.Passed, len(res.Checks))
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check %s: %s", c.Name, c.Detail)
		}
	}
	p := res.Environment.Partitions
	if len(p) != 1 || p[0].Between != [2]string{"business", "web"} || p[0].FromS < 2 || p[0].ToS-p[0].FromS < 5 {
		t.Fatalf("partitions %+v, want business from web from 2 s for 5 s", p)
	}
	// A page that called the business tier during the cut waited for it.
	var longest float64
	for _, op := range res.Operations {
		longest = max(longest, op.Latency.Max)
	}
	if longest < 2000 {
		t.Errorf("longest interaction %.0f ms: none waited through the cut", longest)
	}
	leftNothing(t, run.PID(), links)
}
