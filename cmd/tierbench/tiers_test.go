package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// tierPID is the pid of the run's tier named (as "business tier"), from
// the line the run writes when it has started it; 0 until then.
func tierPID(run *testsvc.Proc, name string) int {
	m := regexp.MustCompile(`started the ` + name + `: pid (\d+), `).FindStringSubmatch(run.Stderr())
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// A run with --tiers 3 is three processes: the driver here, the web tier
// and the business tier as its children, the calls between them over the
// protocol, counted by page in the result; the children are gone when it
// ends, and the database passes its checks.
func TestRunWithThreeTiers(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "rubis.sqlite")
	out := filepath.Join(t.TempDir(), "run.json")
	run := testsvc.Start(t, bin, "run", "rubis", "--tiers", "3", "--style", "facade", "--protocol", "grpc", "--db", dsn,
		"--clients", "4", "--iterations", "30", "--think-scale", "0", "--out", out)
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("run exited %d (%v): %s\n%s", code, err, run.Stdout(), run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tiers == nil || r.Tiers.Processes != 3 || r.Tiers.Style != "facade" || r.Tiers.Protocol != "grpc" {
		t.Fatalf("tiers = %+v; want style facade, 3 processes, grpc", r.Tiers)
	}
	// Under facade each page that reaches the business tier makes one
	// call: ViewItem always does.
	var viewItem *result.TierCalls
	for i := range r.Tiers.Pages {
		if r.Tiers.Pages[i].Name == "/PHP/ViewItem.php" {
			viewItem = &r.Tiers.Pages[i]
		}
	}
	if viewItem == nil || viewItem.Pages == 0 || viewItem.Calls != viewItem.Pages {
		t.Errorf("ViewItem's calls = %+v; want one call per page, and some pages", viewItem)
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	if len(r.Checks) == 0 {
		t.Error("no checks ran")
	}
	for _, name := range []string{"business tier", "web tier"} {
		pid := tierPID(run, name)
		if pid == 0 {
			t.Errorf("the run did not say it started its %s: %s", name, run.Stderr())
		} else if alive(pid) {
			t.Errorf("the %s (pid %d) still runs after the run", name, pid)
		}
	}
}

// A tier killed mid-run ends the run: exit 3, the message naming the
// tier, no hang; the result is written and the database passes its
// checks.
func TestTierKilledMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a tier process killed mid-run")
	for _, tier := range []string{"business", "web"} {
		t.Run(tier, func(t *testing.T) {
			t.Parallel()
			bin := testsvc.Binary(t)
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "rubis.sqlite")
			out := filepath.Join(t.TempDir(), "run.json")
			run := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print"}, bin, "run", "rubis", "--tiers", "3", "--style", "session", "--db", dsn,
				"--clients", "4", "--duration", "2m", "--ramp-up", "0s", "--think-scale", "0.01", "--out", out)
			// Killed once the run drives (both tiers serve), not while it
			// starts: 3 s after the tier's pid was too soon on a loaded
			// machine, and the start failed instead of the run.
			if err := run.WaitFor("failpoint run", 3*time.Minute); err != nil {
				t.Fatalf("%v: %s", err, run.Stderr())
			}
			name := tier + " tier"
			pid := tierPID(run, name)
			if pid == 0 {
				t.Fatalf("the run did not start its %s: %s", name, run.Stderr())
			}
			time.Sleep(2 * time.Second) // some of the run first
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			code, err := run.Wait(time.Minute)
			if err != nil {
				t.Fatalf("the run did not end after its %s tier was killed: %v", tier, err)
			}
			if code != 3 {
				t.Errorf("exit %d, want 3: %s", code, run.Stdout())
			}
			want := fmt.Sprintf("the %s (pid %d", name, pid)
			if !strings.Contains(run.Stderr(), want) {
				t.Errorf("the error does not name the tier (%q): %s", want, run.Stderr())
			}
			r, err := result.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if f := r.Summary.Failure; f == nil || f.Phase != "run" || !strings.Contains(f.Error, want) {
				t.Errorf("result's failure = %+v; want phase run naming %q", f, want)
			}
			if len(r.Checks) == 0 {
				t.Error("no checks ran after the tier's death")
			}
			for _, c := range r.Checks {
				if !c.Passed {
					t.Errorf("check %s failed: %s", c.Name, c.Detail)
				}
			}
			other := map[string]string{"business": "web tier", "web": "business tier"}[tier]
			if pid := tierPID(run, other); pid == 0 || alive(pid) {
				t.Errorf("the %s (pid %d) was not stopped after the %s tier died", other, pid, tier)
			}
		})
	}
}

// Stock-Online's session bean in one process, its terminals in another,
// over each protocol: the deck's exact counts (every operation of every
// iteration done once, as a success or a business exception), one remote
// call each, and the checks of the database behind the bean pass.
func TestServeAndDriveStockOnline(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	for _, name := range []string{"http", "grpc", "lean", "lean-unix"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			protocol, unix := strings.CutSuffix(name, "-unix")
			listen := "127.0.0.1:0"
			if unix {
				// A Unix-domain socket, the lean protocol's on one host.
				listen = "unix:" + filepath.Join(t.TempDir(), "tier.sock")
			}
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "stockonline.sqlite")
			load := testsvc.Start(t, bin, "load", "stockonline", "--db", dsn)
			if code, err := load.Wait(2 * time.Minute); err != nil || code != 0 {
				t.Fatalf("load exited %d (%v): %s", code, err, load.Stderr())
			}
			token := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			srv := testsvc.Start(t, bin, "serve", "stockonline", "--db", dsn, "--protocol", protocol, "--listen", listen, "--token-file", token)
			if err := srv.WaitFor("serving stockonline ", time.Minute); err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`serving stockonline business tier .* on (` + protocol + `://\S+);`).FindStringSubmatch(srv.Stdout())
			if m == nil {
				t.Fatalf("serve printed no %s URL: %q", protocol, srv.Stdout())
			}
			if unix && m[1] != "lean://"+listen {
				t.Fatalf("serve printed %s, want lean://%s", m[1], listen)
			}
			// Without the token the tier answers no one.
			refused := testsvc.Start(t, bin, "drive", "stockonline", "--target", m[1], "--clients", "1", "--iterations", "1")
			if code, _ := refused.Wait(time.Minute); code != 3 || !strings.Contains(refused.Stderr(), "token") {
				t.Errorf("a drive without the token exited %d: %s; want 3 and a word on the token", code, refused.Stderr())
			}

			const clients, iterations = 10, 3
			out := filepath.Join(t.TempDir(), "drive.json")
			drive := testsvc.Start(t, bin, "drive", "stockonline", "--target", m[1], "--token-file", token, "--db", dsn,
				"--clients", strconv.Itoa(clients), "--iterations", strconv.Itoa(iterations), "--out", out)
			if code, err := drive.Wait(2 * time.Minute); err != nil || code != 0 {
				t.Fatalf("drive exited %d (%v): %s\n%s", code, err, drive.Stdout(), drive.Stderr())
			}
			r, err := result.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, card := range stockonline.Mix().Cards {
				name := stockonline.New().Info().Operations[card.Op]
				op := r.Operations[name]
				want := int64(card.Count * clients * iterations)
				if op.Count != want || op.Errors != 0 {
					t.Errorf("%s: %d done, %d errors; want %d, 0", name, op.Count, op.Errors, want)
				}
			}
			if r.Tiers == nil || r.Tiers.Protocol != protocol || r.Tiers.Processes != 2 {
				t.Fatalf("tiers = %+v; want %s, 2 processes", r.Tiers, protocol)
			}
			if got, want := len(r.Tiers.Pages), len(stockonline.New().Info().Operations); got != want {
				t.Errorf("calls counted for %d operations, want %d", got, want)
			}
			for _, c := range r.Tiers.Pages {
				if c.Calls != c.Pages {
					t.Errorf("%s: %d calls for %d operations; want one each", c.Name, c.Calls, c.Pages)
				}
			}
			if len(r.Checks) == 0 {
				t.Error("no checks ran with --db")
			}
			for _, c := range r.Checks {
				if !c.Passed {
					t.Errorf("check %s failed: %s", c.Name, c.Detail)
				}
			}
			srv.Signal(syscall.SIGTERM)
			if code, err := srv.Wait(time.Minute); err != nil || code != 0 {
				t.Errorf("serve exited %d (%v) on SIGTERM: %s", code, err, srv.Stderr())
			}
		})
	}
}

// TestRunLeanTiersOnAUnixSocket: run --tiers 2 over lean on one host
// calls its business tier on a Unix-domain socket in the run's directory,
// and the result says so; every operation is one call, and the checks
// pass. Over grpc the result says tcp.
func TestRunLeanTiersOnAUnixSocket(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "stockonline.sqlite")
	load := testsvc.Start(t, bin, "load", "stockonline", "--db", dsn)
	if code, err := load.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("load exited %d (%v): %s", code, err, load.Stderr())
	}
	for protocol, transport := range map[string]string{"lean": "unix", "grpc": "tcp"} {
		out := filepath.Join(t.TempDir(), "run.json")
		run := testsvc.Start(t, bin, "run", "stockonline", "--tiers", "2", "--protocol", protocol, "--db", dsn,
			"--clients", "2", "--iterations", "1", "--out", out)
		if code, err := run.Wait(2 * time.Minute); err != nil || code != 0 {
			t.Fatalf("run --protocol %s exited %d (%v): %s", protocol, code, err, run.Stderr())
		}
		r, err := result.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if r.Tiers == nil || r.Tiers.Protocol != protocol || r.Tiers.Transport != transport || r.Tiers.Processes != 2 {
			t.Fatalf("--protocol %s: tiers = %+v; want %s over %s, 2 processes", protocol, r.Tiers, protocol, transport)
		}
		if c := r.Tiers.Total; c.Calls != c.Pages || c.Calls == 0 {
			t.Errorf("--protocol %s: %d calls for %d operations; want one each", protocol, c.Calls, c.Pages)
		}
		for _, c := range r.Checks {
			if !c.Passed {
				t.Errorf("--protocol %s: check %s failed: %s", protocol, c.Name, c.Detail)
			}
		}
		if want := "calls over " + protocol + map[string]string{"unix": " on a Unix-domain socket:", "tcp": ":"}[transport]; !strings.Contains(run.Stdout(), want) {
			t.Errorf("--protocol %s: the summary does not say %q:\n%s", protocol, want, run.Stdout())
		}
	}
}
