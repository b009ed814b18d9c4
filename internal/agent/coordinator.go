package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/metrics"
)

// Agent is a discovered agent and its clock: Offset is its clock minus the
// coordinator's, measured within RTT/2.
type Agent struct {
	Hello
	Offset, RTT time.Duration
}

// Discover asks for idle agents until n have answered or wait has passed;
// fewer than n is an error naming those found. The first n by ID are kept.
// Agents of another tierbench version than version (when set) are not
// used: the protocol and the measurement are a version's.
func Discover(ctx context.Context, nc *nats.Conn, n int, wait time.Duration, version string) ([]Agent, error) {
	inbox := nc.NewRespInbox()
	replies := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	seen := map[string]Hello{}
	other := map[string]Hello{} // agents of another version
	deadline := time.After(wait)
	ask := time.NewTicker(500 * time.Millisecond) // agents started after the first ask answer a later one
	defer ask.Stop()
	for {
		if err := nc.PublishRequest(subjectDiscover, inbox, nil); err != nil {
			return nil, err
		}
	wait:
		for len(seen) < n {
			select {
			case m := <-replies:
				var h Hello
				switch {
				case json.Unmarshal(m.Data, &h) != nil || h.ID == "":
				case version != "" && h.Version != version:
					other[h.ID] = h
				default:
					seen[h.ID] = h
				}
			case <-ask.C:
				break wait
			case <-deadline:
				err := fmt.Errorf("%d of %d agents answered within %v%s", len(seen), n, wait, names(seen))
				if len(other) > 0 {
					var o []string
					for id, h := range other {
						o = append(o, fmt.Sprintf("%s on %s (tierbench %s)", id, h.Host, h.Version))
					}
					sort.Strings(o)
					err = fmt.Errorf("%w; not used, being of another version than this tierbench %s: %v", err, version, o)
				}
				return nil, err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if len(seen) >= n {
			break
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []Agent
	for _, id := range ids[:n] {
		a := Agent{Hello: seen[id]}
		if a.Offset, a.RTT, err = measureClock(ctx, nc, id); err != nil {
			return nil, fmt.Errorf("agent %s on %s: clock: %w", id, a.Host, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func names(seen map[string]Hello) string {
	if len(seen) == 0 {
		return " (start them with tierbench agent --broker URL, on the same broker)"
	}
	var s []string
	for id, h := range seen {
		s = append(s, id+" on "+h.Host)
	}
	sort.Strings(s)
	return fmt.Sprintf(": %v", s)
}

// measureClock takes the agent's clock several times and keeps the
// reading with the shortest round trip: its offset is then known within
// half that round trip (Cristian's algorithm).
func measureClock(ctx context.Context, nc *nats.Conn, id string) (offset, rtt time.Duration, err error) {
	rtt = time.Duration(1<<63 - 1)
	for range 7 {
		t0 := time.Now()
		m, err := request(ctx, nc, clockSubject(id), nil, 2*time.Second)
		t1 := time.Now()
		if err != nil {
			return 0, 0, err
		}
		var c clockReply
		if err := json.Unmarshal(m.Data, &c); err != nil {
			return 0, 0, err
		}
		if d := t1.Sub(t0); d < rtt {
			rtt = d
			mid := t0.Add(d / 2)
			offset = time.Unix(0, c.UnixNano).Sub(mid)
		}
	}
	return offset, rtt, nil
}

func request(ctx context.Context, nc *nats.Conn, subject string, data []byte, timeout time.Duration) (*nats.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return nc.RequestWithContext(ctx, subject, data)
}

// Assignment is an agent's share of a drive: part Part of len(agents).
type Assignment struct {
	Agent
	Part int
}

// Report is how one agent's part of a drive ended.
type Report struct {
	Assignment
	// Result is the agent's result file's content; nil when it sent none.
	Result []byte
	// Error is the agent's own failure; Lost that it fell silent.
	Error string
	Lost  bool
	// LastHeard is when its last message came, in the coordinator's clock;
	// LostAt when it was counted lost.
	LastHeard, LostAt time.Time
	// Last is its last report with counts (nil before any): should its
	// result be missing, its commits up to then are known. Peak is its
	// highest rate per operation (successes and commits in doubt per
	// second) between two reports, which bounds those after.
	Last *Progress
	Peak []float64
}

// LastAt is when the counts of r.Last were taken, in the coordinator's
// clock; the drive's start when it had none.
func (r *Report) LastAt(startAt time.Time) time.Time {
	if r.Last == nil {
		return startAt
	}
	return time.Unix(0, r.Last.At).Add(-r.Offset)
}

// track keeps p as r's last report, and the rates since the previous one
// (since the start, at startAt in the agent's clock, for the first).
func (r *Report) track(p Progress, startAt int64) {
	if p.At == 0 || len(p.Succeeded) != len(p.InDoubt) {
		return
	}
	prevAt, prev := startAt, Progress{}
	if r.Last != nil {
		prevAt, prev = r.Last.At, *r.Last
	}
	// An interval shorter than a report's (the last one, sent at the
	// end) would magnify a few operations into a rate.
	dt := max(time.Duration(p.At-prevAt), ProgressInterval/2).Seconds()
	if r.Peak == nil {
		r.Peak = make([]float64, len(p.Succeeded))
	}
	for i := range min(len(r.Peak), len(p.Succeeded)) {
		n := p.Succeeded[i] + p.InDoubt[i]
		if i < len(prev.Succeeded) && i < len(prev.InDoubt) {
			n -= prev.Succeeded[i] + prev.InDoubt[i]
		}
		r.Peak[i] = max(r.Peak[i], float64(n)/dt)
	}
	last := p
	last.Seconds = nil
	r.Last = &last
}

// Drive runs task on every agent, each a part of the terminals, starting all at startAt (the
// coordinator's clock), and waits for each agent's result or loss.
// progress, when set, is called with the agents' summed counts as they
// report. Cancelling ctx asks the agents to stop; their results are still
// awaited.
func Drive(ctx context.Context, nc *nats.Conn, task Task, agents []Agent, startAt time.Time, progress func(ops, errors int64), live *Live) ([]Report, error) {
	c := &coordination{reports: make(map[string]*Report), latest: make(map[string]Progress), chunks: make(map[string]*assembly), progress: progress, live: live, startAt: startAt}
	as := make([]Assignment, len(agents))
	for i, a := range agents {
		as[i] = Assignment{Agent: a, Part: i}
		c.reports[a.ID] = &Report{Assignment: as[i], LastHeard: time.Now()}
	}
	psub, err := nc.Subscribe(progressSubject(task.RunID), c.onProgress)
	if err != nil {
		return nil, err
	}
	defer psub.Unsubscribe()
	rsub, err := nc.Subscribe(resultSubject(task.RunID)+".*", c.onResult)
	if err != nil {
		return nil, err
	}
	defer rsub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	abort := func() { nc.Publish(abortSubject(task.RunID), nil); nc.Flush() }
	for _, a := range as {
		t := task
		t.Part, t.Parts = a.Part, len(as)
		t.StartAt = startAt.Add(a.Offset).UnixNano()
		b, _ := json.Marshal(t)
		m, err := request(ctx, nc, startSubject(a.ID), b, 10*time.Second)
		if err != nil {
			abort()
			return nil, fmt.Errorf("agent %s on %s: start: %w", a.ID, a.Host, err)
		}
		var r reply
		if err := json.Unmarshal(m.Data, &r); err != nil || r.Error != "" {
			abort()
			return nil, fmt.Errorf("agent %s on %s refused the drive: %s", a.ID, a.Host, r.Error)
		}
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	aborted := false
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			if !aborted {
				abort()
				aborted = true
			}
			<-tick.C
		}
		if c.settled(time.Now()) {
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Report, 0, len(as))
	for _, a := range as {
		r := *c.reports[a.ID]
		r.Peak = slices.Clone(r.Peak) // a late report may still update the coordinator's
		out = append(out, r)
	}
	return out, nil
}

type coordination struct {
	mu       sync.Mutex
	reports  map[string]*Report
	latest   map[string]Progress
	chunks   map[string]*assembly
	done     int
	progress func(ops, errors int64)
	live     *Live
	startAt  time.Time // the common start, in the coordinator's clock
}

func (c *coordination) onProgress(m *nats.Msg) {
	var p Progress
	if json.Unmarshal(m.Data, &p) != nil {
		return
	}
	c.mu.Lock()
	r, ok := c.reports[p.Agent]
	if !ok || r.Lost {
		c.mu.Unlock()
		return
	}
	r.LastHeard = time.Now()
	r.track(p, c.startAt.Add(r.Offset).UnixNano())
	c.latest[p.Agent] = Progress{Ops: p.Ops, Errors: p.Errors}
	if c.live != nil {
		c.live.add(p.Seconds)
	}
	var ops, errs int64
	for _, x := range c.latest {
		ops += x.Ops
		errs += x.Errors
	}
	c.mu.Unlock()
	if c.progress != nil {
		c.progress(ops, errs)
	}
}

func (c *coordination) onResult(m *nats.Msg) {
	agent := m.Subject[len(m.Subject)-len(lastToken(m.Subject)):]
	i, err1 := strconv.Atoi(m.Header.Get(headerChunk))
	n, err2 := strconv.Atoi(m.Header.Get(headerChunks))
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.reports[agent]
	if !ok || r.Lost || r.Result != nil || r.Error != "" {
		return
	}
	r.LastHeard = time.Now()
	a := c.chunks[agent]
	if a == nil {
		a = &assembly{}
		c.chunks[agent] = a
	}
	done, err := a.add(i, n, m.Data)
	if err = errors.Join(err1, err2, err); err != nil {
		r.Error = "its result arrived damaged: " + err.Error()
		c.done++
		return
	}
	if !done {
		return
	}
	var out Outcome
	if err := json.Unmarshal(a.bytes(), &out); err != nil {
		r.Error = "its result does not decode: " + err.Error()
	} else {
		r.Result, r.Error = out.Result, out.Error
		if r.Result == nil && r.Error == "" {
			r.Error = "it sent no result"
		}
	}
	delete(c.chunks, agent)
	c.done++
}

func lastToken(subject string) string {
	for i := len(subject) - 1; i >= 0; i-- {
		if subject[i] == '.' {
			return subject[i+1:]
		}
	}
	return subject
}

// settled marks the silent agents lost and reports whether every agent
// has sent its result or is lost.
func (c *coordination) settled(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.reports {
		if r.Lost || r.Result != nil || r.Error != "" {
			continue
		}
		if now.Sub(r.LastHeard) > LostAfter {
			r.Lost, r.LostAt = true, now
			c.done++
		}
	}
	return c.done == len(c.reports)
}

// Live is what the agents reported so far, merged: completed and failed
// operations, and the completed ones' latencies, per operation (ramps
// included). It keeps no per-second history: the result's final merge has
// that, exactly.
type Live struct {
	mu          sync.Mutex
	ops, errors []int64
	latency     []*metrics.Histogram
}

func (l *Live) add(seconds []metrics.Second) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range seconds {
		if l.ops == nil {
			n := len(s.PerOp)
			l.ops, l.errors, l.latency = make([]int64, n), make([]int64, n), make([]*metrics.Histogram, n)
		}
		if len(s.PerOp) != len(l.ops) {
			continue // not this drive's operations
		}
		for i, o := range s.PerOp {
			l.ops[i] += o.Ops
			l.errors[i] += o.Errors
			if o.Latency == "" {
				continue
			}
			h, err := metrics.DecodeHistogram(o.Latency)
			if err != nil {
				continue
			}
			if l.latency[i] == nil {
				l.latency[i] = h
			} else {
				l.latency[i].Merge(h)
			}
		}
	}
}

// LiveOp is one operation as the agents reported it so far.
type LiveOp struct {
	Name              string
	Completed, Failed int64
	// Latency of the completed operations (1 significant digit, as the
	// seconds carry it); nil before any.
	Latency *metrics.Histogram
}

// Ops are the operations so far, named in the workload's order.
func (l *Live) Ops(names []string) []LiveOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LiveOp, 0, len(l.ops))
	for i := range min(len(names), len(l.ops)) {
		op := LiveOp{Name: names[i], Completed: l.ops[i], Failed: l.errors[i]}
		if h := l.latency[i]; h != nil {
			op.Latency = metrics.NewCoarseHistogram()
			op.Latency.Merge(h)
		}
		out = append(out, op)
	}
	return out
}
