package testsvc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long a child still running at the end of a test has
// between SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// Proc is a child process a test started (Start): its output captured, its
// exit reaped. Its methods are safe for concurrent use.
type Proc struct {
	cmd    *exec.Cmd
	stdout output
	stderr output
	// changed is closed and replaced whenever output arrives, waking
	// WaitFor.
	mu      sync.Mutex
	changed chan struct{}
	done    chan struct{} // closed when the process has been reaped
	state   *os.ProcessState
	waitErr error
}

// output is one captured stream.
type output struct {
	p   *Proc
	buf bytes.Buffer
}

func (o *output) Write(b []byte) (int, error) {
	o.p.mu.Lock()
	defer o.p.mu.Unlock()
	o.buf.Write(b)
	close(o.p.changed)
	o.p.changed = make(chan struct{})
	return len(b), nil
}

// Start runs bin with args in its own process group, capturing its stdout
// and stderr. When the test ends a child still running gets SIGTERM, then
// SIGKILL after a grace period, and is reaped; if the test failed, its
// output is logged.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	return StartEnv(t, nil, bin, args...)
}

// StartEnv is Start with env (KEY=value) added to the test's environment,
// e.g. a failpoint.
func StartEnv(t testing.TB, env []string, bin string, args ...string) *Proc {
	t.Helper()
	return StartIn(t, "", env, bin, args...)
}

// StartIn is StartEnv in the working directory dir ("": the test's).
func StartIn(t testing.TB, dir string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{changed: make(chan struct{}), done: make(chan struct{})}
	p.stdout.p, p.stderr.p = p, p
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = sysProcAttr(nil)
	// Output copying ends when the pipes close; a grandchild that keeps
	// them open must not hold up the reaping for long.
	p.cmd.WaitDelay = stopGrace
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("testsvc: start %s: %v", bin, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.mu.Lock()
		p.state, p.waitErr = p.cmd.ProcessState, err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("testsvc: %s %s\nstdout:\n%s\nstderr:\n%s", bin, strings.Join(args, " "), p.Stdout(), p.Stderr())
		}
	})
	return p
}

// PID of the child.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the child's process group (the child and anything
// it started).
func (p *Proc) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("testsvc: %v is not a syscall.Signal", sig)
	}
	if p.exited() {
		return os.ErrProcessDone
	}
	return syscall.Kill(-p.cmd.Process.Pid, s)
}

// Kill sends SIGKILL to the child's process group and reaps the child.
func (p *Proc) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits up to timeout for the child to exit and returns its exit
// code. err is non-nil when it did not exit in time (the child is left
// running) or was ended by a signal (the code is then -1).
func (p *Proc) Wait(timeout time.Duration) (exitCode int, err error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		return -1, fmt.Errorf("testsvc: pid %d still running after %v", p.PID(), timeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, fmt.Errorf("testsvc: pid %d killed by %v", p.PID(), ws.Signal())
	}
	var ee *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &ee) {
		return p.state.ExitCode(), p.waitErr
	}
	return p.state.ExitCode(), nil
}

// Stdout is everything the child wrote to its standard output so far.
func (p *Proc) Stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.buf.String()
}

// Stderr is everything the child wrote to its standard error so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.buf.String()
}

// WaitFor waits until substring appears in the child's stdout or stderr.
// It fails when timeout passes first, or when the child exits without
// having written it.
func (p *Proc) WaitFor(substring string, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		found := strings.Contains(p.stdout.buf.String(), substring) || strings.Contains(p.stderr.buf.String(), substring)
		changed := p.changed
		p.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-p.done:
			// Output written just before the exit is in by now: Wait
			// returns only after the copying ends.
			if strings.Contains(p.Stdout(), substring) || strings.Contains(p.Stderr(), substring) {
				return nil
			}
			return fmt.Errorf("testsvc: pid %d exited without writing %q", p.PID(), substring)
		case <-timer.C:
			return fmt.Errorf("testsvc: pid %d did not write %q within %v", p.PID(), substring, timeout)
		}
	}
}

func (p *Proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends a child still running: SIGTERM to its group, SIGKILL after
// the grace period; it returns once the child is reaped.
func (p *Proc) stop() {
	if p.exited() {
		return
	}
	p.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.Kill()
	}
}
