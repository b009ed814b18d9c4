package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A run with --placement dual starts its own PostgreSQL server on the
// second CPU, runs on the first, records both in its result, and leaves
// no server and no directory behind.
func TestPlacementDualRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private PostgreSQL pinned to its own CPUs; internal/placement runs one in make test")
	t.Parallel()
	skip := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if testsvc.Require() {
			t.Fatalf("%s (TIERBENCH_REQUIRE_SERVICES=1)", msg)
		}
		t.Skipf("skipping: %s; set TIERBENCH_REQUIRE_SERVICES=1 to fail instead", msg)
	}
	if err := placement.Check(); err != nil {
		skip("%v", err)
	}
	if cpus, err := placement.Allowed(); err != nil || len(cpus) < 2 {
		skip("--placement dual needs 2 CPUs; this process may use %v (%v)", cpus, err)
	}
	out := filepath.Join(t.TempDir(), "run.json")
	run := testsvc.Start(t, testsvc.Binary(t), "run", "stockonline", "--placement", "dual", "--duration", "3s", "--clients", "2", "--out", out)
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("run exited %d (%v): %s\n%s", code, err, run.Stdout(), run.Stderr())
	}
	m := regexp.MustCompile(`placement dual: private PostgreSQL \d+ on 127\.0\.0\.1:(\d+) pinned to CPUs? (\S+), tierbench to CPUs? (\S+)\n`).FindStringSubmatch(run.Stderr())
	if m == nil {
		t.Fatalf("no placement line on stderr:\n%s", run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := r.Environment
	if env.Placement != "dual" || env.DBCPUs != m[2] || env.AppCPUs != m[3] || env.DBCPUs == env.AppCPUs ||
		!strings.HasPrefix(env.DB, "postgres ") || r.Config.Placement != "dual" || r.Config.DB.String() != "" {
		t.Errorf("result: environment %+v, config placement %q db %q; stderr said %q", env, r.Config.Placement, r.Config.DB, m[0])
	}
	if !r.Summary.Passed || r.Summary.Operations == 0 {
		t.Errorf("run did not pass: %+v", r.Summary)
	}
	if !strings.Contains(run.Stdout(), "(placement dual: tierbench on CPU") {
		t.Errorf("summary does not mention the placement:\n%s", run.Stdout())
	}
	// The server stopped before the run exited: its directory is gone.
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "tierbench-pg-*"))
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.opts")); err == nil && strings.Contains(string(b), "-p "+m[1]) {
			t.Errorf("the run's server directory %s is still there", d)
		}
	}
}

// Bad placements are usage errors (exit 2) that say what to do.
func TestPlacementUsage(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--placement", "both"}, `--placement "both": allowed: mixed, dual`},
		{[]string{"--placement", "dual", "--db", "postgres://root@127.0.0.1:5432/test"}, "--placement starts its own PostgreSQL server for the run (SQLite, a file inside tierbench's processes, cannot be placed on a CPU or a host of its own); leave --db unset"},
		{[]string{"--placement", "mixed", "--no-load"}, "--no-load: --placement starts an empty PostgreSQL server"},
		{[]string{"--pg-setting", "fsync=off"}, "--pg-setting fsync=off: applies to the private PostgreSQL server of --placement mixed|dual|hosts, and --placement is not set"},
		{[]string{"--placement", "mixed", "--pg-setting", "fsync"}, `--pg-setting "fsync": want NAME=VALUE`},
		{[]string{"--placement", "mixed", "--pg-setting", "work mem=4MB"}, `"work mem" is not a parameter name`},
	} {
		run := testsvc.Start(t, bin, append([]string{"run", "stockonline", "--iterations", "1", "--clients", "1", "--out", filepath.Join(t.TempDir(), "r.json")}, tc.args...)...)
		code, err := run.Wait(time.Minute)
		if err != nil || code != 2 || !strings.Contains(run.Stderr(), tc.want) {
			t.Errorf("%v: exit %d (%v), stderr %q; want 2 and %q", tc.args, code, err, run.Stderr(), tc.want)
		}
	}
}

// A setting PostgreSQL refuses ends the run before it loads: exit 3 with
// PostgreSQL's own message, and no server left behind.
func TestPlacementRefusedSetting(t *testing.T) {
	t.Parallel()
	if err := placement.Check(); err != nil {
		if testsvc.Require() {
			t.Fatalf("%v (TIERBENCH_REQUIRE_SERVICES=1)", err)
		}
		t.Skipf("skipping: %v", err)
	}
	run := testsvc.Start(t, testsvc.Binary(t), "run", "stockonline", "--placement", "mixed", "--pg-setting", "shared_buffers=lots",
		"--iterations", "1", "--clients", "1", "--out", filepath.Join(t.TempDir(), "r.json"))
	code, err := run.Wait(3 * time.Minute)
	want := `invalid value for parameter "shared_buffers": "lots"`
	if err != nil || code != 3 || !strings.Contains(run.Stderr(), want) || !strings.Contains(run.Stderr(), "--pg-setting") {
		t.Errorf("exit %d (%v), stderr %q; want 3 and --pg-setting with PostgreSQL's %q", code, err, run.Stderr(), want)
	}
}
