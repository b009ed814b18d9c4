package placement

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// Database is the database the private server is created with, the
	// run's.
	Database = "tierbench"
	// startTimeout bounds the server's start on a busy machine.
	startTimeout = 90 * time.Second
	// stopTimeout bounds a fast shutdown before the server is killed.
	stopTimeout = time.Minute
	// pollInterval spaces readiness probes.
	pollInterval = 50 * time.Millisecond
	// logLines is how much of the server's log a failure quotes.
	logLines = 8
)

// Server is a private PostgreSQL server started for one run: its own data
// directory under a fresh temporary directory, trust authentication for
// user postgres, listening on 127.0.0.1 at a free port, its Unix socket in
// the data directory, and the server and every backend it forks on a set
// of CPUs. Stop ends it and removes the directory.
type Server struct {
	dir     string // the temporary directory: data, the log
	data    string
	logPath string
	port    int
	pid     int // the postmaster's, kept after it ended
	version string
	cpus    CPUSet
	// host is the address it listens on; netns, when set, the network
	// namespace it runs in (StartOn).
	host  string
	netns string
	// settings are the -c NAME=VALUE the postmaster was started with.
	settings []string

	cmd  *exec.Cmd
	done chan struct{} // closed once the server is reaped

	stopOnce sync.Once
	stopErr  error
}

// Start initialises a database cluster in a fresh directory under parent
// (empty: os.TempDir(); its parents must be searchable by OS user postgres
// when tierbench runs as root, for the server then runs as postgres),
// starts PostgreSQL on it under taskset -c cpus, waits until it accepts
// connections and creates the database tierbench. settings (NAME=VALUE,
// checked by ParseSetting) are passed as -c NAME=VALUE; a setting the
// server refuses ends the start with an *ErrSetting quoting its message.
// The binaries are the newest /usr/lib/postgresql/*/bin's, or those of
// initdb on PATH.
func Start(ctx context.Context, parent string, cpus CPUSet, settings ...string) (*Server, error) {
	return StartOn(ctx, parent, cpus, Network{}, settings...)
}

// Network is where a server listens: on Host (default 127.0.0.1), in the
// network namespace the file Netns names (default this process's; see
// internal/hosts). The server's client programs (pg_isready, createdb)
// run in this process's namespace and must reach Host from there.
type Network struct {
	Host  string
	Netns string
}

// StartOn is Start with the server on net.
func StartOn(ctx context.Context, parent string, cpus CPUSet, net Network, settings ...string) (*Server, error) {
	for _, kv := range settings {
		if _, _, err := ParseSetting(kv); err != nil {
			return nil, err
		}
	}
	bin, taskset, err := programs()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	version, err := serverVersion(ctx, filepath.Join(bin, "postgres"))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "tierbench-pg-")
	if err != nil {
		return nil, fmt.Errorf("private PostgreSQL server: %w", err)
	}
	s := &Server{dir: dir, data: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "postgres.log"), version: version, cpus: cpus,
		host: cmp.Or(net.Host, "127.0.0.1"), netns: net.Netns, settings: settings}
	if err := s.start(ctx, bin, taskset, cred); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, bin, taskset string, cred *syscall.Credential) error {
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("private PostgreSQL server: %w", err)
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir = s.dir
	initdb.SysProcAttr = sysProcAttr(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("private PostgreSQL server: initdb: %v: %s", err, lastLines(out, logLines))
	}
	if s.host != "127.0.0.1" {
		// initdb trusts loopback alone; a server on a host of its own
		// trusts its subnet (samenet), which only the run's hosts reach.
		hba, err := os.OpenFile(filepath.Join(s.data, "pg_hba.conf"), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = hba.WriteString("host all all samenet trust\n")
			err = errors.Join(err, hba.Close())
		}
		if err != nil {
			return fmt.Errorf("private PostgreSQL server: pg_hba.conf: %w", err)
		}
	}
	// A port free a moment ago may be taken before the server binds it:
	// then another is tried, twice at most.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("private PostgreSQL server: free port: %w", err)
		}
		s.port = port
		err = s.launch(ctx, bin, taskset, cred)
		if err == nil {
			break
		}
		if attempt == 3 || !portTaken(s.logTail()) {
			return err
		}
	}
	create := exec.CommandContext(ctx, filepath.Join(bin, "createdb"), "-h", s.host, "-p", strconv.Itoa(s.port), "-U", "postgres", "-w", Database)
	if out, err := create.CombinedOutput(); err != nil {
		return fmt.Errorf("private PostgreSQL server: createdb %s: %v: %s", Database, err, lastLines(out, logLines))
	}
	return nil
}

// launch starts the postmaster on s.port and waits until it accepts
// connections; one that exits first, or is not ready in time, is stopped
// and the end of its log returned in the error.
func (s *Server) launch(ctx context.Context, bin, taskset string, cred *syscall.Credential) error {
	log, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("private PostgreSQL server: %w", err)
	}
	// taskset execs the postmaster in its own place: the PID is the
	// postmaster's, and every backend it forks inherits the CPUs.
	args := []string{"-c", s.cpus.String(), filepath.Join(bin, "postgres"),
		"-D", s.data, "-p", strconv.Itoa(s.port), "-k", s.data, "-c", "listen_addresses=" + s.host}
	for _, kv := range s.settings {
		args = append(args, "-c", kv)
	}
	cmd := exec.Command(taskset, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr(cred)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	// The kernel sends Pdeathsig when the thread that forked the server
	// ends, not the process, and the Go runtime ends threads (one whose
	// goroutine exits locked to it). So the server is started from a
	// thread of its own that lives until the server is reaped: it dies
	// with tierbench, and only then. In a network namespace of its own
	// (StartOn), that thread enters it first: the server forked from it
	// is born there. The thread then never goes back to the runtime's
	// pool: its goroutine ends locked to it, and the runtime ends it.
	started := make(chan error)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if s.netns != "" {
			if err := setns(s.netns); err != nil {
				started <- err
				return
			}
		} else {
			defer runtime.UnlockOSThread()
		}
		err := cmd.Start()
		started <- err
		if err == nil {
			cmd.Wait()
			close(done)
		}
	}()
	err = <-started
	log.Close() // the server has its own descriptor
	if err != nil {
		return fmt.Errorf("private PostgreSQL server: start: %w", err)
	}
	s.cmd, s.done, s.pid = cmd, done, cmd.Process.Pid

	isready := filepath.Join(bin, "pg_isready")
	deadline := time.Now().Add(startTimeout)
	for {
		probe := exec.CommandContext(ctx, isready, "-q", "-h", s.host, "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", "postgres", "-t", "2")
		if probe.Run() == nil {
			return nil
		}
		var why string
		select {
		case <-done:
			why = fmt.Sprintf("exited (%v) before it accepted connections", cmd.ProcessState)
		case <-ctx.Done():
			why = fmt.Sprintf("interrupted before it accepted connections (%v)", ctx.Err())
		default:
			if time.Now().After(deadline) {
				why = fmt.Sprintf("did not accept connections within %v", startTimeout)
			}
		}
		if why != "" {
			s.halt()
			if refused := refusedSetting(s.logTail()); refused != "" && len(s.settings) > 0 {
				return &ErrSetting{Settings: s.settings, Message: refused}
			}
			return fmt.Errorf("private PostgreSQL server on %s:%d %s; its log ends:\n%s", s.host, s.port, why, s.logTail())
		}
		select {
		case <-done:
		case <-ctx.Done():
		case <-time.After(pollInterval):
		}
	}
}

// URL is the connection URL of the run's database on the server.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", net.JoinHostPort(s.host, strconv.Itoa(s.port)), Database)
}

// Port the server listens on (at its host, 127.0.0.1 unless StartOn
// said otherwise).
func (s *Server) Port() int { return s.port }

// PID of the postmaster.
func (s *Server) PID() int { return s.pid }

// Dir is the server's temporary directory, removed by Stop.
func (s *Server) Dir() string { return s.dir }

// Version is the server's version, as "15.10".
func (s *Server) Version() string { return s.version }

// Major is the server's major version, as "15".
func (s *Server) Major() string {
	major, _, _ := strings.Cut(s.version, ".")
	return major
}

// Settings are the NAME=VALUE the server was started with (-c).
func (s *Server) Settings() []string { return s.settings }

// CPUs the server and its backends run on.
func (s *Server) CPUs() CPUSet { return s.cpus }

// Stop shuts the server down fast (SIGINT: its sessions are ended, their
// transactions rolled back), waits for it, and removes its directory. A
// server that does not end in time is killed. Stop may be called more
// than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopErr = s.halt()
		if err := os.RemoveAll(s.dir); err != nil {
			s.stopErr = errors.Join(s.stopErr, err)
		}
	})
	return s.stopErr
}

// halt ends the running postmaster, if any: fast shutdown, then immediate
// shutdown (SIGQUIT), then SIGKILL.
func (s *Server) halt() error {
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	pid := s.cmd.Process.Pid
	select {
	case <-s.done:
		return nil // reaped already: its PID may be another process's now
	default:
	}
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, stopTimeout}, {syscall.SIGQUIT, 10 * time.Second}, {syscall.SIGKILL, 10 * time.Second}} {
		syscall.Kill(pid, step.sig)
		select {
		case <-s.done:
			if step.sig != syscall.SIGINT {
				return fmt.Errorf("private PostgreSQL server (pid %d) did not shut down within %v; stopped with %v", pid, stopTimeout, step.sig)
			}
			return nil
		case <-time.After(step.wait):
		}
	}
	return fmt.Errorf("private PostgreSQL server (pid %d) still running after SIGKILL", pid)
}

// logTail is the last lines of the server's log.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	return lastLines(b, logLines)
}

// lastLines is the last n lines of b, indented.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(bytes.TrimSpace(b)), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// portTaken: the log says another process had the port.
func portTaken(log string) bool {
	return strings.Contains(log, "could not bind") || strings.Contains(log, "Address already in use")
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Check reports whether the programs a server needs are here:
// PostgreSQL's (initdb, postgres, pg_isready, createdb) and taskset.
func Check() error {
	_, _, err := programs()
	return err
}

// programs finds PostgreSQL's binaries' directory and taskset.
func programs() (bin, taskset string, err error) {
	if bin, err = postgresBin(); err != nil {
		return "", "", err
	}
	if taskset, err = exec.LookPath("taskset"); err != nil {
		return "", "", errors.New("taskset not found on PATH: --placement pins the PostgreSQL server with it (install util-linux)")
	}
	return bin, taskset, nil
}

// postgresBin is the newest /usr/lib/postgresql/*/bin holding the
// programs the server needs, or the directory of initdb on PATH.
func postgresBin() (string, error) {
	programs := []string{"initdb", "postgres", "pg_isready", "createdb"}
	has := func(dir string) bool {
		return !slices.ContainsFunc(programs, func(p string) bool {
			st, err := os.Stat(filepath.Join(dir, p))
			return err != nil || st.IsDir()
		})
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("PostgreSQL's server programs (%s) not found under /usr/lib/postgresql/*/bin or on PATH: --placement starts a PostgreSQL server of its own (install postgresql)", strings.Join(programs, ", "))
}

// versionOf reads 15 from /usr/lib/postgresql/15/bin.
func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// serverVersion asks the postgres binary its version: "15.10" from
// "postgres (PostgreSQL) 15.10 (Debian 15.10-0+deb12u1)".
func serverVersion(ctx context.Context, postgres string) (string, error) {
	out, err := exec.CommandContext(ctx, postgres, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", postgres, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return "", fmt.Errorf("%s --version: unexpected %q", postgres, out)
	}
	return fields[2], nil
}

// credential is the OS user the server runs as: the current one, unless
// that is root, which PostgreSQL refuses; then postgres.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, the private PostgreSQL server must run as OS user postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// sysProcAttr puts a server program in its own process group (a terminal's
// interrupt is tierbench's to handle: the server must outlive the run's
// checks), as user cred when not nil.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// setns moves the calling thread into the network namespace the file at
// path names.
func setns(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("private PostgreSQL server: network namespace: %w", err)
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("private PostgreSQL server: setns %s: %w", path, err)
	}
	return nil
}
