package ecperf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// restartableEmulator is a Supplier Emulator on a fixed address that a
// test kills (its Server closed: the deliveries it had pending are lost
// with it) and starts again (a new Server on the same address, which has
// forgotten every PO), as a partner's process that crashed and came back.
// It records the PO numbers each incarnation accepted.
type restartableEmulator struct {
	t    *testing.T
	addr string
	unit time.Duration

	mu       sync.Mutex
	srv      *emulator.Server
	hs       *http.Server
	gen      int              // incarnation: 0, then 1 after the restart
	accepted []map[int64]bool // by incarnation
	run      string           // the workload's run name, from its POs
	// reached is closed when the first incarnation has accepted killAfter
	// POs.
	killAfter int
	reached   chan struct{}
}

func startRestartableEmulator(t *testing.T, unit time.Duration, killAfter int) *restartableEmulator {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &restartableEmulator{t: t, addr: ln.Addr().String(), unit: unit, killAfter: killAfter, reached: make(chan struct{})}
	e.serve(ln)
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.hs.Close()
		e.srv.Close()
	})
	return e
}

func (e *restartableEmulator) url() string { return "http://" + e.addr }

// serve starts a new incarnation on ln.
func (e *restartableEmulator) serve(ln net.Listener) {
	srv, err := emulator.New(emulator.Config{LeadTimeUnit: e.unit, OwnUnit: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	gen := len(e.accepted)
	e.srv, e.gen = srv, gen
	e.accepted = append(e.accepted, map[int64]bool{})
	e.hs = &http.Server{Handler: e.observe(gen, srv.Handler())}
	hs := e.hs
	e.mu.Unlock()
	go hs.Serve(ln)
}

// observe wraps an incarnation's handler to record the POs it accepts.
func (e *restartableEmulator) observe(gen int, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != emulator.PathPurchaseOrders {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var po emulator.PO
		json.Unmarshal(body, &po)
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status != http.StatusAccepted {
			return
		}
		e.mu.Lock()
		e.run = po.Run
		e.accepted[gen][po.PONumber] = true
		if gen == 0 && len(e.accepted[0]) == e.killAfter {
			close(e.reached)
		}
		e.mu.Unlock()
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// restart kills the running incarnation and starts a new one on the same
// address. It returns the POs the killed one had accepted and not
// delivered: the deliveries lost with it.
func (e *restartableEmulator) restart() (lost []int64) {
	e.t.Helper()
	e.mu.Lock()
	hs, srv, run := e.hs, e.srv, e.run
	e.mu.Unlock()
	hs.Close() // the listener and every connection: the process is gone
	srv.Close()
	// The dead incarnation's record, read in-process (nobody could ask it
	// over HTTP any more): what it never delivered is lost.
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, emulator.RunPurchaseOrdersPath(run), nil))
	var list []emulator.POSummary
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		e.t.Errorf("the killed emulator's record: %v (%s)", err, rec.Body)
	}
	for _, p := range list {
		if !p.Delivered {
			lost = append(lost, p.PONumber)
		}
	}
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		e.t.Errorf("restart the emulator on %s: %v", e.addr, err)
		return lost
	}
	e.serve(ln)
	return lost
}

// acceptedBy is a copy of what incarnation gen accepted.
func (e *restartableEmulator) acceptedBy(gen int) map[int64]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[int64]bool{}
	if gen < len(e.accepted) {
		for n := range e.accepted[gen] {
			out[n] = true
		}
	}
	return out
}

var (
	committedPOs = regexp.MustCompile(`^(\d+) POs committed`)
	appliedOnce  = regexp.MustCompile(`^(\d+) deliveries applied`)
	drainTook    = regexp.MustCompile(`after a drain of ([0-9.]+[a-zµ]+)`)
)

func submatchInt(t *testing.T, re *regexp.Regexp, s string) int64 {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%q does not match %v", s, re)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An emulator killed mid-run loses the deliveries it had pending; it comes
// back on the same address having forgotten them. Each lost PO is sent
// again after its delivery deadline, accepted by the new incarnation and
// delivered: every committed PO is delivered exactly once (as many
// deliveries applied as POs committed, none twice), and the drain ends
// long before its budget, whatever the dispatch.
func TestEmulatorKilledAndRestartedMidRun(t *testing.T) {
	t.Parallel()
	for i, mode := range []string{dispatchSync, dispatchPoller, dispatchQueue} {
		t.Run(mode, func(t *testing.T) {
			testsvc.KeepOne(t, i, "the emulator killed and restarted mid-run, each dispatch")
			r := newRunner(t)
			// Lead times of 2-10 units of 100 ms: at any moment of the run
			// the emulator has deliveries pending, to be lost.
			const unit = 100 * time.Millisecond
			// Killed after 20 POs: by then it has delivered some and has
			// others pending.
			emu := startRestartableEmulator(t, unit, 20)
			dsn := storetest.SQLite(t)
			cfg := shortRun(t, r, dsn, mode)
			workload.SetOptions(&cfg, func(o *Options) { o.Emulator, o.LeadTimeUnit = emu.url(), config.Duration(unit) })

			lostc := make(chan []int64, 1)
			ran := make(chan struct{})
			go func() {
				select {
				case <-emu.reached:
					lostc <- emu.restart()
				case <-ran:
					lostc <- nil
				}
			}()
			res, err := r.Run(context.Background(), cfg)
			close(ran)
			lost := <-lostc
			if err != nil {
				t.Fatal(err)
			}
			if lost == nil {
				t.Fatalf("the emulator was never killed: fewer than %d POs accepted (%d ScheduleWorkOrder)", emu.killAfter, res.Operations["ScheduleWorkOrder"].Count)
			}
			if len(lost) == 0 {
				t.Fatal("the killed emulator had no delivery pending: nothing was lost, nothing tested")
			}
			checks := checksOf(t, res)
			po, del := checks["po-sent-exactly-once"].Detail, checks["deliveries-applied-once"].Detail
			t.Logf("%d deliveries lost with the killed emulator\n%s\n%s", len(lost), po, del)

			// The database's POs: a sync transaction cut off between two
			// sends by the kill sent a PO it then did not commit.
			db := storetest.Open(t, dsn, store.Options{Threads: 1})
			q := storetest.Querier{T: t, DB: db}
			committed := func(n int64) bool {
				return q.Int("SELECT COUNT(*) FROM s_purchase_order WHERE po_number = ?", n) == 1
			}
			received := func(n int64) bool {
				return q.Int("SELECT COUNT(*) FROM s_purchase_order WHERE po_number = ? AND po_status = ?", n, int64(poReceived)) == 1
			}
			// Each committed PO lost with the killed incarnation went to the
			// new one, which accepted it as new: sent again because lost.
			// All but one kind: a delivery in flight when the kill came can
			// have been applied while the dying emulator never learnt it
			// succeeded. Only the killed incarnation can have delivered a
			// PO the new one never accepted, so received is proof of that.
			again := emu.acceptedBy(1)
			isLost := map[int64]bool{}
			var deliveredAtTheKill int
			for _, n := range lost {
				switch {
				case !committed(n) || again[n]:
					isLost[n] = true
				case received(n):
					deliveredAtTheKill++
				default:
					isLost[n] = true
					t.Errorf("PO %d, lost with the killed emulator, was never sent to the new one", n)
				}
			}
			// Those the killed one delivered are unknown to the new one, and
			// still not "never sent": the database has them received.
			var delivered int
			deliveredBy0 := emu.acceptedBy(0)
			for _, n := range lost {
				deliveredBy0[n] = true
			}
			for n := range deliveredBy0 {
				if !isLost[n] && committed(n) && !again[n] {
					delivered++
				}
			}
			if deliveredAtTheKill > 0 {
				t.Logf("%d deliveries in flight at the kill were applied, unknown to the dying emulator", deliveredAtTheKill)
			}
			if delivered == 0 {
				t.Errorf("the killed emulator delivered nothing before it died; the check's record of a restarted emulator went untested")
			} else if want := fmt.Sprintf("; %d sent but unknown to the emulator", delivered); !strings.Contains(po, want) {
				t.Errorf("detail %q, want it to contain %q", po, want)
			}
			if committed, applied := submatchInt(t, committedPOs, po), submatchInt(t, appliedOnce, del); committed == 0 || applied != committed {
				t.Errorf("%d deliveries applied for %d POs committed, want one each:\n%s\n%s", applied, committed, po, del)
			}
			m := drainTook.FindStringSubmatch(del)
			if m == nil {
				t.Fatalf("no drain time in %q", del)
			}
			if took, err := time.ParseDuration(m[1]); err != nil || took >= drainTimeout {
				t.Errorf("the drain took %s (%v), its whole budget of %v: %s", m[1], err, drainTimeout, del)
			}
		})
	}
}
