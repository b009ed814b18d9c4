package ecperf

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

func newRunner(t *testing.T) *runner.Runner {
	t.Helper()
	w, err := workload.NewRegistry(New())
	if err != nil {
		t.Fatal(err)
	}
	return &runner.Runner{Backends: storetest.Backends(), Workloads: w, Version: "test"}
}

// shortRun is a run at Ir 1 with the kit's times scaled down 20×, so a
// few seconds see orders, work orders, reorders and deliveries.
func shortRun(t *testing.T, r *runner.Runner, dsn, dispatch string) config.Run {
	t.Helper()
	cfg, _, err := r.Config("ecperf")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DB = store.MustParseDSN(dsn)
	workload.SetOptions(&cfg, func(o *Options) { o.IR, o.PODispatch = 1, dispatch })
	cfg.Duration, cfg.RampUp, cfg.RampDown = config.Duration(5*time.Second), config.Duration(time.Second), 0
	workload.SetOptions(&cfg, func(o *Options) { o.CycleScale, o.LeadTimeUnit = 0.05, config.Duration(10*time.Millisecond) })
	cfg.ServerThreads = 8
	cfg.Quiet = true
	return cfg
}

func natsURL() string {
	if u := os.Getenv("TIERBENCH_TEST_NATS"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// externalNATS is the test broker's URL, or a skip (a failure under
// TIERBENCH_REQUIRE_SERVICES=1) when it is unreachable.
func externalNATS(t *testing.T) string {
	t.Helper()
	u := natsURL()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(u, "nats://"), 2*time.Second)
	if err != nil {
		if os.Getenv("TIERBENCH_REQUIRE_SERVICES") == "1" {
			t.Fatalf("NATS at %s unreachable: %v", u, err)
		}
		t.Skipf("NATS at %s unreachable (%v); set TIERBENCH_TEST_NATS", u, err)
	}
	c.Close()
	return u
}

func checksOf(t *testing.T, res *result.Result) map[string]workload.Check {
	t.Helper()
	out := map[string]workload.Check{}
	for _, c := range res.Checks {
		out[c.Name] = c
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	if len(out) != 6 {
		t.Errorf("%d checks, want 6", len(out))
	}
	return out
}

// The tests that start ECperf call t.Parallel(): a run spends its seconds
// waiting (for cycle times, the emulator's lead times, the databases'
// commits), so side by side they take the time of the longest rather than
// of all (make test's set used 18 s of CPU in 89 s of wall time when they
// ran one after another). Each has its own database and emulator.
// TestMixCycleTimesAndBBops, which counts operations against the clock,
// and TestEmulatorDownForPartOfTheRun, whose sync case needs a
// ScheduleWorkOrder within the emulator's 2 s down (under the race
// detector beside another run, on a loaded machine, none came), stay
// sequential: Go runs them before the parallel ones start, alone.

// Every committed PO reaches the emulator exactly once and is delivered,
// whatever the dispatch, on every backend. The backends run side by side,
// each its cells in turn on its own database.
func TestEveryDispatchSendsEachCommittedPOOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		t.Parallel()
		for mi, mode := range []string{dispatchSync, dispatchPoller, dispatchQueue} {
			t.Run(mode, func(t *testing.T) {
				storetest.ShareCell(t, dsn, mi)
				r := newRunner(t)
				cfg := shortRun(t, r, dsn, mode)
				res, err := r.Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				checks := checksOf(t, res)
				if !strings.Contains(checks["po-sent-exactly-once"].Detail, "0 committed but never sent") {
					t.Errorf("detail: %s", checks["po-sent-exactly-once"].Detail)
				}
				if res.Operations["ScheduleWorkOrder"].Count == 0 || res.Operations["NewOrder"].Count == 0 {
					t.Errorf("no work: %+v", res.Operations)
				}
				if strings.HasPrefix(checks["po-sent-exactly-once"].Detail, "0 POs committed") {
					t.Errorf("no PO was created, so nothing was tested: %s", checks["po-sent-exactly-once"].Detail)
				}
			})
		}
	})
}

// Hand-written SQL (--persistence direct) passes the same checks as the
// container on every backend: each runs it under sync dispatch, and the
// queue's cell on its share of them.
func TestDirectPersistencePassesTheChecks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		t.Parallel()
		for mi, mode := range []string{dispatchSync, dispatchQueue} {
			t.Run(mode, func(t *testing.T) {
				if mi > 0 {
					storetest.ShareCell(t, dsn, mi)
				}
				r := newRunner(t)
				cfg := shortRun(t, r, dsn, mode)
				cfg.Persistence = container.Direct
				res, err := r.Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				checks := checksOf(t, res)
				if strings.HasPrefix(checks["po-sent-exactly-once"].Detail, "0 POs committed") {
					t.Errorf("no PO was created, so nothing was tested: %s", checks["po-sent-exactly-once"].Detail)
				}
				for _, op := range []string{"NewOrder", "ChangeOrder", "OrderStatus", "CustomerStatus", "ScheduleWorkOrder", "UpdateWorkOrder", "CompleteWorkOrder"} {
					if o := res.Operations[op]; o.Count == 0 || o.Errors != 0 {
						t.Errorf("%s: %d, %d errors: want some and none failed", op, o.Count, o.Errors)
					}
				}
				if len(res.Container) != 0 {
					t.Errorf("entity counters under direct persistence: %+v", res.Container)
				}
			})
		}
	})
}

func TestQueueDispatchOnAnExternalBroker(t *testing.T) {
	t.Parallel()
	broker := externalNATS(t)
	r := newRunner(t)
	cfg := shortRun(t, r, storetest.Postgres(t), dispatchQueue)
	workload.SetOptions(&cfg, func(o *Options) { o.Broker = broker })
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checksOf(t, res)
}

// flakyEmulator is an emulator behind a switch: while down, every request
// gets 503, as from a partner whose server is away. Its record survives.
type flakyEmulator struct {
	down atomic.Bool
	// reject, if set, turns away the POs it names with 503 as well.
	reject func(emulator.PO) bool
	url    string
}

func startFlakyEmulator(t *testing.T) *flakyEmulator {
	t.Helper()
	srv, err := emulator.New(emulator.Config{LeadTimeUnit: 10 * time.Millisecond, OwnUnit: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyEmulator{}
	inner := srv.Handler()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() && r.Method == http.MethodPost {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if f.reject != nil && r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			var po emulator.PO
			if err == nil && json.Unmarshal(body, &po) == nil && f.reject(po) {
				http.Error(w, "rejected by the test", http.StatusServiceUnavailable)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	f.url = "http://" + ln.Addr().String()
	return f
}

// With the emulator down for part of the run, poller and queue deliver
// every committed PO once it is back; sync aborts the transactions that
// could not send, and any PO such a transaction had sent before is one
// the check accounts to it (TestSyncReportsThePOsItsAbortedTransactionsSent
// makes that happen on purpose).
func TestEmulatorDownForPartOfTheRun(t *testing.T) {
	for i, mode := range []string{dispatchSync, dispatchPoller, dispatchQueue} {
		t.Run(mode, func(t *testing.T) {
			testsvc.KeepOne(t, i, "the emulator down for part of the run, each dispatch")
			r := newRunner(t)
			emu := startFlakyEmulator(t)
			cfg := shortRun(t, r, storetest.SQLite(t), mode)
			workload.SetOptions(&cfg, func(o *Options) { o.Emulator = emu.url })
			// Down from 1.5 s to 3.5 s after the terminals start: inside the
			// steady state (1 s to 5 s), however long loading took.
			r.Started = func(runner.Progress) {
				go func() {
					time.Sleep(1500 * time.Millisecond)
					emu.down.Store(true)
					time.Sleep(2 * time.Second)
					emu.down.Store(false)
				}()
			}
			res, err := r.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checksOf(t, res)
			failed := res.Operations["ScheduleWorkOrder"].Errors
			if mode == dispatchSync && failed == 0 {
				t.Errorf("sync: no ScheduleWorkOrder failed while the emulator was down")
			}
			if mode != dispatchSync && failed != 0 {
				t.Errorf("%s: %d ScheduleWorkOrder failed; the send is after commit and must not fail them", mode, failed)
			}
			// A work order that was never scheduled has no stations: they
			// are skipped, neither failed nor counted as completed.
			for _, op := range []string{"UpdateWorkOrder", "CompleteWorkOrder"} {
				if e := res.Operations[op].Errors; e != 0 {
					t.Errorf("%s: %d %s failed; the stations of an unscheduled work order must be skipped", mode, e, op)
				}
			}
		})
	}
}

// A sync ScheduleWorkOrder sends its POs one by one inside its
// transaction; when a later send fails, the earlier ones stay at the
// emulator while the transaction aborts (the reference's flaw). With
// every even-numbered PO turned away, each transaction whose POs run odd
// then even leaves one such orphan: the check names them as sent by
// aborted transactions and passes, and no even PO is committed.
func TestSyncReportsThePOsItsAbortedTransactionsSent(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	emu := startFlakyEmulator(t)
	emu.reject = func(po emulator.PO) bool { return po.PONumber%2 == 0 }
	dsn := storetest.SQLite(t)
	cfg := shortRun(t, r, dsn, dispatchSync)
	workload.SetOptions(&cfg, func(o *Options) { o.Emulator = emu.url })
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	detail := checksOf(t, res)["po-sent-exactly-once"].Detail
	if m := regexp.MustCompile(`(\d+) sent by sync transactions that then aborted`).FindStringSubmatch(detail); m == nil || m[1] == "0" {
		t.Errorf("no transaction sent a PO and then aborted, so nothing was tested: %s", detail)
	}
	db, err := storetest.Backends().Open(context.Background(), store.MustParseDSN(dsn), store.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := storetest.Querier{T: t, DB: db}
	if even := q.Int("SELECT COUNT(*) FROM s_purchase_order WHERE po_number % 2 = 0"); even != 0 {
		t.Errorf("%d even POs committed though the emulator turned every one away", even)
	}
}

// With the kit's unsorted access (--unsorted-access) on a locking
// database, ChangeOrder and CancelOrder touch lines in the client's order
// and ScheduleWorkOrder the BOM in line order; whatever deadlocks it
// causes are retried, and the database stays consistent. That the order
// really changes is TestUnsortedAccessChangesTheLockOrder's.
func TestUnsortedAccessStaysConsistent(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	cfg := shortRun(t, r, storetest.MySQL(t), dispatchQueue)
	workload.SetOptions(&cfg, func(o *Options) { o.IR, o.UnsortedAccess = 3, true })
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checksOf(t, res)
	if res.Operations["CancelOrder"].Count+res.Operations["ChangeOrder"].Count == 0 {
		t.Error("no ChangeOrder or CancelOrder ran")
	}
	if res.Operations["ScheduleWorkOrder"].Count == 0 {
		t.Error("no ScheduleWorkOrder ran")
	}
}

// A process killed mid-run leaves POs in every state short of delivered:
// committed with their outbox rows but never published (900001, 900002),
// published and their rows deleted but never sent, to an embedded broker
// whose storage died with it (900003), sent but never delivered, the
// delivery addressed to its dead receiver (900004). The next run on the
// database sends each once and sees it delivered, whatever its dispatch.
func TestPOsOfAKilledRunAreSentByTheNext(t *testing.T) {
	t.Parallel()
	for mi, mode := range []string{dispatchSync, dispatchPoller, dispatchQueue} {
		t.Run(mode, func(t *testing.T) {
			if mi > 0 {
				testsvc.SkipUnlessLong(t, "a run killed and the next run for each dispatch; make test runs sync")
			}
			ctx := context.Background()
			r := newRunner(t)
			dsn := storetest.Postgres(t)
			cfg := shortRun(t, r, dsn, mode)
			if _, _, err := r.Load(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			db, err := storetest.Backends().Open(ctx, store.MustParseDSN(dsn), store.Options{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			exec := func(sql string, args ...any) {
				t.Helper()
				s, err := db.Prepare(ctx, store.Statement{Name: "killed", SQL: sql})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(ctx, s, args...); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Now().UTC()
			left := []struct {
				po, status int64
				outbox     bool
			}{{900001, poUnsent, true}, {900002, poUnsent, true}, {900003, poUnsent, false}, {900004, poSent, false}}
			for _, l := range left {
				exec("INSERT INTO s_purchase_order (po_number, po_supp_id, po_site_id, po_status, po_created) VALUES (?, 1, 1, ?, ?)", l.po, l.status, now)
				exec("INSERT INTO s_purchase_orderline (pol_po_id, pol_number, pol_p_id, pol_qty, pol_balance, pol_deldate, pol_message) VALUES (?, 1, 150, 40, 40, ?, '')", l.po, now)
				if l.outbox && mode == dispatchQueue {
					exec("INSERT INTO s_outbox (ob_po_number, ob_created) VALUES (?, ?)", l.po, now)
				}
			}
			exec("UPDATE m_inventory SET in_ordered = in_ordered + 160 WHERE in_p_id = 150")
			db.Close()

			cfg.NoLoad = true
			res, err := r.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checks := checksOf(t, res)
			// The left-over POs count as this run's, so the check would
			// name them had they not reached the emulator.
			if d := checks["po-sent-exactly-once"].Detail; strings.Contains(d, "90000") {
				t.Errorf("left-over POs missing: %s", d)
			}
		})
	}
}

// Over a seeded run the order-entry mix holds its shares and each
// terminal's cycle time its mean; BBops/min is the operations that
// finished in the steady state, over it.
func TestMixCycleTimesAndBBops(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a 14 s run, for counts within three standard deviations of the mix")
	r := newRunner(t)
	cfg := shortRun(t, r, storetest.SQLite(t), dispatchQueue)
	workload.SetOptions(&cfg, func(o *Options) { o.IR = 4 })
	cfg.Duration, cfg.RampUp = config.Duration(12*time.Second), config.Duration(2*time.Second)
	workload.SetOptions(&cfg, func(o *Options) { o.CycleScale = 0.02 }) // mean cycle 100 ms
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checksOf(t, res)
	orderOps := []string{"NewOrder", "ChangeOrder", "CancelOrder", "OrderStatus", "CustomerStatus"}
	completed := func(ops ...string) (n int64) {
		for _, op := range ops {
			n += res.Operations[op].Count
		}
		return n
	}
	orders := completed(orderOps...)
	for _, op := range orderOps {
		if e := res.Operations[op].Errors; e != 0 {
			t.Fatalf("%d %s failed; the counts below assume none did", e, op)
		}
	}
	// The kit's ±5% needs tens of thousands of orders to hold by chance;
	// a few thousand must fall within three standard deviations.
	for _, share := range []struct {
		ops []string
		p   float64
	}{{[]string{"NewOrder"}, 0.5}, {[]string{"ChangeOrder", "CancelOrder"}, 0.2}, {[]string{"OrderStatus"}, 0.2}, {[]string{"CustomerStatus"}, 0.1}} {
		got, sd := float64(completed(share.ops...))/float64(orders), math.Sqrt(share.p*(1-share.p)/float64(orders))
		if math.Abs(got-share.p) > 3*sd {
			t.Errorf("%v: %.4f of %d order-entry operations, want %.2f ± %.4f (3σ)", share.ops, got, orders, share.p, 3*sd)
		}
	}
	// 20 terminals, truncated mean 100·(1-e^-5) ms, 10 s measured.
	want := 20 * 10.0 / (0.1 * (1 - 0.006738))
	if got := float64(orders); got < 0.9*want || got > 1.1*want {
		t.Errorf("%v order-entry operations in 10 s from 20 terminals, want %.0f ± 10%% (cycle mean 100 ms)", got, want)
	}
	// BBops: order-entry transactions and completed work orders, not the
	// scheduling and station updates, that finished in the steady state.
	// Whether the run keeps up is the machine's business (under -race on
	// two cores it does not; the driver's tests pin completions against
	// what was due with a fake clock), so the population is checked
	// against a second account of it instead: the time series counts
	// every operation by the second it finished in.
	var metric, finished int64
	for _, op := range append(orderOps, "CompleteWorkOrder") {
		metric += res.Operations[op].Completed
	}
	for _, op := range res.Operations {
		finished += op.Completed
	}
	var inWindow int64
	for _, p := range res.Timeseries {
		if p.T > 2 && p.T <= 12 { // a point is the second ending at T; steady state 2-12 s
			inWindow += p.Ops
		}
	}
	if metric == 0 || finished != inWindow {
		t.Errorf("%d operations finished in the steady state (%d of them BBops), the time series has %d in its seconds 2-12", finished, metric, inWindow)
	}
	if got, want := res.Summary.Metric.Value, float64(metric)/res.Summary.ElapsedS*60; math.Abs(got-want) > 1e-4*want { // the result rounds the window to 1 ms
		t.Errorf("BBops/min %v, want %v (%d operations over %v s)", got, want, metric, res.Summary.ElapsedS)
	}
}

// After the terminals stop, the progress line says what the run waits for:
// the POs still to be sent and delivered, then the checks.
func TestProgressNamesTheDrainAndTheChecks(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	cfg := shortRun(t, r, storetest.SQLite(t), dispatchQueue)
	workload.SetOptions(&cfg, func(o *Options) { o.LeadTimeUnit = config.Duration(100 * time.Millisecond) }) // deliveries 0.2-1 s after the send
	var progress runner.Progress
	seen := make(chan map[string]bool, 1)
	stop := make(chan struct{})
	r.Started = func(p runner.Progress) {
		progress = p
		go func() {
			stages := map[string]bool{}
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					seen <- stages
					return
				case <-tick.C:
					stages[p.Stage()] = true
				}
			}
		}()
	}
	if _, err := r.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	close(stop)
	stages := <-seen
	if !stages[""] {
		t.Error("the stage was never empty while the terminals drove")
	}
	draining := false
	for s := range stages {
		draining = draining || (strings.HasPrefix(s, "draining: ") && strings.Contains(s, "awaiting delivery"))
	}
	if !draining {
		t.Errorf("never saw the drain named; stages: %v", stages)
	}
	if got := progress.Stage(); got != "checking the database" {
		t.Errorf("last stage %q, want the checks", got)
	}
}
