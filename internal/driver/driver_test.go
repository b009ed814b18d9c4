package driver

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// fakeTarget is a middle tier whose operations take a fixed time and may
// fail by a script; it records what each terminal was asked to do, and
// which terminal started each operation, when and on which thread.
type fakeTarget struct {
	work time.Duration
	// fail, when set, decides an attempt's error.
	fail func(terminal int, attempt int) error

	inFlight, maxInFlight atomic.Int64
	mu                    sync.Mutex
	seen                  map[int][]string // per terminal: op, pair and a draw of its stream
	order                 []int            // the terminal of each operation, as they started
	starts                []time.Time      // when each of order started
	threadBusy            map[int]bool     // by server thread: an operation is under way on it
	sharedThreads         int              // operations begun on a thread already busy
}

func (f *fakeTarget) NewClient(_, id int, rng *rand.Rand) workload.Client {
	return &fakeClient{f: f, id: id, rng: rng}
}

type fakeClient struct {
	f        *fakeTarget
	id       int
	rng      *rand.Rand
	attempts int
}

func (c *fakeClient) Do(ctx context.Context, s workload.Step) error {
	n := c.f.inFlight.Add(1)
	defer c.f.inFlight.Add(-1)
	for {
		m := c.f.maxInFlight.Load()
		if n <= m || c.f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	c.f.mu.Lock()
	if c.f.seen == nil {
		c.f.seen = make(map[int][]string)
	}
	c.f.seen[c.id] = append(c.f.seen[c.id], string(rune('A'+s.Op))+string(rune('0'+s.Pair+1))+string(rune('a'+c.rng.IntN(26))))
	if c.f.threadBusy == nil {
		c.f.threadBusy = make(map[int]bool)
	}
	if c.f.threadBusy[s.Thread] {
		c.f.sharedThreads++
	}
	c.f.threadBusy[s.Thread] = true
	c.f.order = append(c.f.order, c.id)
	c.f.starts = append(c.f.starts, time.Now())
	c.f.mu.Unlock()
	if c.f.work > 0 {
		time.Sleep(c.f.work)
	}
	c.f.mu.Lock()
	c.f.threadBusy[s.Thread] = false
	c.f.mu.Unlock()
	c.attempts++
	if c.f.fail != nil {
		return c.f.fail(c.id, c.attempts)
	}
	return nil
}

func stockOnlineOps() []string { return stockonline.New().Info().Operations }

// clients is one closed-loop group of n terminals on mix.
func clients(n int, mix workload.Mix) []workload.Group {
	return []workload.Group{{Name: "clients", Clients: n, Mix: mix}}
}

func TestSameSeedGivesSameOperationSequence(t *testing.T) {
	run := func(seed uint64) map[int][]string {
		f := &fakeTarget{}
		cfg := Config{ServerThreads: 2, Iterations: 3, Seed: seed}
		if _, err := Run(context.Background(), cfg, clients(4, stockonline.Mix()), f, metrics.NewRecorder(stockOnlineOps(), 2)); err != nil {
			t.Fatal(err)
		}
		return f.seen
	}
	a, b, c := run(42), run(42), run(43)
	for id := 0; id < 4; id++ {
		if len(a[id]) != 3*43 {
			t.Fatalf("terminal %d ran %d operations, want %d", id, len(a[id]), 3*43)
		}
		if !slices.Equal(a[id], b[id]) {
			t.Errorf("terminal %d: the same seed gave different sequences", id)
		}
		if slices.Equal(a[id], c[id]) {
			t.Errorf("terminal %d: seeds 42 and 43 gave the same sequence", id)
		}
	}
	if slices.Equal(a[0], a[1]) {
		t.Error("terminals 0 and 1 share a random stream")
	}
}

func TestAdmissionBoundsConcurrencyAndRecordsQueueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTarget{work: 10 * time.Millisecond}
		rec := metrics.NewRecorder(stockOnlineOps(), 3)
		cfg := Config{ServerThreads: 3, Iterations: 2, Seed: 1}
		rep, err := Run(context.Background(), cfg, clients(8, stockonline.Mix()), f, rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.maxInFlight.Load(); got != 3 {
			t.Errorf("at most %d operations ran at once, want exactly the 3 server threads", got)
		}
		total := rec.Snapshot().Total()
		if total.Count() != 8*2*43 {
			t.Fatalf("%d operations, want %d", total.Count(), 8*2*43)
		}
		// 8 clients on 3 threads of 10 ms each: every operation waits, on
		// average (8-3)/3 of a service time.
		if q := total.Queue.Quantile(0.5); q < 10*time.Millisecond {
			t.Errorf("median queue time %v, want at least one service time (10ms)", q)
		}
		// HDR reports the highest value equivalent to 10 ms at 3 digits.
		if s := total.Service.Quantile(0.99); s < 10*time.Millisecond || s > 10010*time.Microsecond {
			t.Errorf("p99 service time %v, want the 10ms of work (±0.1%%)", s)
		}
		// Throughput is bounded by the threads: 3 per 10 ms, so 688
		// operations take at least 230 rounds. The last rounds may use
		// fewer threads once fewer than 3 terminals have work left, which
		// depends on the order waiting terminals are admitted in (300
		// runs gave 230 to 232 rounds); 5 rounds of tail are allowed.
		if least := time.Duration(8*2*43/3+1) * 10 * time.Millisecond; rep.Elapsed < least || rep.Elapsed > least+50*time.Millisecond {
			t.Errorf("elapsed %v, want %v to %v for 688 operations on 3 threads", rep.Elapsed, least, least+50*time.Millisecond)
		}
	})
}

func TestNoAdmissionWhenThreadsCoverClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTarget{work: time.Millisecond}
		rec := metrics.NewRecorder(stockOnlineOps(), 1)
		if _, err := Run(context.Background(), Config{ServerThreads: 10, Iterations: 1}, clients(5, stockonline.Mix()), f, rec); err != nil {
			t.Fatal(err)
		}
		if got := f.maxInFlight.Load(); got != 5 {
			t.Errorf("%d ran at once, want all 5 clients", got)
		}
		if q := rec.Snapshot().Total().Queue.Quantile(1); q != 0 {
			t.Errorf("max queue time %v with more threads than clients, want 0", q)
		}
	})
}

func TestTimedRunMeasuresOnlyTheSteadyState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTarget{work: 100 * time.Millisecond}
		rec := metrics.NewRecorder([]string{"op"}, 2)
		mix := workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}
		cfg := Config{ServerThreads: 2, Duration: 10 * time.Second, RampUp: 2 * time.Second, RampDown: 3 * time.Second}
		rep, err := Run(context.Background(), cfg, clients(2, mix), f, rec)
		if err != nil {
			t.Fatal(err)
		}
		snap := rec.Snapshot()
		// Each client starts one operation every 100 ms; those starting in
		// [2 s, 7 s) are measured: 50 per client.
		if got := snap.Ops[0].Count(); got != 100 {
			t.Errorf("measured %d operations, want 100 (2 clients × 5 s / 100 ms)", got)
		}
		if got := snap.Succeeded[0]; got != 200 {
			t.Errorf("%d succeeded over the whole run, want 200", got)
		}
		if rep.Window != 5*time.Second || rep.Elapsed != 10*time.Second {
			t.Errorf("window %v, elapsed %v; want 5s, 10s", rep.Window, rep.Elapsed)
		}
		// Operations finish at 0.1 s, 0.2 s, …, 10.0 s: [0, 1 s) holds 9
		// per client, each later second 10, and the last two finish at
		// exactly 10 s, in the eleventh second.
		var perSecond []int64
		for _, p := range snap.Series {
			perSecond = append(perSecond, p.Ops)
		}
		if want := []int64{18, 20, 20, 20, 20, 20, 20, 20, 20, 20, 2}; !slices.Equal(perSecond, want) {
			t.Errorf("operations per second = %v, want %v", perSecond, want)
		}
	})
}

var errDeadlock = store.Classified(store.ErrDeadlock, errors.New("test deadlock"))

func TestRetriesAndOutcomes(t *testing.T) {
	mix := workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}
	tests := []struct {
		name       string
		maxRetries int
		fail       func(int, int) error
		want       metrics.OpStats
	}{
		{"retried deadlock succeeds", 3, func(_, a int) error {
			if a <= 2 {
				return errDeadlock
			}
			return nil
		}, metrics.OpStats{Successes: 1, Retries: 2}},
		{"retries run out", 1, func(int, int) error { return errDeadlock }, metrics.OpStats{Errors: 1, Retries: 1}},
		{"business exception is not retried", 3, func(int, int) error { return workload.Business("no credit") }, metrics.OpStats{Business: 1}},
		{"other errors are not retried", 3, func(int, int) error { return errors.New("syntax error") }, metrics.OpStats{Errors: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeTarget{fail: tt.fail}
				rec := metrics.NewRecorder([]string{"op"}, 1)
				if _, err := Run(context.Background(), Config{Iterations: 1, MaxRetries: tt.maxRetries}, clients(1, mix), f, rec); err != nil {
					t.Fatal(err)
				}
				got := rec.Snapshot().Ops[0]
				if got.Successes != tt.want.Successes || got.Business != tt.want.Business || got.Errors != tt.want.Errors || got.Retries != tt.want.Retries {
					t.Errorf("got %d successes, %d business, %d errors, %d retries; want %+v", got.Successes, got.Business, got.Errors, got.Retries, tt.want)
				}
			})
		})
	}
}

func TestInterruptLetsOperationsUnderWayFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTarget{work: time.Second}
		rec := metrics.NewRecorder([]string{"op"}, 1)
		mix := workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(2500*time.Millisecond, cancel)
		rep, err := Run(ctx, Config{Iterations: 100}, clients(3, mix), f, rec)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Interrupted {
			t.Error("the report does not say the run was interrupted")
		}
		// Three clients finished two operations each, and the third, under
		// way at the interrupt, completed at 3 s.
		if got := rec.Snapshot().Succeeded[0]; got != 9 {
			t.Errorf("%d operations completed, want 9", got)
		}
		if rep.Elapsed != 3*time.Second {
			t.Errorf("elapsed %v, want 3s", rep.Elapsed)
		}
	})
}

func TestRunRejectsImpossibleConfigurations(t *testing.T) {
	mix := stockonline.Mix()
	for _, tt := range []struct {
		name    string
		clients int
		cfg     Config
		want    string
	}{
		{"no terminals", 0, Config{Iterations: 1}, "driver: 0 terminals"},
		{"negative terminals", -2, Config{Iterations: 1}, "driver: -2 terminals"},
		{"no end", 1, Config{}, "driver: neither iterations nor a duration"},
		{"negative iterations", 1, Config{Iterations: -1}, "driver: neither iterations nor a duration"},
		{"negative duration", 1, Config{Duration: -time.Second}, "driver: neither iterations nor a duration"},
		{"ramp-up fills the duration", 1, Config{Duration: time.Second, RampUp: time.Second}, "driver: ramps (1s + 0s) leave no steady state in 1s"},
		{"ramps fill the duration", 1, Config{Duration: 3 * time.Second, RampUp: 2 * time.Second, RampDown: time.Second}, "driver: ramps (2s + 1s) leave no steady state in 3s"},
		{"ramps exceed the duration", 1, Config{Duration: time.Second, RampDown: 2 * time.Second}, "driver: ramps (0s + 2s) leave no steady state in 1s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTarget{}
			rep, err := Run(context.Background(), tt.cfg, clients(tt.clients, mix), f, metrics.NewRecorder(stockOnlineOps(), 1))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Run(%d clients, %+v) error %v, want %q", tt.clients, tt.cfg, err, tt.want)
			}
			// Refused before anything started.
			if len(f.seen) != 0 || rep != (Report{}) {
				t.Errorf("refused run still drove %d terminals, report %+v", len(f.seen), rep)
			}
		})
	}
}

// abortingTarget fails each operation's first attempts with the causes in
// order, then succeeds.
type abortingTarget struct{ causes []error }

func (a abortingTarget) NewClient(_, _ int, _ *rand.Rand) workload.Client {
	return &abortingClient{causes: a.causes}
}

type abortingClient struct {
	causes []error
	n      int
}

func (c *abortingClient) Do(context.Context, workload.Step) error {
	if c.n < len(c.causes) {
		c.n++
		return c.causes[c.n-1]
	}
	c.n = 0
	return nil
}

func TestAbortsCountedByCause(t *testing.T) {
	causes := []error{store.ErrDeadlock, store.ErrLockTimeout, store.ErrSerialization, store.ErrDeadlock}
	rec := metrics.NewRecorder([]string{"op"}, 1)
	_, err := Run(context.Background(), Config{Iterations: 3, MaxRetries: 5}, clients(1, workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}), abortingTarget{causes}, rec)
	if err != nil {
		t.Fatal(err)
	}
	op := rec.Snapshot().Ops[0]
	want := metrics.Aborts{Deadlock: 6, LockTimeout: 3, Serialization: 3}
	if op.Aborts != want || op.Retries != 12 || op.Successes != 3 {
		t.Errorf("aborts %+v, retries %d, successes %d; want %+v, 12, 3", op.Aborts, op.Retries, op.Successes, want)
	}
}

// An operation's latency is the sum of its queue time, its service time
// and the pauses before its retries, to the microsecond; a commit in doubt
// is a failure of its own, never completed and never retried.
func TestLatencyIsQueueServiceAndBackoff(t *testing.T) {
	mix := workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}
	synctest.Test(t, func(t *testing.T) {
		// Two clients on one server thread, each attempt 10 ms, the
		// first two attempts of every operation deadlocked.
		f := &fakeTarget{work: 10 * time.Millisecond, fail: func(_, attempt int) error {
			if attempt%3 != 0 {
				return errDeadlock
			}
			return nil
		}}
		rec := metrics.NewRecorder([]string{"op"}, 1)
		if _, err := Run(context.Background(), Config{Iterations: 2, MaxRetries: 5, ServerThreads: 1}, clients(2, mix), f, rec); err != nil {
			t.Fatal(err)
		}
		o := rec.Snapshot().Ops[0]
		if o.Successes != 4 || o.Retries != 8 || o.Backoff.Count() != 4 {
			t.Fatalf("%d successes, %d retries, %d backoff samples; want 4, 8, 4", o.Successes, o.Retries, o.Backoff.Count())
		}
		// The histograms keep 3 significant digits (32 µs at 40 ms), so
		// the means agree to 30 µs; the backoff itself is larger.
		q, sv, b := o.Queue.Summary().Mean, o.Service.Summary().Mean, o.Backoff.Summary().Mean
		if mean := o.Latency.Summary().Mean; math.Abs(mean-(q+sv+b)) > 0.03 || b < 0.05 {
			t.Errorf("latency mean %.3f ms; queue %.3f + service %.3f + backoff %.3f = %.3f ms", mean, q, sv, b, q+sv+b)
		}
		if math.Abs(sv-30) > 0.03 {
			t.Errorf("service %.3f ms, want 30 (three attempts of 10 ms)", sv)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTarget{fail: func(int, int) error { return store.Classified(store.ErrInDoubt, errors.New("EOF")) }}
		rec := metrics.NewRecorder([]string{"op"}, 1)
		if _, err := Run(context.Background(), Config{Iterations: 3, MaxRetries: 5}, clients(1, mix), f, rec); err != nil {
			t.Fatal(err)
		}
		snap := rec.Snapshot()
		o := snap.Ops[0]
		if o.InDoubt != 3 || o.Errors != 0 || o.Count() != 0 || o.Completed != 0 || o.Retries != 0 || snap.InDoubt[0] != 3 {
			t.Errorf("in doubt %d (whole run %d), errors %d, completed %d/%d, retries %d; want 3 in doubt, nothing else", o.InDoubt, snap.InDoubt[0], o.Errors, o.Count(), o.Completed, o.Retries)
		}
	})
}

// Agents each running a share of the terminals run, together, exactly the
// terminals one driver runs: the same numbers, the same operations in the
// same order, the same draws.
func TestSharesTogetherAreTheWholeRun(t *testing.T) {
	whole := &fakeTarget{}
	cfg := Config{Iterations: 3, Seed: 7}
	if _, err := Run(context.Background(), cfg, clients(7, stockonline.Mix()), whole, metrics.NewRecorder(stockOnlineOps(), 2)); err != nil {
		t.Fatal(err)
	}
	parts := &fakeTarget{}
	for _, sh := range []Share{{0, 3}, {1, 3}, {2, 3}} {
		c := cfg
		c.Share = &sh
		c.StartAt = time.Now().Add(20 * time.Millisecond)
		rep, err := Run(context.Background(), c, clients(7, stockonline.Mix()), parts, metrics.NewRecorder(stockOnlineOps(), 1))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Started.Before(c.StartAt) {
			t.Errorf("share %v started %v before its start time", sh, c.StartAt.Sub(rep.Started))
		}
	}
	if len(parts.seen) != 7 {
		t.Fatalf("the shares ran %d terminals, want 7", len(parts.seen))
	}
	for id, ops := range whole.seen {
		if !slices.Equal(parts.seen[id], ops) {
			t.Errorf("terminal %d: shares ran %v, the whole run %v", id, parts.seen[id], ops)
		}
	}
	c := cfg
	for _, bad := range []Share{{3, 3}, {0, 8}, {-1, 2}} {
		c.Share = &bad
		if _, err := Run(context.Background(), c, clients(7, stockonline.Mix()), parts, metrics.NewRecorder(stockOnlineOps(), 1)); err == nil {
			t.Errorf("share %+v of 7 terminals ran", bad)
		}
	}
	if from, to := (&Share{1, 3}).Range(7); from != 2 || to != 4 {
		t.Errorf("part 1 of 3 of 7 terminals = %d..%d, want 2..4", from, to)
	}
}

// Clients waiting for a server thread are admitted in the order they came
// (with one thread and three closed-loop clients, the three take turns),
// and no thread is given to two at once. A pool that let the last to wait
// in first would run the same clients over and over.
func TestAdmissionIsFirstComeFirstServed(t *testing.T) {
	mix := workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}
	for _, threads := range []int{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeTarget{work: 10 * time.Millisecond}
			n := 2*threads + 1
			rec := metrics.NewRecorder([]string{"op"}, 1)
			if _, err := Run(context.Background(), Config{ServerThreads: threads, Iterations: 20}, clients(n, mix), f, rec); err != nil {
				t.Fatal(err)
			}
			if len(f.order) != n*20 || f.sharedThreads != 0 {
				t.Fatalf("%d operations, %d on a thread already in use; want %d and 0", len(f.order), f.sharedThreads, n*20)
			}
			// A client released from a thread queues behind the n-threads
			// clients waiting then, so at least that many others start
			// before its next operation or with it (operations that start
			// at the same instant are recorded in no set order); checked
			// while every client still has operations to run.
			last, ran := map[int]int{}, map[int]int{}
			for i, id := range f.order {
				if ran[id]++; ran[id] == 20 {
					break
				}
				if j, ok := last[id]; ok {
					var between []int
					for k := j + 1; k < len(f.order) && !f.starts[k].After(f.starts[i]); k++ {
						if f.order[k] != id {
							between = append(between, f.order[k])
						}
					}
					slices.Sort(between)
					if others := len(slices.Compact(between)); others < n-threads {
						t.Fatalf("%d threads, %d clients: terminal %d ran operations %d and %d with %d others between, want at least %d (order %v)", threads, n, id, j, i, others, n-threads, f.order)
					}
				}
				last[id] = i
			}
			for thread := range f.threadBusy {
				if thread < 0 || thread >= threads {
					t.Errorf("an operation ran on thread %d, want 0 to %d", thread, threads-1)
				}
			}
		})
	}
}

// A run stopped while clients wait for a thread turns them away at once:
// only the operation under way finishes.
func TestInterruptTurnsAwayClientsWaitingForAThread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTarget{work: time.Second}
		rec := metrics.NewRecorder([]string{"op"}, 1)
		mix := workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(2500*time.Millisecond, cancel)
		rep, err := Run(ctx, Config{ServerThreads: 1, Iterations: 100}, clients(3, mix), f, rec)
		if err != nil {
			t.Fatal(err)
		}
		// One thread, 1 s per operation: three completed by 3 s, the
		// third under way at the interrupt; the two waiting clients ran
		// nothing more.
		if got := rec.Snapshot().Succeeded[0]; got != 3 || len(f.order) != 3 {
			t.Errorf("%d operations completed, %d started; want 3 and 3", got, len(f.order))
		}
		if rep.Elapsed != 3*time.Second || !rep.Interrupted {
			t.Errorf("elapsed %v, interrupted %v; want 3s, true", rep.Elapsed, rep.Interrupted)
		}
	})
}
