package testsvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// startTimeout bounds a server's start, crash recovery included, on a
	// busy two-core machine.
	startTimeout = 90 * time.Second
	// pollInterval spaces readiness probes.
	pollInterval = 50 * time.Millisecond
	// probeTimeout bounds one readiness probe.
	probeTimeout = 2 * time.Second
)

// Require reports whether a missing service fails a test rather than
// skipping it (TIERBENCH_REQUIRE_SERVICES=1).
func Require() bool { return os.Getenv("TIERBENCH_REQUIRE_SERVICES") == "1" }

// unavailable skips the test, or fails it when services are required.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Require() {
		t.Fatalf("testsvc: %s (TIERBENCH_REQUIRE_SERVICES=1)", msg)
	}
	t.Skipf("skipping: %s; set TIERBENCH_REQUIRE_SERVICES=1 to fail instead", msg)
}

// lookPath finds the first of names that exists, trying each as a path
// and then on PATH.
func lookPath(names ...string) string {
	for _, n := range names {
		if strings.ContainsRune(n, '/') {
			if st, err := os.Stat(n); err == nil && !st.IsDir() {
				return n
			}
			continue
		}
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// runAs is the OS user a server runs as: none (the current user) unless
// the test runs as root, which database servers refuse; then name.
func runAs(t testing.TB, name string) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		unavailable(t, "running as root, the server must run as OS user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// serverDir makes a fresh directory for a server's files, owned by cred's
// user, removed when the test ends (after the server is killed: cleanups
// run last-registered first).
func serverDir(t testing.TB, prefix string, cred *syscall.Credential) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("testsvc: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("testsvc: %v", err)
		}
	}
	return dir
}

// runTool runs a setup command (initdb, mariadb-install-db) as cred and
// returns its combined output.
func runTool(ctx context.Context, dir string, cred *syscall.Credential, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr(cred)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// server is a server process that a test kills and starts again: at most
// one instance at a time, its output appended to a log file in its
// directory.
type server struct {
	t       testing.TB
	name    string
	dir     string
	logPath string
	cred    *syscall.Credential
	// command gives the binary and arguments of the next start.
	command func() (string, []string)
	// ready is one readiness probe: nil once the server serves.
	ready func(ctx context.Context) error

	mu  sync.Mutex
	cur *daemon
}

// daemon is one run of a server.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once reaped
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// start starts the server and waits until it is ready; a server that
// exits first, or is not ready within startTimeout, is killed and its log
// tail returned in the error.
// PID of the running server, 0 when it is down.
func (s *server) PID() int { return s.pid() }

// Kill crashes the server: it and the processes it started are sent
// SIGKILL by PID, and reaped. Its clients see their connections reset.
// Killing a server that is down does nothing.
func (s *server) Kill() { s.kill() }

// Start starts the server again on the same data directory and port (it
// recovers from the crash first) and waits until it accepts connections.
func (s *server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

// Restart is Kill then Start.
func (s *server) Restart() {
	s.t.Helper()
	s.Kill()
	s.Start()
}

// startFirst starts the server for the first time, its ports picked by
// pick; a port another process took meanwhile is picked again, twice at
// most. The server is killed when the test ends.
func (s *server) startFirst(pick func()) {
	s.t.Helper()
	s.t.Cleanup(s.Kill)
	for attempt := 1; ; attempt++ {
		pick()
		err := s.start()
		if err == nil {
			return
		}
		if attempt == 3 || !portInUse(err, s.logTail()) {
			s.t.Fatal(err)
		}
	}
}

func (s *server) start() error {
	s.mu.Lock()
	if s.cur != nil {
		s.mu.Unlock()
		return fmt.Errorf("testsvc: %s already running (pid %d)", s.name, s.cur.cmd.Process.Pid)
	}
	log, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	bin, args := s.command()
	fmt.Fprintf(log, "--- testsvc: %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr(s.cred)
	err = cmd.Start()
	log.Close() // the child has its own descriptor
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("testsvc: start %s: %v", s.name, err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(d.done)
	}()
	s.cur = d
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		last = s.ready(ctx)
		cancel()
		if last == nil {
			return nil
		}
		if d.exited() {
			s.kill()
			return fmt.Errorf("testsvc: %s exited before it was ready (%v); log %s ends:\n%s", s.name, last, s.logPath, s.logTail())
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("testsvc: %s not ready within %v (%v); log %s ends:\n%s", s.name, startTimeout, last, s.logPath, s.logTail())
		}
		select {
		case <-d.done:
		case <-time.After(pollInterval):
		}
	}
}

// kill ends the running instance, if any, the way a crash does: the server
// is stopped (so it starts no more processes), every child it has is sent
// SIGKILL by PID, then the server itself. It returns once the server is
// reaped and its children are gone, so that a new instance finds their
// ports and shared memory released.
func (s *server) kill() {
	s.mu.Lock()
	d := s.cur
	s.cur = nil
	s.mu.Unlock()
	if d == nil {
		return
	}
	pid := d.cmd.Process.Pid
	var kids []int
	if !d.exited() {
		syscall.Kill(pid, syscall.SIGSTOP)
		kids = children(pid)
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGKILL)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
	<-d.done
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range kids {
		for !gone(k) {
			if time.Now().After(deadline) {
				s.t.Errorf("testsvc: %s child %d still alive 10s after SIGKILL", s.name, k)
				return
			}
			time.Sleep(5 * time.Millisecond) // polling the process table
		}
	}
}

// pid of the running instance, 0 when there is none.
func (s *server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0
	}
	return s.cur.cmd.Process.Pid
}

// logTail is the end of the server's log, for messages.
func (s *server) logTail() string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 4096 {
		f.Seek(-4096, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(n); ok && ppid == pid {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// gone reports whether pid has exited (a zombie has: its memory and
// sockets are released).
func gone(pid int) bool {
	_, state, ok := procStat(pid)
	return !ok || state == 'Z' || state == 'X'
}

// procStat reads a process's parent and state from /proc/PID/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// portInUse reports whether a start failed because its port was taken
// meanwhile (FreePort is only a hint), so that a first start may retry on
// other ports.
func portInUse(err error, log string) bool {
	return err != nil && (strings.Contains(log, "already in use") || strings.Contains(log, "Could not create listening socket") || errors.Is(err, syscall.EADDRINUSE))
}
