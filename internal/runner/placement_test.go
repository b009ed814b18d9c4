package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A run with --placement dual runs on its own server, records the
// placement, and gives this process its CPUs back and stops the server
// when it ends. Not parallel: it pins the test process.
func TestPlacementRun(t *testing.T) {
	unavailable := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if testsvc.Require() {
			t.Fatalf("%s (TIERBENCH_REQUIRE_SERVICES=1)", msg)
		}
		t.Skipf("skipping: %s; set TIERBENCH_REQUIRE_SERVICES=1 to fail instead", msg)
	}
	if err := placement.Check(); err != nil {
		unavailable("%v", err)
	}
	before, err := placement.Allowed()
	if err != nil || len(before) < 2 {
		unavailable("--placement dual needs 2 CPUs; this process may use %v (%v)", before, err)
	}
	r := newRunner(t)
	var notes bytes.Buffer
	r.Notes = &notes
	cfg, _, err := r.Config("stockonline")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Placement = "dual"
	cfg.Clients, cfg.ServerThreads, cfg.Iterations = 2, 2, 1
	cfg.Persistence = container.Direct
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := placement.Split(placement.Dual, before)
	env := res.Environment
	if env.Placement != "dual" || env.AppCPUs != plan.App.String() || env.DBCPUs != plan.DB.String() || !res.Summary.Passed {
		t.Errorf("environment %+v (passed %v), want dual on %s / %s", env, res.Summary.Passed, plan.App, plan.DB)
	}
	if res.Config.DB.String() != "" {
		t.Errorf("result config db %q, want none (the server was the run's own)", res.Config.DB)
	}
	m := regexp.MustCompile(`^placement dual: private PostgreSQL \d+ on 127\.0\.0\.1:(\d+) pinned to CPUs? (\S+), tierbench to CPUs? (\S+)\n$`).FindStringSubmatch(notes.String())
	if m == nil || m[2] != plan.DB.String() || m[3] != plan.App.String() {
		t.Errorf("notes %q", notes.String())
	}
	after, err := placement.Allowed()
	if err != nil || after.String() != before.String() {
		t.Errorf("after the run this process may use CPUs %s (%v), want %s back", after, err, before)
	}
	tids, _ := os.ReadDir("/proc/self/task")
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/self/task/" + tid.Name() + "/status")
		if err != nil {
			continue
		}
		if !bytes.Contains(b, []byte("Cpus_allowed_list:\t"+before.String()+"\n")) {
			t.Errorf("thread %s still pinned after the run", tid.Name())
		}
	}
	// The server is gone: nothing listens on its port.
	if m != nil {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+m[1], time.Second); err == nil {
			c.Close()
			t.Errorf("something still listens on the server's port %s", m[1])
		}
	}
}

// --placement belongs to run: load, serve and drive refuse it.
func TestPlacementRefusedOutsideRun(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	cfg, _, err := r.Config("stockonline")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Placement = "mixed"
	_, _, err = r.Load(context.Background(), cfg)
	var ue *config.UsageError
	if !errors.As(err, &ue) {
		t.Errorf("load with --placement: %v, want a usage error", err)
	}
	if _, err := r.Drive(context.Background(), cfg, "http://127.0.0.1:1", DriveOptions{}); !errors.As(err, &ue) {
		t.Errorf("drive with --placement: %v, want a usage error", err)
	}
}
