package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// servedStockOnline loads Stock-Online into a SQLite file and serves its
// business tier in a child process; it returns the tier's URL and the
// database's DSN.
func servedStockOnline(t *testing.T, bin string) (url, dsn string) {
	t.Helper()
	dsn = "sqlite:" + filepath.Join(t.TempDir(), "stockonline.sqlite")
	return serveStockOnline(t, bin, dsn), dsn
}

// serveStockOnline loads Stock-Online into dsn and serves its business
// tier in a child process; it returns the tier's URL.
func serveStockOnline(t *testing.T, bin, dsn string) (url string) {
	t.Helper()
	load := testsvc.Start(t, bin, "load", "stockonline", "--db", dsn)
	if code, err := load.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("load exited %d (%v): %s", code, err, load.Stderr())
	}
	srv := testsvc.Start(t, bin, "serve", "stockonline", "--db", dsn, "--listen", "127.0.0.1:0")
	if err := srv.WaitFor("serving stockonline ", time.Minute); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`serving stockonline business tier .* on (http://\S+);`).FindStringSubmatch(srv.Stdout())
	if m == nil {
		t.Fatalf("serve printed no URL: %q", srv.Stdout())
	}
	return m[1]
}

// agentsCompleted scrapes a coordinator's metrics and sums the agents'
// completed operations.
func agentsCompleted(t *testing.T, url string) int64 {
	t.Helper()
	body := scrape(t, url)
	if !strings.Contains(body, "tierbench_agents_operation_latency_seconds_bucket") {
		t.Error("no tierbench_agents_operation_latency_seconds in the coordinator's metrics")
	}
	return completedIn(t, body)
}

// scrape is the text of a metrics page.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// completedIn sums the agents' completed operations on a metrics page.
func completedIn(t *testing.T, body string) int64 {
	t.Helper()
	var sum int64
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "tierbench_agents_operations_total{") && strings.Contains(line, `outcome="completed"`) {
			f := strings.Fields(line)
			n, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			sum += int64(n)
		}
	}
	return sum
}

// startAgents starts n agent processes on the broker, named prefix1…n.
func startAgents(t *testing.T, bin, broker, prefix string, n int) []*testsvc.Proc {
	t.Helper()
	var agents []*testsvc.Proc
	for i := 1; i <= n; i++ {
		a := testsvc.Start(t, bin, "agent", "--broker", broker, "--name", fmt.Sprintf("%s%d", prefix, i))
		if err := a.WaitFor("waiting for drives", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	return agents
}

// Three agents, each a child process, drive a served Stock-Online
// together: the merged result holds exactly the operations the terminals
// were dealt (12 clients × 4 iterations × the deck), the agents' parts add
// up to it, its histograms hold every completed operation, and the
// coordinator's checks of the database (--db) hold against the merged
// outcomes.
func TestDriveOverThreeAgents(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	nats := testsvc.NATS(t)
	target, dsn := servedStockOnline(t, bin)
	startAgents(t, bin, nats.URL(), "merge", 3)
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "stockonline", "--target", target, "--agents", "3", "--broker", nats.URL(),
		"--clients", "12", "--iterations", "4", "--db", dsn, "--out", out, "--metrics-listen", "127.0.0.1:0", "--metrics-linger", "30s")
	// The coordinator's live metrics, once it is done, hold every operation
	// the agents reported: the same as the result.
	if err := drive.WaitFor("result: ", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`metrics: (http://\S+)`).FindStringSubmatch(drive.Stderr())
	if m == nil {
		t.Fatalf("no metrics URL: %s", drive.Stderr())
	}
	live := agentsCompleted(t, m[1])
	drive.Signal(syscall.SIGINT) // ends the linger
	if code, err := drive.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("drive exited %d (%v): %s\n%s", code, err, drive.Stdout(), drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(12 * 4 * stockonline.Mix().PerIteration())
	if got := r.Summary.Operations + r.Summary.Errors + r.Summary.InDoubt; got != want {
		t.Errorf("merged result: %d operations, want %d (12 clients × 4 iterations × %d)", got, want, stockonline.Mix().PerIteration())
	}
	if len(r.Agents) != 3 {
		t.Fatalf("result names %d agents, want 3: %+v", len(r.Agents), r.Agents)
	}
	var sum int64
	terminals := 0
	for _, a := range r.Agents {
		if a.Status != result.AgentOK || a.Host == "" || a.PID == 0 {
			t.Errorf("agent %+v: want ok, with its host and pid", a)
		}
		sum += a.Operations
		terminals += a.Terminals
	}
	if sum != r.Summary.Completed || terminals != 12 {
		t.Errorf("agents completed %d operations over %d terminals; the result %d over 12", sum, terminals, r.Summary.Completed)
	}
	if len(r.Checks) == 0 {
		t.Error("no checks with --db")
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	if r.Tiers == nil || r.Tiers.Processes != 4 || r.Tiers.Total.Pages != want || r.Tiers.Total.Calls != want {
		t.Errorf("tiers = %+v; want the agents' calls merged: %d operations, one call each, over 4 processes (3 agents and the tier)", r.Tiers, want)
	}
	if live != r.Summary.Operations {
		t.Errorf("the coordinator's live metrics counted %d completed operations, the result %d", live, r.Summary.Operations)
	}
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range snap.Ops {
		if op.Latency.Count() != op.Count() {
			t.Errorf("%s: merged histogram of %d samples, %d operations", op.Name, op.Latency.Count(), op.Count())
		}
	}
}

// An agent killed mid-drive is named lost in the result; the drive exits 3
// (the result still written), or 0 with --tolerate-agent-loss, and then
// the figures are exactly the survivors' parts.
func TestDriveAgentKilled(t *testing.T) {
	testsvc.SkipUnlessLong(t, "an agent killed mid-drive")
	t.Parallel()
	bin := testsvc.Binary(t)
	nats := testsvc.NATS(t)
	target, _ := servedStockOnline(t, bin)
	for _, tolerate := range []bool{false, true} {
		prefix := map[bool]string{false: "strict", true: "tolerant"}[tolerate]
		agents := startAgents(t, bin, nats.URL(), prefix, 3)
		out := filepath.Join(t.TempDir(), prefix+".json")
		args := []string{"drive", "stockonline", "--target", target, "--agents", "3", "--broker", nats.URL(),
			"--clients", "6", "--duration", "8s", "--ramp-up", "1s", "--out", out}
		if tolerate {
			args = append(args, "--tolerate-agent-loss")
		}
		drive := testsvc.Start(t, bin, args...)
		if err := agents[1].WaitFor("starting", 30*time.Second); err != nil {
			t.Fatalf("%v (it wrote %q %q); the drive: %s %s", err, agents[1].Stdout(), agents[1].Stderr(), drive.Stdout(), drive.Stderr())
		}
		time.Sleep(5 * time.Second) // into the steady state
		agents[1].Kill()
		code, err := drive.Wait(2 * time.Minute)
		wantCode := map[bool]int{false: 3, true: 0}[tolerate]
		if err != nil || code != wantCode {
			t.Fatalf("tolerate %v: drive exited %d (%v), want %d: %s\n%s", tolerate, code, err, wantCode, drive.Stdout(), drive.Stderr())
		}
		r, err := result.ReadFile(out)
		if err != nil {
			t.Fatalf("tolerate %v: no result after an agent was lost: %v", tolerate, err)
		}
		lost := r.Agents[1]
		if lost.ID != prefix+"2" || lost.Status != result.AgentLost {
			t.Errorf("tolerate %v: agent 2 = %+v, want %s2 lost", tolerate, lost, prefix)
		}
		var sum int64
		for _, a := range r.Agents {
			if a.Status == result.AgentOK {
				sum += a.Operations
			}
		}
		if sum != r.Summary.Completed || sum == 0 {
			t.Errorf("tolerate %v: the survivors completed %d, the result %d", tolerate, sum, r.Summary.Completed)
		}
		if failed := r.Summary.Failure != nil; failed == tolerate {
			t.Errorf("tolerate %v: failure = %+v", tolerate, r.Summary.Failure)
		}
		for _, a := range agents {
			a.Kill() // the next drive's agents are others
		}
	}
}

// An agent SIGKILLed mid-drive with --db: the lost agent is listed with
// its share of the terminals and the operations it reported; the checks
// count its commits up to its last report and allow for those after it
// (at its peak rate until it was given up, plus one under way per
// terminal), saying how many they reconciled; with --tolerate-agent-loss
// and consistent survivors the drive passes (exit 0). The accounts created
// during a second such drive, deleted behind its back, still fail it
// (exit 1). On SQLite and on a private PostgreSQL server.
func TestDriveLostAgentReconciled(t *testing.T) {
	testsvc.SkipUnlessLong(t, "agents lost mid-drive on each backend, a private PostgreSQL")
	t.Parallel()
	bin := testsvc.Binary(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "stockonline.sqlite")
			if backend == "postgres" {
				dsn = testsvc.Postgres(t).DSN()
			}
			target := serveStockOnline(t, bin, dsn)
			nats := testsvc.NATS(t)
			code, r, stdout := driveLosingAgent(t, bin, nats.URL(), target, dsn, "rec"+backend, func() {})
			if code != 0 {
				t.Fatalf("drive exited %d, want 0:\n%s", code, stdout)
			}
			lost := r.Agents[1]
			if lost.Status != result.AgentLost || lost.Terminals != 10 || lost.Reported == 0 ||
				!strings.Contains(lost.Error, fmt.Sprintf("%d operations reported, last report at", lost.Reported)) {
				t.Errorf("lost agent = %+v; want lost, with its 10 terminals and the operations it reported", lost)
			}
			if !strings.Contains(stdout, "part 2 of 2, 10 terminals") {
				t.Errorf("the summary does not list the lost agent's share:\n%s", stdout)
			}
			reconciled := regexp.MustCompile(`up to \d+ unreported by lost agents \(their 10 terminals' operations under way included\), reconciled: \d+ of them committed`)
			seen := map[string]bool{}
			for _, c := range r.Checks {
				seen[c.Name] = true
				if !c.Passed {
					t.Errorf("check %s failed: %s", c.Name, c.Detail)
				}
				if c.Name == "accounts-match-creates" || c.Name == "transactions-match-trades" {
					t.Logf("%s: %s", c.Name, c.Detail)
					if !reconciled.MatchString(c.Detail) {
						t.Errorf("check %s: %s; want the lost agent's commits reconciled, and how many", c.Name, c.Detail)
					}
				}
			}
			if !seen["accounts-match-creates"] || !seen["transactions-match-trades"] || !r.Summary.Passed {
				t.Errorf("checks %v, passed %v: want both reconciled checks and a passing drive", seen, r.Summary.Passed)
			}

			// Fewer accounts than the agents reported creating: no
			// reconciliation explains that.
			before := count(t, dsn, "SELECT MAX(sub_accno) FROM SubAccount")
			code, r, stdout = driveLosingAgent(t, bin, nats.URL(), target, dsn, "corrupt"+backend, func() {
				db, err := storetest.Backends().Open(context.Background(), store.MustParseDSN(dsn), store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				storetest.Querier{T: t, DB: db}.Exec("DELETE FROM SubAccount WHERE sub_accno > ?", before)
			})
			if code != 1 {
				t.Errorf("drive over deleted accounts exited %d, want 1 (a check failed):\n%s", code, stdout)
			}
			for _, c := range r.Checks {
				if c.Name == "accounts-match-creates" && (c.Passed || !strings.Contains(c.Detail, "unreported by lost agents (their 10 terminals' operations under way included) cannot explain -")) {
					t.Errorf("accounts deleted: %s passed %v (%s); want it failed despite the reconciliation", c.Name, c.Passed, c.Detail)
				}
			}
		})
	}
}

// driveLosingAgent drives the Stock-Online served at target with two new
// agents (named prefix1 and prefix2) and --tolerate-agent-loss, checking
// dsn, SIGKILLs the second agent in the steady state, then calls
// meanwhile while the drive goes on. It returns the drive's exit code,
// its result and its output.
func driveLosingAgent(t *testing.T, bin, broker, target, dsn, prefix string, meanwhile func()) (int, *result.Result, string) {
	t.Helper()
	agents := startAgents(t, bin, broker, prefix, 2)
	out := filepath.Join(t.TempDir(), prefix+".json")
	drive := testsvc.Start(t, bin, "drive", "stockonline", "--target", target, "--agents", "2", "--broker", broker,
		"--clients", "20", "--duration", "6s", "--ramp-up", "1s", "--db", dsn, "--tolerate-agent-loss", "--out", out)
	if err := agents[1].WaitFor("starting", 30*time.Second); err != nil {
		t.Fatalf("%v; the drive: %s %s", err, drive.Stdout(), drive.Stderr())
	}
	time.Sleep(5 * time.Second) // 3 s to the common start, then into the steady state
	agents[1].Kill()
	meanwhile()
	code, err := drive.Wait(2 * time.Minute)
	if err != nil {
		t.Fatalf("drive: %v: %s\n%s", err, drive.Stdout(), drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("no result (exit %d): %v: %s\n%s", code, err, drive.Stdout(), drive.Stderr())
	}
	agents[0].Kill() // idle again: the next drive's agents are others
	return code, r, drive.Stdout() + drive.Stderr()
}
