// Package balancer runs a real load balancer, HAProxy, in front of a run's
// app servers: its configuration generated in the run's directory
// (least-connections, health checks), the process started and stopped by
// its own PID, and each server's requests read from its stats socket.
//
// It knows HAProxy and sockets only; the runner decides what stands
// behind it. It must not depend on the runner or the workloads.
package balancer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/template"
	"time"
)

// Executable is where Debian's haproxy package puts the program.
const Executable = "/usr/sbin/haproxy"

// ReadyTimeout bounds how long HAProxy may take to start and find every
// server healthy.
const ReadyTimeout = 30 * time.Second

// stopGrace is how long HAProxy has after SIGUSR1 (soft stop: the
// requests under way finish) before it is killed.
const stopGrace = 10 * time.Second

// Options say what HAProxy stands in front of.
type Options struct {
	// Dir holds the configuration and the stats socket (the run's).
	Dir string
	// Servers are the app servers' HOST:PORT.
	Servers []string
	// H2: the servers speak HTTP/2 without TLS (gRPC); the front does too.
	H2 bool
	// HealthPath, when set, is checked over HTTP (200 wanted); empty: a
	// TCP connection is the check (gRPC's servers answer no HTTP/1).
	HealthPath string
	// Log receives HAProxy's own output; nil: discarded.
	Log io.Writer
}

// HAProxy is a running haproxy.
type HAProxy struct {
	// URL is the front the clients call: http://127.0.0.1:PORT.
	URL     string
	Version string
	cmd     *exec.Cmd
	socket  string
	done    chan struct{}
	exitErr error
	// stopping: Stop has asked it to end; its farewells are not logged.
	stopping atomic.Bool
}

var configTemplate = template.Must(template.New("haproxy.cfg").Parse(`# written by tierbench for one run; removed with the run's directory
global
	stats socket {{.Socket}} mode 600 level admin
	maxconn 4096

defaults
	mode http
	timeout connect 5s
	timeout client 2m
	timeout server 2m
	timeout http-keep-alive 2m
	# A request whose server cannot be reached goes to another.
	option redispatch
	retries 2

frontend app
	# fd@3: the listening socket the run opened and handed down, so that
	# no other process can take the port between choosing it and binding.
	bind fd@3{{if .H2}} proto h2{{end}}
	default_backend servers

backend servers
	balance leastconn
{{- if .HealthPath}}
	option httpchk GET {{.HealthPath}}
	http-check expect status 200
{{- end}}
{{- range $i, $s := .Servers}}
	server s{{$i}} {{$s}} check inter 500ms fall 2 rise 1{{if $.H2}} proto h2{{end}}
{{- end}}
`))

// Start writes the configuration, starts haproxy and waits until every
// server is UP (its health check passed).
func Start(ctx context.Context, o Options) (*HAProxy, error) {
	if _, err := os.Stat(Executable); err != nil {
		return nil, fmt.Errorf("--balancer haproxy needs HAProxy at %s (Debian: apt-get install haproxy): %w", Executable, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("--balancer haproxy: listen on loopback: %w", err)
	}
	// haproxy gets its own copy of the socket; this one is closed once it
	// has started (or failed to).
	defer ln.Close()
	lnFile, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, fmt.Errorf("--balancer haproxy: %w", err)
	}
	defer lnFile.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	h := &HAProxy{URL: fmt.Sprintf("http://127.0.0.1:%d", port), socket: filepath.Join(o.Dir, "haproxy.sock"), done: make(chan struct{})}
	path := filepath.Join(o.Dir, "haproxy.cfg")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	err = configTemplate.Execute(f, map[string]any{"Socket": h.socket, "H2": o.H2, "HealthPath": o.HealthPath, "Servers": o.Servers})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	check := exec.CommandContext(ctx, Executable, "-c", "-f", path)
	check.ExtraFiles = []*os.File{lnFile} // fd 3, as the configuration binds
	if out, err := check.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("haproxy refuses the configuration %s: %v: %s", path, err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.CommandContext(ctx, Executable, "-v").Output(); err == nil {
		h.Version = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	// -db: in the foreground, so that it is this process's child to stop.
	h.cmd = exec.Command(Executable, "-db", "-f", path)
	h.cmd.Dir = o.Dir
	h.cmd.ExtraFiles = []*os.File{lnFile}
	if o.Log != nil {
		w := &prefixed{w: o.Log, prefix: "[haproxy] ", quiet: &h.stopping}
		h.cmd.Stdout, h.cmd.Stderr = w, w
	}
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start haproxy: %w", err)
	}
	go func() {
		h.exitErr = h.cmd.Wait()
		close(h.done)
	}()
	if err := h.awaitUp(ctx, len(o.Servers)); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// awaitUp polls the stats socket until every server is UP.
func (h *HAProxy) awaitUp(ctx context.Context, n int) error {
	deadline := time.Now().Add(ReadyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer on its stats socket"
	for {
		if st, err := h.Stats(); err == nil {
			up := 0
			for _, s := range st {
				if s.Status == "UP" {
					up++
				}
			}
			if up == n {
				return nil
			}
			last = fmt.Sprintf("%d of %d servers UP (%v)", up, n, st)
		}
		select {
		case <-h.done:
			return fmt.Errorf("haproxy exited before it served: %v", h.exitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy not ready within %s: %s", ReadyTimeout, last)
		}
	}
}

// PID is haproxy's process id.
func (h *HAProxy) PID() int { return h.cmd.Process.Pid }

// ServerStats are one server's line of haproxy's statistics.
type ServerStats struct {
	Name   string
	Status string
	// Requests are the HTTP requests (HTTP/2 streams) it was sent.
	Requests int64
}

// Stats are the servers' lines of "show stat", in the configuration's
// order.
func (h *HAProxy) Stats() ([]ServerStats, error) {
	conn, err := net.DialTimeout("unix", h.socket, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, err
	}
	r := csv.NewReader(bufio.NewReader(conn))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, name := range header {
		col[strings.TrimPrefix(name, "# ")] = i
	}
	for _, c := range []string{"pxname", "svname", "status", "req_tot"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("haproxy's show stat has no %s column", c)
		}
	}
	var out []ServerStats
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rec) <= col["req_tot"] || rec[col["pxname"]] != "servers" || !strings.HasPrefix(rec[col["svname"]], "s") || rec[col["svname"]] == "BACKEND" {
			continue
		}
		n, _ := strconv.ParseInt(rec[col["req_tot"]], 10, 64)
		out = append(out, ServerStats{Name: rec[col["svname"]], Status: strings.Fields(rec[col["status"]] + " ")[0], Requests: n})
	}
}

// Stop stops haproxy softly, then kills it after a grace: only the
// process Start started.
func (h *HAProxy) Stop() error {
	select {
	case <-h.done:
		return nil
	default:
	}
	h.stopping.Store(true)
	h.cmd.Process.Signal(syscall.SIGUSR1)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-h.done:
		return nil
	case <-t.C:
		h.cmd.Process.Kill()
		<-h.done
		return fmt.Errorf("haproxy (pid %d) did not stop within %s and was killed", h.PID(), stopGrace)
	}
}

// Done is closed when haproxy has exited.
func (h *HAProxy) Done() <-chan struct{} { return h.done }

// prefixed writes each whole line to w behind prefix, as the run's tiers'
// lines are; exec.Cmd writes to it from one goroutine per stream, so it
// locks.
type prefixed struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	quiet   *atomic.Bool
	partial []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if !p.quiet.Load() {
			fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.partial[:i])
		}
		p.partial = p.partial[i+1:]
	}
}
