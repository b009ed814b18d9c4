// Package tierproc runs a tier of the system under test as a child
// process of the run: `tierbench serve …` started from the same
// executable, ready once it prints the line that names its URL, stopped
// cleanly at the end, and watched so that a tier that dies mid-run ends
// the run with its name and the last lines it wrote to its standard error.
package tierproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ReadyTimeout bounds how long a tier may take to print its URL: opening
// the database and warming caches included.
const ReadyTimeout = 2 * time.Minute

// StopGrace is how long a stopping tier has, after SIGTERM, to finish the
// calls under way before it is killed: longer than the tier's own
// shutdown grace (runner.ShutdownGrace, 30 s), so that a tier using all of
// it still exits on its own and is not reported as killed.
const StopGrace = 35 * time.Second

// servingLine is what `tierbench serve` prints once it listens: "serving
// … on URL …". The first URL on such a line is the tier's.
var servingLine = regexp.MustCompile(`^serving .* on ([a-z]+://[^ ;,()]+)`)

// Proc is a tier running as a child process.
type Proc struct {
	// Name says which tier it is ("business tier", "web tier").
	Name string
	// URL is where it serves, as it printed it.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
	// exitErr is the process's end, set before done is closed.
	exitErr error
	tail    *tailBuffer
	// stopping: Stop has asked it to end; what it says from then on (that
	// it was interrupted, that it stops) is kept for an error, not logged.
	stopping atomic.Bool
}

// Start runs the executable at exe (os.Executable for tierbench itself)
// with args and waits for its serving line. Its standard error goes to
// log (prefixed with name) and the last lines of it are kept for the
// error that says why it died. The child is killed if the run's process
// dies first (Linux's parent-death signal), so no tier outlives its run.
func Start(ctx context.Context, name, exe string, args []string, log io.Writer) (*Proc, error) {
	p := &Proc{Name: name, done: make(chan struct{}), tail: &tailBuffer{max: 20}}
	p.cmd = exec.Command(exe, args...)
	// Its own process group: an interrupt at the terminal reaches the run
	// alone, which stops its tiers in order (callers first) instead of
	// seeing them end under it. The parent-death signal is Linux's, sent
	// when the thread that started the child ends; Go's runtime keeps its
	// threads, so in practice when the run's process ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s: %w", name, err)
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() {
		defer pipes.Done()
		copyLines(stderr, p.tail, log, name, &p.stopping)
	}()
	urls := make(chan string, 1)
	go func() {
		defer pipes.Done()
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				urls <- m[1]
				sent = true
			}
		}
		// A line longer than the scanner's buffer ends the scan: the rest
		// is still read, or the child would block writing to a full pipe.
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		// Wait must follow the pipes' last reads: it closes them.
		pipes.Wait()
		p.exitErr = p.cmd.Wait()
		close(p.done)
	}()

	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	select {
	case p.URL = <-urls:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("the %s exited before it served: %s", name, p.why())
	case <-timer.C:
		p.Stop()
		return nil, fmt.Errorf("the %s did not serve within %s: %s", name, ReadyTimeout, p.why())
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
}

// PID is the child's process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has ended, whatever ended it.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Died is the error a run ends with when the tier died under it: which
// tier, how it ended and the last lines it wrote.
func (p *Proc) Died() error {
	return fmt.Errorf("the %s (pid %d, %s) died: %s", p.Name, p.PID(), p.URL, p.why())
}

// why is how the process ended and what it said last.
func (p *Proc) why() string {
	how := "still running"
	select {
	case <-p.done:
		how = "exited"
		if p.exitErr != nil {
			how = p.exitErr.Error()
		}
	default:
	}
	if last := p.tail.String(); last != "" {
		return how + "; its last output: " + last
	}
	return how
}

// Stop asks the tier to stop (SIGTERM: it lets the calls under way
// finish) and kills it after StopGrace. It returns the process's error
// unless it ended by Stop's own signal; a tier that had ended before is
// not Stop's to report (Died says how it ended).
func (p *Proc) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.stopping.Store(true)
	p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.exitErr, &ee) && ee.ExitCode() != 0 {
			return fmt.Errorf("the %s stopped with %v: %s", p.Name, p.exitErr, p.tail)
		}
		return nil
	case <-t.C:
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("the %s did not stop within %s of SIGTERM and was killed", p.Name, StopGrace)
	}
}

// copyLines copies r's lines to log, each prefixed with "[name] ", until
// quiet is set, and keeps the last ones in tail.
func copyLines(r io.Reader, tail *tailBuffer, log io.Writer, name string, quiet *atomic.Bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		tail.add(line)
		if log != nil && !quiet.Load() {
			fmt.Fprintf(log, "[%s] %s\n", name, line)
		}
	}
	// As for stdout: a line too long for the scanner must not leave the
	// child blocked on a full pipe.
	io.Copy(io.Discard, r)
}

// tailBuffer keeps the last max lines written to it.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == t.max {
		t.lines = append(t.lines[:0], t.lines[1:]...)
	}
	t.lines = append(t.lines, line)
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

// Executable is the running tierbench's own binary, for its tiers.
func Executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find tierbench's own executable to start the tiers: %w", err)
	}
	return exe, nil
}
