package driver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Config is the load a run applies to its terminal groups. The config
// package validates user input; Run rejects only what would make it
// misbehave.
type Config struct {
	// ServerThreads bounds the operations in the middle tier at once;
	// terminals beyond it queue. Zero, or at least the terminals, admits
	// all.
	ServerThreads int
	// Iterations per client of the mix; used when Duration is zero.
	Iterations int
	// Duration of the whole run including ramps; clients stop starting
	// operations when it has passed.
	Duration time.Duration
	// RampUp and RampDown are excluded from the measured steady state.
	RampUp, RampDown time.Duration
	Seed             uint64
	// MaxRetries of a retryable failure (deadlock, serialization failure,
	// lock timeout) before it counts as an error.
	MaxRetries int
	// Share, when set, runs only the terminals whose numbers it holds, as
	// one of several driver agents: each terminal keeps its number, hence
	// its random streams, so the agents together run exactly the terminals
	// one driver would.
	Share *Share
	// StartAt, when set, is when the run starts (agents start together);
	// a run ready after it starts at once.
	StartAt time.Time
	// Began, when set, is told when the terminals start: the time the
	// report's Started will hold, for a caller that must build a result
	// before Run returns (a second interrupt).
	Began func(time.Time)
}

// Window is the steady state of a run of c that has gone on for end.
func (c Config) Window(end time.Duration) time.Duration { return newPhases(c).window(end) }

// Share is part Part (from 0) of Parts even parts of a run's terminals:
// the contiguous range of terminal numbers [Part·N/Parts, (Part+1)·N/Parts)
// of the run's N terminals.
type Share struct{ Part, Parts int }

// Range of terminal numbers of the share among n terminals, [from, to).
func (s *Share) Range(n int) (from, to int) {
	if s == nil {
		return 0, n
	}
	return s.Part * n / s.Parts, (s.Part + 1) * n / s.Parts
}

// Target is what the driver drives: a workload readied for a run.
type Target interface {
	NewClient(group, id int, rng *rand.Rand) workload.Client
}

// Clients is the number of terminals of the groups.
func Clients(groups []workload.Group) int {
	n := 0
	for _, g := range groups {
		n += g.Clients
	}
	return n
}

// Report is the timing of a finished run; the samples are in the recorder.
type Report struct {
	Started time.Time
	// Elapsed is from the start to the end of the last operation.
	Elapsed time.Duration
	// Window is the length of the measured steady state, which rates
	// (throughput, the workload's metric) divide by.
	Window time.Duration
	// Interrupted: the context was cancelled before the run finished.
	// Operations under way then were allowed to finish.
	Interrupted bool
}

// Threads is the number of server threads a run has: its --server-threads,
// or one per client when clients are fewer.
func Threads(clients, serverThreads int) int {
	if serverThreads <= 0 || serverThreads > clients {
		return clients
	}
	return serverThreads
}

// phases is the run's schedule as data: what is measured and when clients
// stop. Times are since the start of the run.
type phases struct {
	rampUp time.Duration
	// steadyEnd ends the measured window; 0 in an iteration-bounded run,
	// whose end is not known in advance.
	steadyEnd time.Duration
	// stop is when clients start nothing new; 0 in an iteration-bounded run.
	stop time.Duration
}

func newPhases(cfg Config) phases {
	p := phases{rampUp: cfg.RampUp}
	if cfg.Duration > 0 {
		p.stop = cfg.Duration
		p.steadyEnd = cfg.Duration - cfg.RampDown
	}
	return p
}

// measured reports whether an operation meant to start at t is in the
// steady state.
func (p phases) measured(t time.Duration) bool {
	return t >= p.rampUp && (p.steadyEnd == 0 || t < p.steadyEnd)
}

// window is the length of the steady state of a run that ended at end.
func (p phases) window(end time.Duration) time.Duration {
	hi := end
	if p.steadyEnd > 0 && p.steadyEnd < end {
		hi = p.steadyEnd
	}
	return max(hi-p.rampUp, 0)
}

// Run drives target with the groups' terminals until every terminal has
// finished its iterations or the duration has passed, recording into rec.
func Run(ctx context.Context, cfg Config, groups []workload.Group, target Target, rec *metrics.Recorder) (Report, error) {
	clients := Clients(groups)
	if clients < 1 {
		return Report{}, fmt.Errorf("driver: %d terminals", clients)
	}
	if cfg.Duration <= 0 && cfg.Iterations < 1 {
		return Report{}, errors.New("driver: neither iterations nor a duration")
	}
	if cfg.Duration > 0 && cfg.RampUp+cfg.RampDown >= cfg.Duration {
		return Report{}, fmt.Errorf("driver: ramps (%v + %v) leave no steady state in %v", cfg.RampUp, cfg.RampDown, cfg.Duration)
	}
	r := &run{cfg: cfg, phases: newPhases(cfg)}
	if n := Threads(clients, cfg.ServerThreads); n < clients {
		// Admission hands out thread numbers: a free thread is a number
		// in the channel.
		r.threads = make(chan int, n)
		for i := range n {
			r.threads <- i
		}
	}
	// ctx stops the run: nothing new starts once it is done. Operations
	// run on a context that is never cancelled, so an interrupted run
	// leaves every transaction committed or rolled back, and recorded (the
	// database's lock timeouts bound how long one can take). It also spares
	// the database driver from arming a cancellation per statement.
	r.opCtx = context.WithoutCancel(ctx)
	r.queued = r.threads != nil
	var terminals []*terminal
	if sh := cfg.Share; sh != nil && (sh.Parts < 1 || sh.Part < 0 || sh.Part >= sh.Parts || sh.Parts > clients) {
		return Report{}, fmt.Errorf("driver: part %d of %d of %d terminals: want 0 ≤ part < parts ≤ terminals", sh.Part, sh.Parts, clients)
	}
	from, to := cfg.Share.Range(clients)
	id := -1
	for gi, g := range groups {
		for range g.Clients {
			id++
			if id < from || id >= to {
				continue
			}
			client := target.NewClient(gi, id, stream(cfg.Seed, id, streamWorkload))
			if _, ok := client.(workload.Chooser); ok != (g.Mix.Kind == workload.Chosen) {
				return Report{}, fmt.Errorf("driver: group %s: a chosen mix needs clients that choose (workload.Chooser), and only it", g.Name)
			}
			t := &terminal{
				id:     id,
				client: client,
				pacing: g.Pacing,
				jitter: stream(cfg.Seed, id, streamJitter),
				shard:  rec.Shard(id),
			}
			t.shard.Track(&t.busy)
			// A client that chooses needs no deck and no pacing stream:
			// with thousands of browsers they would be memory for nothing.
			if g.Mix.Kind != workload.Chosen {
				t.dealer = newDealer(g.Mix)
				t.deal = stream(cfg.Seed, id, streamDeck)
				t.pace = stream(cfg.Seed, id, streamPacing)
			}
			terminals = append(terminals, t)
		}
	}
	if wait := time.Until(cfg.StartAt); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return Report{Started: time.Now(), Interrupted: true}, nil
		}
	}
	r.started = time.Now()
	if cfg.Began != nil {
		cfg.Began(r.started)
	}
	var wg sync.WaitGroup
	for _, t := range terminals {
		wg.Go(func() { r.terminal(ctx, t) })
	}
	wg.Wait()
	end := time.Since(r.started)
	return Report{
		Started:     r.started,
		Elapsed:     end,
		Window:      r.phases.window(end),
		Interrupted: ctx.Err() != nil,
	}, nil
}

// Each terminal draws from independent streams, so that retries (which
// draw jitter) and pacing never shift the plan or the workload's choices.
const (
	streamDeck = iota
	streamWorkload
	streamJitter
	streamPacing
	streamsPerTerminal
)

func stream(seed uint64, terminal, kind int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(terminal*streamsPerTerminal+kind)))
}

type run struct {
	cfg     Config
	phases  phases
	threads chan int // free server threads; nil when every client has its own
	started time.Time
	opCtx   context.Context
	// queued: clients can wait for threads, so queue and service time are
	// recorded apart; otherwise both restate the end-to-end latency.
	queued bool
}

type terminal struct {
	id     int
	client workload.Client
	dealer dealer
	pacing workload.Pacing
	deal   *rand.Rand
	pace   *rand.Rand
	jitter *rand.Rand
	shard  *metrics.Shard
	// busy is set while an operation of the terminal is under way, for
	// the live metrics' operations in flight (Shard.Track).
	busy  atomic.Bool
	steps []workload.Step
	// next is when the next operation is scheduled to start (cycle
	// pacing), since the start of the run.
	next  time.Duration
	timer *time.Timer // for sleep, made on first use
}

func (r *run) terminal(ctx context.Context, t *terminal) {
	if c, ok := t.client.(workload.Chooser); ok {
		r.chooser(ctx, t, c)
		return
	}
	t.steps = make([]workload.Step, 0, t.dealer.size())
	first := true
	for iter := 0; r.phases.stop > 0 || iter < r.cfg.Iterations; iter++ {
		t.steps = t.dealer.deal(t.deal, t.steps)
		for i, step := range t.steps {
			intended, ok := r.schedule(ctx, t, step, first)
			first = false
			if !ok || (r.phases.stop > 0 && intended >= r.phases.stop) || ctx.Err() != nil {
				return
			}
			if t.pacing.Kind == workload.Cycle {
				if wait := intended - time.Since(r.started); wait > 0 && !t.sleep(ctx, wait) {
					return
				}
			}
			ended, ok := r.do(ctx, t, step, intended)
			if !ok {
				return
			}
			if ended && t.dealer.chained() {
				t.skip(t.steps[i+1:])
				break
			}
		}
	}
}

// chooser runs a client that chooses its operations: one per iteration,
// each after the pause the client asks for.
func (r *run) chooser(ctx context.Context, t *terminal, c workload.Chooser) {
	for iter := 0; r.phases.stop > 0 || iter < r.cfg.Iterations; iter++ {
		op, pause := c.Next()
		if !r.pause(ctx, t, pause) {
			return
		}
		intended := time.Since(r.started)
		if (r.phases.stop > 0 && intended >= r.phases.stop) || ctx.Err() != nil {
			return
		}
		if _, ok := r.do(ctx, t, workload.Step{Op: op, Pair: -1}, intended); !ok {
			return
		}
	}
}

// skip passes over steps a failure left nothing to act on: they are not
// run, and under cycle pacing their time slots pass, so the terminal keeps
// its cadence.
func (t *terminal) skip(steps []workload.Step) {
	if t.pacing.Kind != workload.Cycle {
		return
	}
	for _, s := range steps {
		t.next += s.Delay
	}
}

// schedule returns when step is meant to start. Closed loop: now. Think
// time: now, after the pause. Cycle: the previous step's scheduled start
// plus the step's delay (a sequence's) or a cycle time drawn from the
// pacing; the first step of a terminal is placed at random within one
// cycle, so terminals do not start in lockstep. false: the run is stopping.
func (r *run) schedule(ctx context.Context, t *terminal, step workload.Step, first bool) (time.Duration, bool) {
	switch t.pacing.Kind {
	case workload.Think:
		if !first && !r.pause(ctx, t, t.pacing.Mean) {
			return 0, false
		}
	case workload.Cycle:
		gap := step.Delay
		if gap == 0 {
			gap = cycleTime(t.pacing, t.pace)
		}
		if first {
			t.next = time.Since(r.started) + time.Duration(t.pace.Int64N(int64(gap)+1))
		} else {
			t.next += gap
		}
		return t.next, true
	}
	return time.Since(r.started), true
}

// cycleTime draws one cycle time from the pacing's distribution.
func cycleTime(p workload.Pacing, rng *rand.Rand) time.Duration {
	if p.Dist != workload.NegExp {
		return p.Mean
	}
	d := time.Duration(rng.ExpFloat64() * float64(p.Mean))
	if p.Truncate > 0 {
		d = min(d, time.Duration(p.Truncate*float64(p.Mean)))
	}
	return d
}

// do runs one operation through admission, with retries, and records it.
// ended: it failed, or ended in a business exception, which in a chained
// sequence means it left nothing for the next steps to act on (ECperf's
// large-order line finding no large order). ok is false when the run is
// being stopped. ctx stops the run; the operation itself runs on r.opCtx.
func (r *run) do(ctx context.Context, t *terminal, step workload.Step, intended time.Duration) (ended, ok bool) {
	t.busy.Store(true)
	defer t.busy.Store(false)
	var queue, service, backoff, finished time.Duration
	var err error
	retries := 0
	var aborts metrics.Aborts
	asked := intended
	stopping := false
	for {
		thread, admitted := r.admit(ctx, t)
		if !admitted {
			if retries == 0 {
				return false, false // never started: nothing to record
			}
			// Stopped between attempts, waiting for a thread: the
			// operation failed with its last attempt's error, and is
			// recorded as such, the wait as queue time.
			finished = time.Since(r.started)
			queue += finished - asked
			stopping = true
			break
		}
		step.Thread = thread
		began := time.Since(r.started)
		err = t.client.Do(r.opCtx, step)
		finished = time.Since(r.started)
		r.release(thread)
		queue += began - asked
		service += finished - began
		countAbort(&aborts, err)
		if err == nil || retries == r.cfg.MaxRetries || !store.Retryable(err) {
			break
		}
		retries++
		stopping = !t.sleep(ctx, store.Backoff(t.jitter, retries))
		asked = time.Since(r.started)
		backoff += asked - finished
		if stopping {
			finished = asked
			break
		}
	}
	outcome := outcomeOf(err)
	measured := r.phases.measured(intended)
	t.shard.Record(metrics.Sample{
		Op:       step.Op,
		Outcome:  outcome,
		Retries:  retries,
		At:       finished,
		Latency:  finished - intended,
		Queue:    queue,
		Service:  service,
		Backoff:  backoff,
		Split:    r.queued,
		Measured: measured,
		Finished: r.phases.measured(finished),
		Aborts:   aborts,
	})
	if outcome.Failed() && measured {
		t.shard.RecordFailure(step.Op, FailureClass(err), err.Error)
	}
	return outcome.Failed() || outcome == metrics.Business, !stopping
}

// outcomeOf classifies an operation's final error.
func outcomeOf(err error) metrics.Outcome {
	switch {
	case err == nil:
		return metrics.Success
	case workload.IsBusiness(err):
		return metrics.Business
	case errors.Is(err, store.ErrInDoubt):
		return metrics.InDoubt
	}
	return metrics.Error
}

// countAbort counts err in a when it is an abort by the database or the
// container.
func countAbort(a *metrics.Aborts, err error) {
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDeadlock):
		a.Deadlock++
	case errors.Is(err, store.ErrLockTimeout):
		a.LockTimeout++
	case errors.Is(err, store.ErrSerialization):
		a.Serialization++
	case errors.Is(err, store.ErrCertification):
		a.Certification++
	}
}

// admit waits for a free server thread and returns its number; false when
// the run is stopped first. A client without admission runs on its own
// thread, numbered as the client.
func (r *run) admit(ctx context.Context, t *terminal) (int, bool) {
	if r.threads == nil {
		return t.id, true
	}
	select {
	case n := <-r.threads:
		return n, true
	default:
	}
	select {
	case n := <-r.threads:
		return n, true
	case <-ctx.Done():
		return 0, false
	}
}

func (r *run) release(thread int) {
	if r.threads != nil {
		r.threads <- thread
	}
}

// pause is a terminal's think time before its next operation. false: the
// run is stopping, or the pause would end when it has stopped: a timed
// run's clients start nothing at or after its end, so the terminal thinks
// until the end and no longer (not for the rest of a think time, up to
// 70 s for RUBiS's, that leads nowhere).
func (r *run) pause(ctx context.Context, t *terminal, d time.Duration) bool {
	if left := r.phases.stop - time.Since(r.started); r.phases.stop > 0 && d >= left {
		t.sleep(ctx, left)
		return false
	}
	return t.sleep(ctx, d)
}

// sleep waits d unless ctx ends first; false when it did. The terminal's
// one timer is reused: cycle pacing sleeps before nearly every operation,
// and a new timer each time would be an allocation per operation.
func (t *terminal) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if t.timer == nil {
		t.timer = time.NewTimer(d)
	} else {
		t.timer.Reset(d) // since Go 1.23, Reset leaves no stale value in C
	}
	select {
	case <-t.timer.C:
		return true
	case <-ctx.Done():
		t.timer.Stop()
		return false
	}
}
