package placement

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// available skips the test (fails it under TIERBENCH_REQUIRE_SERVICES=1)
// when this machine cannot place a server: no PostgreSQL programs, no
// taskset, fewer than 2 CPUs.
func available(t *testing.T) CPUSet {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if testsvc.Require() {
			t.Fatalf("%s (TIERBENCH_REQUIRE_SERVICES=1)", msg)
		}
		t.Skipf("skipping: %s; set TIERBENCH_REQUIRE_SERVICES=1 to fail instead", msg)
	}
	if err := Check(); err != nil {
		unavailable("%v", err)
	}
	cpus, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		unavailable("placement needs 2 CPUs; this process may use %s", cpus)
	}
	return cpus
}

// cpusOf is a process's or thread's Cpus_allowed_list (path: /proc/PID or
// /proc/self/task/TID).
func cpusOf(t *testing.T, path string) string {
	t.Helper()
	cpus, alive := cpusIfAlive(t, path)
	if !alive {
		t.Fatalf("%s: the process is gone", path)
	}
	return cpus
}

// cpusIfAlive is cpusOf for a process that may have exited since it was
// listed, as a postmaster's short-lived workers do: false when it is gone.
func cpusIfAlive(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path, "status"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v), true
		}
	}
	t.Fatalf("%s/status has no Cpus_allowed_list", path)
	return "", false
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces.
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}

// threadCPUs checks that every thread of this process runs on want.
func threadCPUs(t *testing.T, want string) {
	t.Helper()
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		path := fmt.Sprintf("/proc/self/task/%d", tid)
		if _, err := os.Stat(path); err != nil {
			continue // ended meanwhile
		}
		if got := cpusOf(t, path); got != want {
			t.Errorf("thread %d on CPUs %s, want %s", tid, got, want)
		}
	}
}

// placed starts a server for mode's plan and pins this process as a run
// does; it checks what the server and this process run on, then stops
// the server and checks that nothing of it is left.
func placed(t *testing.T, mode Mode, settings ...string) {
	cpus := available(t)
	plan, err := Split(mode, cpus)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := Start(ctx, "", plan.DB, settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	if !slices.Equal(srv.Settings(), settings) {
		t.Errorf("server settings %q, want %q", srv.Settings(), settings)
	}
	if srv.Major() == "" || srv.Port() == 0 {
		t.Errorf("server version %q, port %d", srv.Version(), srv.Port())
	}

	conn, err := pgconn.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatalf("connect to %s: %v", srv.URL(), err)
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, "select pg_backend_pid(), current_database()").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	row := res[0].Rows[0]
	backend, _ := strconv.Atoi(string(row[0]))
	if db := string(row[1]); db != Database {
		t.Errorf("connected to database %s, want %s", db, Database)
	}
	for _, kv := range settings {
		name, want, _ := ParseSetting(kv)
		res, err := conn.Exec(ctx, "SHOW "+name).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res[0].Rows[0][0]); got != want {
			t.Errorf("SHOW %s = %q, want %q (--pg-setting %s)", name, got, want, kv)
		}
	}

	postmaster := fmt.Sprintf("/proc/%d", srv.PID())
	if got := cpusOf(t, postmaster); got != plan.DB.String() {
		t.Errorf("postmaster %d on CPUs %s, want %s", srv.PID(), got, plan.DB)
	}
	if got := cpusOf(t, fmt.Sprintf("/proc/%d", backend)); got != plan.DB.String() {
		t.Errorf("backend %d on CPUs %s, want %s", backend, got, plan.DB)
	}
	kids := childrenOf(srv.PID())
	if len(kids) < 2 {
		t.Errorf("postmaster has %d children, want its background processes and the backend", len(kids))
	}
	for _, k := range kids {
		if got, alive := cpusIfAlive(t, fmt.Sprintf("/proc/%d", k)); alive && got != plan.DB.String() {
			t.Errorf("server process %d on CPUs %s, want %s", k, got, plan.DB)
		}
	}

	restore, err := Pin(plan.App)
	if err != nil {
		t.Fatal(err)
	}
	// Threads the runtime starts after the pinning inherit it: goroutines
	// locked to their threads make it start some.
	release := make(chan struct{})
	started := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started <- struct{}{}
			<-release
		}()
	}
	for range 4 {
		<-started
	}
	threadCPUs(t, plan.App.String())
	close(release)
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	threadCPUs(t, cpus.String())

	conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server directory %s still there after Stop (%v)", srv.Dir(), err)
	}
	for _, pid := range append([]int{srv.PID(), backend}, kids...) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			t.Errorf("server process %d still there after Stop: %s", pid, b)
		}
	}
}

// Dual: the server and every process it forks on the second half of the
// CPUs, tierbench's threads on the first; the settings given, the
// server's.
func TestPlacementDualServer(t *testing.T) { placed(t, Dual, "work_mem=8MB", "fsync=off") }

// Mixed: both on the first half.
func TestPlacementMixedServer(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a second private PostgreSQL; make test runs the dual one")
	placed(t, Mixed)
}

// A server that cannot start says why with the end of its log, and
// leaves nothing behind.
func TestPlacementServerFailsToStart(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private PostgreSQL that fails to start")
	available(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A parent of its own: other packages' tests start servers under the
	// shared temporary directory at the same time. Open to the postgres
	// user, who runs the server.
	parent, err := os.MkdirTemp("", "placement-fails-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// CPU 4096 is no CPU: taskset refuses it.
	srv, err := Start(ctx, parent, CPUSet{4096})
	if err == nil {
		srv.Stop()
		t.Fatal("a server on CPU 4096 started")
	}
	if !strings.Contains(err.Error(), "its log ends:") {
		t.Errorf("error %q does not quote the log", err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A setting PostgreSQL refuses is an *ErrSetting with PostgreSQL's
// message, and the server leaves nothing behind.
func TestPlacementRefusedSettings(t *testing.T) {
	t.Parallel()
	cpus := available(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// cmd/tierbench's TestPlacementRefusedSetting gives shared_buffers a
	// bad value in make test; this, a name PostgreSQL does not know.
	for i, tc := range []struct{ setting, want string }{
		{"no_such_parameter=1", `unrecognized configuration parameter "no_such_parameter"`},
		{"shared_buffers=lots", `invalid value for parameter "shared_buffers": "lots"`},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			testsvc.KeepOne(t, i, "a private PostgreSQL refusing a setting, one per case")
			srv, err := Start(ctx, "", cpus[:1], tc.setting)
			if err == nil {
				srv.Stop()
				t.Fatalf("a server with %s started", tc.setting)
			}
			var refused *ErrSetting
			if !errors.As(err, &refused) || !strings.Contains(refused.Message, tc.want) || !strings.Contains(err.Error(), tc.setting) {
				t.Errorf("%s: error %v, want an *ErrSetting naming it with %q", tc.setting, err, tc.want)
			}
		})
	}
}

func TestParseSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, name, value, err string }{
		{"shared_buffers=256MB", "shared_buffers", "256MB", ""},
		{"fsync=off", "fsync", "off", ""},
		{"search_path=a,b", "search_path", "a,b", ""},
		{"auto_explain.log_min_duration=0", "auto_explain.log_min_duration", "0", ""},
		{"fsync", "", "", "want NAME=VALUE"},
		{"=off", "", "", "is not a parameter name"},
		{"work mem=1MB", "", "", "is not a parameter name"},
		{"work_mem=", "", "", "no value"},
	} {
		name, value, err := ParseSetting(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--pg-setting") {
				t.Errorf("ParseSetting(%q) = %q, %q, %v; want an error with %q", tc.in, name, value, err, tc.err)
			}
			continue
		}
		if err != nil || name != tc.name || value != tc.value {
			t.Errorf("ParseSetting(%q) = %q, %q, %v; want %q, %q", tc.in, name, value, err, tc.name, tc.value)
		}
	}
}
