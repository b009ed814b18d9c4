package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

func TestEmulatorCommandServesUntilCancelled(t *testing.T) {
	t.Parallel()
	delivered := make(chan emulator.Delivery, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d emulator.Delivery
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		delivered <- d
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, stderr, exit := startEmulatorCmd(ctx, "--lead-time-unit", "10ms", "--max-in-flight", "4")

	first := out.next(t)
	m := regexp.MustCompile(`^supplier emulator listening on (http://127\.0\.0\.1:\d+) \(lead time unit 10ms for POs that carry none; a run's POs carry its own\)$`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q, want the address and the lead time unit; stderr: %s", first, stderr.String())
	}
	po := `{"run":"cli","po_number":1,"supplier_id":1,"site_id":1,"lines":[{"line":1,"part_id":"P","qty":3,"lead_time":2}],"deliver_to":"` + recv.URL + `"}`
	resp, err := http.Post(m[1]+emulator.PathPurchaseOrders, "application/json", strings.NewReader(po))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST a PO: %s, want 202 Accepted", resp.Status)
	}
	select {
	case d := <-delivered:
		if d.Run != "cli" || d.PONumber != 1 || len(d.Lines) != 1 || d.Lines[0].Qty != 3 {
			t.Errorf("delivery %+v, want run cli PO 1 with 3 of P", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery within 5 s")
	}
	// The receiver has the delivery; wait for the emulator to see its answer.
	c, err := emulator.NewClient(m[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := c.Stats(ctx)
		if err == nil && st.Delivered == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, %v: the delivery was not counted within 5 s", st, err)
		}
	}

	cancel()
	select {
	case code := <-exit:
		if code != ExitOK {
			t.Errorf("exit code %d after cancelling, want 0; stderr: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the emulator did not stop after its context was cancelled")
	}
	last := out.next(t)
	want := "supplier emulator stopped: received 1 (accepted 1, duplicates 0, rejected 0), delivered 1, delivery attempts 1 (0 failed), pending 0, cancelled 0"
	if last != want {
		t.Errorf("last line\n %q\nwant\n %q", last, want)
	}
}

func TestEmulatorCommandBadInput(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"lead time unit not a duration", []string{"--lead-time-unit", "soon"}, 2, []string{`"soon"`, "--lead-time-unit", "want a positive duration such as 5s"}},
		{"lead time unit zero", []string{"--lead-time-unit", "0s"}, 2, []string{"--lead-time-unit", "want a positive duration"}},
		{"lead time unit negative", []string{"--lead-time-unit", "-5s"}, 2, []string{"--lead-time-unit", "want a positive duration"}},
		{"max in flight zero", []string{"--max-in-flight", "0"}, 2, []string{"--max-in-flight", "want a whole number of at least 1"}},
		{"listen not an address", []string{"--listen", "8099"}, 2, []string{`--listen "8099": want HOST:PORT`}},
		{"an argument", []string{"now"}, 2, []string{`unknown command "now"`}},
		{"address in use", []string{"--listen", busy.Addr().String()}, 3, []string{"--listen " + busy.Addr().String(), "address already in use"}},
		{"address beyond the host", []string{"--listen", "192.0.2.1:8099"}, 2, []string{"--listen 192.0.2.1:8099 reaches other hosts", "--insecure"}},
		{"every interface", []string{"--listen", ":8099"}, 2, []string{"--listen :8099 reaches other hosts", "--insecure"}},
		// Warned first, then refused by the kernel.
		{"address not local", []string{"--listen", "192.0.2.1:8099", "--insecure"}, 3, []string{"warning: --insecure: serving the supplier emulator on 192.0.2.1:8099"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"emulator"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stdout %q, stderr:\n%s", code, tt.code, stdout, stderr)
			}
			first := strings.SplitN(stderr, "\n", 2)[0]
			for _, w := range tt.want {
				if !strings.Contains(first, w) {
					t.Errorf("first line of stderr %q does not say %q", first, w)
				}
			}
		})
	}
}

// lineWriter passes each complete line written to it on a channel; the
// command writes from its own goroutine.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) next(t *testing.T) string {
	t.Helper()
	select {
	case l := <-w.lines:
		return l
	case <-time.After(5 * time.Second):
		t.Fatal("no line of output within 5 s")
		return ""
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A partner, which authenticates no one, listens beyond the host only
// when told --insecure (issue 27 §6).
func TestPartnerBeyondTheHostNeedsInsecure(t *testing.T) {
	for _, k := range []string{"pov", "pge", "ice"} {
		code, _, stderr := runCLI(t, "emulator", k, "--listen", "0.0.0.0:0")
		if code != ExitUsage || !strings.Contains(stderr, "--listen 0.0.0.0:0 reaches other hosts") || !strings.Contains(stderr, "--insecure") {
			t.Errorf("%s: exit %d, %q; want 2 naming --insecure", k, code, stderr)
		}
	}
}

// ECperf's delivery receiver, which takes deliveries from whoever posts
// them, listens beyond the host only when told --insecure (issue 27 §6).
func TestReceiverBeyondTheHostNeedsInsecure(t *testing.T) {
	args := []string{"run", "ecperf", "--receiver", "192.0.2.1:8100", "--emulator", "http://127.0.0.1:1", "--out", filepath.Join(t.TempDir(), "r.json")}
	code, _, stderr := runCLI(t, args...)
	if code != ExitUsage || !strings.Contains(stderr, "--receiver 192.0.2.1:8100 reaches other hosts") || !strings.Contains(stderr, "give --insecure") {
		t.Errorf("exit %d, %q; want 2 naming --insecure", code, stderr)
	}
	code, _, stderr = runCLI(t, append(args, "--insecure")...)
	if code == ExitUsage || !strings.Contains(stderr, "warning: --insecure: serving the delivery receiver") {
		t.Errorf("with --insecure: exit %d, %q; want a warning, then the run (which fails to reach the emulator)", code, stderr)
	}
}

// A run's POs carry its lead-time unit, so an emulator started alone with
// the kit's (here an hour, so that a miss cannot pass) delivers them in
// the run's: a 20 s run at --cycle-scale 0.1 took 73 s and re-sent 2,813
// POs against an emulator that kept its own 5 s.
func TestStandaloneEmulatorUsesTheRunsLeadTimeUnit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, stderr, exit := startEmulatorCmd(ctx, "--lead-time-unit", "1h")
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(out.next(t))
	if m == nil {
		t.Fatalf("no address; stderr: %s", stderr.String())
	}
	res := filepath.Join(t.TempDir(), "r.json")
	code, stdout, errOut := runCLI(t, "run", "ecperf", "--emulator", m[1], "--ir", "1", "--duration", "8s", "--ramp-up", "1s",
		"--cycle-scale", "0.1", "--out", res, "--quiet")
	if code != 0 || !strings.Contains(stdout, "po-sent-exactly-once") {
		t.Errorf("run against the standalone emulator: exit %d\n%s%s", code, stdout, errOut)
	}
	cancel()
	<-exit
}

// startEmulatorCmd runs `tierbench emulator --listen 127.0.0.1:0 --quiet
// ARGS` until ctx ends: its output line by line, its stderr, its exit.
func startEmulatorCmd(ctx context.Context, args ...string) (*lineWriter, *lockedBuffer, chan int) {
	out := &lineWriter{lines: make(chan string, 16)}
	stderr := &lockedBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- Main(ctx, Env{
			Args:   append([]string{"emulator", "--listen", "127.0.0.1:0", "--quiet"}, args...),
			Stdout: out, Stderr: stderr, Version: "test",
		})
	}()
	return out, stderr, exit
}
