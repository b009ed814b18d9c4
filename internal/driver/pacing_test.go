package driver

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

// timedTarget records when each terminal's operations start, by group.
type timedTarget struct {
	work  time.Duration
	begin time.Time
	mu    sync.Mutex
	// starts[terminal] are the start times of its operations; groups[terminal] its group.
	starts map[int][]time.Duration
	groups map[int]int
	ops    map[int][]int
	// failNth: each terminal's nth operation (from 1) fails; 0: none.
	failNth int
	// failWith is what it fails with (nil: an error).
	failWith error
}

func newTimedTarget(work time.Duration) *timedTarget {
	return &timedTarget{work: work, begin: time.Now(), starts: map[int][]time.Duration{}, groups: map[int]int{}, ops: map[int][]int{}}
}

func (f *timedTarget) NewClient(group, id int, _ *rand.Rand) workload.Client {
	f.mu.Lock()
	f.groups[id] = group
	f.mu.Unlock()
	return timedClient{f, id}
}

type timedClient struct {
	f  *timedTarget
	id int
}

func (c timedClient) Do(_ context.Context, s workload.Step) error {
	c.f.mu.Lock()
	c.f.starts[c.id] = append(c.f.starts[c.id], time.Since(c.f.begin))
	c.f.ops[c.id] = append(c.f.ops[c.id], s.Op)
	n := len(c.f.ops[c.id])
	c.f.mu.Unlock()
	time.Sleep(c.f.work)
	if n == c.f.failNth {
		if c.f.failWith != nil {
			return c.f.failWith
		}
		return errors.New("operation failed")
	}
	return nil
}

// plannedLine is ECperf's: schedule, update, update, complete, each step
// delay after the previous one.
func plannedLine(delay time.Duration) workload.Mix {
	return workload.Mix{Kind: workload.Sequence, Cards: []workload.Card{
		{Op: 0, Count: 1, Delay: delay},
		{Op: 1, Count: 1, Delay: delay},
		{Op: 1, Count: 1, Delay: delay},
		{Op: 2, Count: 1, Delay: delay},
	}}
}

var oneOp = workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}

func TestCyclePacingStartsOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTimedTarget(10 * time.Millisecond)
		rec := metrics.NewRecorder([]string{"op"}, 1)
		groups := []workload.Group{{Clients: 1, Mix: oneOp, Pacing: workload.Pacing{Kind: workload.Cycle, Mean: 100 * time.Millisecond}}}
		if _, err := Run(context.Background(), Config{Duration: 10 * time.Second}, groups, f, rec); err != nil {
			t.Fatal(err)
		}
		starts := f.starts[0]
		if len(starts) < 99 || len(starts) > 100 {
			t.Fatalf("%d operations in 10 s at one per 100 ms", len(starts))
		}
		for i := 1; i < len(starts); i++ {
			if gap := starts[i] - starts[i-1]; gap != 100*time.Millisecond {
				t.Fatalf("operations %d and %d started %v apart, want the 100 ms cycle", i-1, i, gap)
			}
		}
		if p := rec.Snapshot().Ops[0].Latency.Quantile(1); p > 11*time.Millisecond {
			t.Errorf("max latency %v on schedule, want the 10 ms of work", p)
		}
	})
}

// Operations that take longer than the cycle start late, at once after the
// previous one; their latency counts from when they were due, so the
// backlog shows (no coordinated omission).
func TestLateOperationsAreMeasuredFromTheirSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTimedTarget(250 * time.Millisecond)
		rec := metrics.NewRecorder([]string{"op"}, 1)
		groups := []workload.Group{{Clients: 1, Mix: oneOp, Pacing: workload.Pacing{Kind: workload.Cycle, Mean: 100 * time.Millisecond}}}
		if _, err := Run(context.Background(), Config{Duration: 10 * time.Second}, groups, f, rec); err != nil {
			t.Fatal(err)
		}
		starts := f.starts[0]
		for i := 1; i < len(starts); i++ {
			if gap := starts[i] - starts[i-1]; gap != 250*time.Millisecond {
				t.Fatalf("late operations must start back to back: gap %v", gap)
			}
		}
		// The k-th operation is due at phase + 100k ms, ends at about
		// phase' + 250(k+1) ms: latency grows by 150 ms per operation.
		op := rec.Snapshot().Ops[0]
		lat := op.Latency
		n := float64(lat.Count())
		if max := lat.Quantile(1); max < time.Duration(0.9*150*(n-1))*time.Millisecond {
			t.Errorf("max latency %v after %v late operations; the backlog was not measured", max, n)
		}
		// Every operation due in the 10 s is measured, but throughput
		// counts the ones that finished in them: the terminal's capacity
		// of 4 a second, not the 10 a second it was asked for.
		if op.Count() < 99 || op.Completed < 39 || op.Completed > 40 {
			t.Errorf("%d operations due, %d finished in the 10 s; want about 100 and 39-40", op.Count(), op.Completed)
		}
	})
}

func TestSequenceStepsFollowTheirDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTimedTarget(10 * time.Millisecond)
		rec := metrics.NewRecorder([]string{"schedule", "update", "complete"}, 1)
		groups := []workload.Group{{Clients: 2, Mix: plannedLine(333 * time.Millisecond), Pacing: workload.Pacing{Kind: workload.Cycle}}}
		if _, err := Run(context.Background(), Config{Iterations: 3}, groups, f, rec); err != nil {
			t.Fatal(err)
		}
		for id := 0; id < 2; id++ {
			if got := f.ops[id]; len(got) != 12 || got[0] != 0 || got[1] != 1 || got[2] != 1 || got[3] != 2 {
				t.Fatalf("terminal %d ran %v, want schedule, update, update, complete ×3", id, got)
			}
			for i := 1; i < 12; i++ {
				if gap := f.starts[id][i] - f.starts[id][i-1]; gap != 333*time.Millisecond {
					t.Fatalf("terminal %d: steps %d and %d %v apart, want 333 ms", id, i-1, i, gap)
				}
			}
		}
	})
}

func TestGroupsRunTheirOwnMixes(t *testing.T) {
	f := newTimedTarget(0)
	rec := metrics.NewRecorder([]string{"a", "b"}, 2)
	groups := []workload.Group{
		{Name: "as", Clients: 3, Mix: workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}},
		{Name: "bs", Clients: 2, Mix: workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 1, Count: 1}}}},
	}
	if _, err := Run(context.Background(), Config{Iterations: 7}, groups, f, rec); err != nil {
		t.Fatal(err)
	}
	for id := 0; id < 5; id++ {
		wantGroup := map[bool]int{true: 0, false: 1}[id < 3]
		if f.groups[id] != wantGroup {
			t.Errorf("terminal %d is in group %d, want %d", id, f.groups[id], wantGroup)
		}
		for _, op := range f.ops[id] {
			if op != wantGroup {
				t.Fatalf("terminal %d of group %d ran operation %d", id, wantGroup, op)
			}
		}
	}
	snap := rec.Snapshot()
	if snap.Ops[0].Count() != 21 || snap.Ops[1].Count() != 14 {
		t.Errorf("%d a and %d b, want 21 and 14", snap.Ops[0].Count(), snap.Ops[1].Count())
	}
}

// ECperf's cycle times: negative exponential, mean 5 s, cut at 5×.
func TestNegativeExponentialCycleTimes(t *testing.T) {
	p := workload.Pacing{Kind: workload.Cycle, Mean: 5 * time.Second, Dist: workload.NegExp, Truncate: 5}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200_000
	var sum float64
	var atCap int
	for i := 0; i < n; i++ {
		d := cycleTime(p, rng)
		if d < 0 || d > 25*time.Second {
			t.Fatalf("cycle time %v outside [0, 25 s]", d)
		}
		if d == 25*time.Second {
			atCap++
		}
		sum += d.Seconds()
	}
	// The truncated mean is 5(1 - e^-5) s; e^-5 of the draws hit the cap.
	if mean, want := sum/n, 5*(1-math.Exp(-5)); math.Abs(mean-want) > 0.05 {
		t.Errorf("mean %.3f s, want %.3f s", mean, want)
	}
	if frac := float64(atCap) / n; math.Abs(frac-math.Exp(-5)) > 0.001 {
		t.Errorf("%.4f of the draws truncated, want %.4f", frac, math.Exp(-5))
	}
}

// A sequence step that fails ends its iteration: the stations of a work
// order that was never scheduled do not run, and the line's next work
// order starts when it would have. A business exception does the same (a
// large-order line that found no large order) and is counted as one.
func TestFailedSequenceStepSkipsTheRestOfItsIteration(t *testing.T) {
	t.Run("error", func(t *testing.T) { testSequenceStepEnds(t, nil) })
	t.Run("business", func(t *testing.T) { testSequenceStepEnds(t, workload.Business("nothing to build")) })
}

func testSequenceStepEnds(t *testing.T, failWith error) {
	synctest.Test(t, func(t *testing.T) {
		f := newTimedTarget(time.Millisecond)
		f.failNth = 5 // the second work order's schedule, as one whose retries ran out
		f.failWith = failWith
		rec := metrics.NewRecorder([]string{"schedule", "update", "complete"}, 1)
		groups := []workload.Group{{Clients: 1, Mix: plannedLine(100 * time.Millisecond), Pacing: workload.Pacing{Kind: workload.Cycle}}}
		if _, err := Run(context.Background(), Config{Iterations: 3}, groups, f, rec); err != nil {
			t.Fatal(err)
		}
		if got, want := f.ops[0], []int{0, 1, 1, 2, 0, 0, 1, 1, 2}; !slices.Equal(got, want) {
			t.Fatalf("ran %v, want %v (the failed work order's stations skipped)", got, want)
		}
		starts := f.starts[0]
		if gap := starts[5] - starts[4]; gap != 400*time.Millisecond {
			t.Errorf("the next work order started %v after the failed one, want 400 ms: the skipped stations' slots", gap)
		}
		snap := rec.Snapshot()
		ended := snap.Ops[0].Errors
		if failWith != nil {
			ended = snap.Ops[0].Business
		}
		if ended != 1 || snap.Ops[1].Count() != 4 || snap.Ops[2].Count() != 2 {
			t.Errorf("schedule errors or business exceptions %d, updates %d, completes %d; want 1, 4, 2", ended, snap.Ops[1].Count(), snap.Ops[2].Count())
		}
	})
}

// chooserClient chooses op k%3 after a pause of k×100 ms.
type chooserClient struct {
	timedClient
	k int
}

func (c *chooserClient) Next() (int, time.Duration) {
	c.k++
	return c.k % 3, time.Duration(c.k) * 100 * time.Millisecond
}

type chooserTarget struct{ *timedTarget }

func (f chooserTarget) NewClient(group, id int, rng *rand.Rand) workload.Client {
	return &chooserClient{timedClient: f.timedTarget.NewClient(group, id, rng).(timedClient)}
}

// A client that chooses its operations gets them run in its order, each
// after the pause it asked for, which is not part of its latency.
func TestChooserRunsItsOwnChoicesAfterItsPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTimedTarget(10 * time.Millisecond)
		groups := []workload.Group{{Name: "browsers", Clients: 2, Mix: workload.Mix{Kind: workload.Chosen}}}
		rec := metrics.NewRecorder([]string{"a", "b", "c"}, 1)
		if _, err := Run(context.Background(), Config{Iterations: 4, Seed: 1}, groups, chooserTarget{f}, rec); err != nil {
			t.Fatal(err)
		}
		for id := range 2 {
			if !slices.Equal(f.ops[id], []int{1, 2, 0, 1}) {
				t.Errorf("terminal %d ran %v, want its choices 1, 2, 0, 1", id, f.ops[id])
			}
			// Pauses 100, 200, 300, 400 ms, each operation 10 ms.
			want := []time.Duration{100, 310, 620, 1030}
			for i := range want {
				want[i] *= time.Millisecond
			}
			if !slices.Equal(f.starts[id], want) {
				t.Errorf("terminal %d started at %v, want %v", id, f.starts[id], want)
			}
		}
		snap := rec.Snapshot()
		if snap.Succeeded[1] != 4 || snap.Succeeded[2] != 2 || snap.Succeeded[0] != 2 {
			t.Errorf("recorded %v, want 2 a, 4 b, 2 c", snap.Succeeded)
		}
		if max := snap.Ops[1].Latency.Quantile(1); max > 11*time.Millisecond {
			t.Errorf("latency up to %v: the pause counted in it", max)
		}
	})
}

// A timed run ends at its duration, not after the clients' pauses that
// would end later (before, a RUBiS run of 20 s with 7 s think times lasted
// 65 s).
func TestPausesPastTheEndAreNotWaited(t *testing.T) {
	for _, tt := range []struct {
		name   string
		groups []workload.Group
		target Target
	}{
		{"chooser", []workload.Group{{Name: "browsers", Clients: 2, Mix: workload.Mix{Kind: workload.Chosen}}}, longPauses{newTimedTarget(time.Millisecond)}},
		{"think time", []workload.Group{{Name: "clients", Clients: 2, Mix: oneOp, Pacing: workload.Pacing{Kind: workload.Think, Mean: time.Minute}}}, newTimedTarget(time.Millisecond)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := metrics.NewRecorder([]string{"a", "b", "c"}, 1)
				began := time.Now()
				if _, err := Run(context.Background(), Config{Duration: 5 * time.Second, Seed: 1}, tt.groups, tt.target, rec); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(began); took != 5*time.Second {
					t.Errorf("a 5 s run took %v: want its duration, not the pauses ending after it", took)
				}
			})
		})
	}
}

// longPauses chooses operation 0 after a pause of a minute (none first).
type longPauses struct{ f *timedTarget }

func (l longPauses) NewClient(group, id int, rng *rand.Rand) workload.Client {
	return &longPause{timedClient: l.f.NewClient(group, id, rng).(timedClient)}
}

type longPause struct {
	timedClient
	n int
}

func (c *longPause) Next() (int, time.Duration) {
	c.n++
	if c.n == 1 {
		return 0, 0
	}
	return 0, time.Minute
}

func TestChosenMixNeedsChoosers(t *testing.T) {
	rec := metrics.NewRecorder([]string{"a"}, 1)
	f := newTimedTarget(0)
	_, err := Run(context.Background(), Config{Iterations: 1}, []workload.Group{{Name: "g", Clients: 1, Mix: workload.Mix{Kind: workload.Chosen}}}, f, rec)
	if err == nil || !strings.Contains(err.Error(), "workload.Chooser") {
		t.Errorf("a chosen mix with clients that do not choose: %v, want the refusal naming workload.Chooser", err)
	}
	_, err = Run(context.Background(), Config{Iterations: 1}, []workload.Group{{Name: "g", Clients: 1, Mix: oneOp}}, chooserTarget{f}, rec)
	if err == nil || !strings.Contains(err.Error(), "workload.Chooser") {
		t.Errorf("choosing clients on a dealt mix: %v, want the refusal naming workload.Chooser", err)
	}
}
