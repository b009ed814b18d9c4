package appservers

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/workload"
)

// Spread is the terminals of a run spread over several servers, one Run
// per server (the workload's clients against that server): terminal id
// calls server id mod N for its whole life (a RUBiS session stays on one
// server), unless that server goes down (Down): the terminal's next
// operation then starts it afresh, a new client of the same terminal and
// random stream, on the next live server. What the old client held (a
// RUBiS session, a Stock-Online Buy awaiting its Sell) is lost with the
// server, as it would be in a cluster.
type Spread struct {
	runs []workload.Run
	down []atomic.Bool

	mu      sync.Mutex
	clients []*client
}

// NewSpread spreads terminals over runs, one per server, all of one
// workload. The Run it returns has the members' optional interfaces
// (TieredRun, WalkRun) when they have them.
func NewSpread(runs []workload.Run) workload.Run {
	s := &Spread{runs: runs, down: make([]atomic.Bool, len(runs))}
	_, tiered := runs[0].(workload.TieredRun)
	_, walks := runs[0].(workload.WalkRun)
	switch {
	case tiered && walks:
		return struct {
			*Spread
			tieredSpread
			walkSpread
		}{s, tieredSpread{s}, walkSpread{s}}
	case tiered:
		return struct {
			*Spread
			tieredSpread
		}{s, tieredSpread{s}}
	case walks:
		return struct {
			*Spread
			walkSpread
		}{s, walkSpread{s}}
	}
	return s
}

// Of is the Spread behind a Run NewSpread returned; nil for another.
func Of(run workload.Run) *Spread {
	switch r := run.(type) {
	case *Spread:
		return r
	case interface{ spread() *Spread }:
		return r.spread()
	}
	return nil
}

func (s *Spread) spread() *Spread { return s }

// Down marks server i gone: its terminals move to the live servers.
func (s *Spread) Down(i int) { s.down[i].Store(true) }

// Served are the operations each server completed (successes and
// business exceptions: the server answered), by server.
func (s *Spread) Served() []int64 {
	out := make([]int64, len(s.runs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		for i := range c.served {
			out[i] += c.served[i].Load()
		}
	}
	return out
}

// Moved is how many terminals left a server that went down.
func (s *Spread) Moved() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, c := range s.clients {
		n += c.moved.Load()
	}
	return n
}

func (s *Spread) NewClient(group, id int, rng *rand.Rand) workload.Client {
	server := id % len(s.runs)
	c := &client{s: s, group: group, id: id, rng: rng, server: server, served: make([]atomic.Int64, len(s.runs))}
	c.inner = s.runs[server].NewClient(group, id, rng)
	if s.down[server].Load() {
		c.move()
	}
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	if _, ok := c.inner.(workload.Chooser); ok {
		return chooser{c}
	}
	return c
}

// Check has nothing to check: the servers' database is checked by the
// runner, as for one server in another process.
func (s *Spread) Check(context.Context, workload.Outcomes) ([]workload.Check, error) { return nil, nil }

// Stop stops every member that has something to stop.
func (s *Spread) Stop(ctx context.Context) error {
	var errs []error
	for _, r := range s.runs {
		if st, ok := r.(workload.Stopper); ok {
			errs = append(errs, st.Stop(ctx))
		}
	}
	return errors.Join(errs...)
}

// FirstFailures are the members' first failures (a drive ended by
// failures names them).
func (s *Spread) FirstFailures() []string {
	var out []string
	for _, r := range s.runs {
		if ff, ok := r.(interface{ FirstFailures() []string }); ok {
			out = append(out, ff.FirstFailures()...)
		}
	}
	return out
}

// client is one terminal, bound to a server.
type client struct {
	s         *Spread
	group, id int
	rng       *rand.Rand
	server    int
	inner     workload.Client
	// served counts by server what this terminal completed: its own
	// counters, so that terminals never contend for one.
	served []atomic.Int64
	moved  atomic.Int64
}

// move binds the terminal to the next live server after its own; with
// none live it stays (its operations fail, as the server's would).
func (c *client) move() {
	n := len(c.s.runs)
	for k := 1; k < n; k++ {
		i := (c.server + k) % n
		if !c.s.down[i].Load() {
			c.server = i
			c.inner = c.s.runs[i].NewClient(c.group, c.id, c.rng)
			c.moved.Add(1)
			return
		}
	}
}

func (c *client) Do(ctx context.Context, step workload.Step) error {
	if _, chooses := c.inner.(workload.Chooser); !chooses && c.s.down[c.server].Load() {
		c.move()
	}
	err := c.inner.Do(ctx, step)
	if err == nil || workload.IsBusiness(err) {
		c.served[c.server].Add(1)
	}
	return err
}

// chooser is a terminal whose client chooses its operations (RUBiS's
// browsers): it moves before it chooses, never between a choice and the
// operation, which only the client that chose can run.
type chooser struct{ *client }

func (c chooser) Next() (int, time.Duration) {
	if c.s.down[c.server].Load() {
		c.move()
	}
	return c.inner.(workload.Chooser).Next()
}

type tieredSpread struct{ s *Spread }

// Tiers are the members' calls, summed by kind.
func (t tieredSpread) Tiers() workload.Tiers {
	var all []workload.Tiers
	for _, r := range t.s.runs {
		all = append(all, r.(workload.TieredRun).Tiers())
	}
	return MergeTiers(all...)
}

// MergeTiers sums the calls of several servers' Tiers by kind of page or
// operation; style and protocol are the first's (every server's).
func MergeTiers(all ...workload.Tiers) workload.Tiers {
	if len(all) == 0 {
		return workload.Tiers{}
	}
	out := all[0]
	out.Calls = slices.Clone(out.Calls)
	for _, t := range all[1:] {
		for _, c := range t.Calls {
			i := slices.IndexFunc(out.Calls, func(o workload.RemoteCalls) bool { return o.Name == c.Name })
			if i < 0 {
				out.Calls = append(out.Calls, c)
				continue
			}
			out.Calls[i].Pages += c.Pages
			out.Calls[i].Counts = out.Calls[i].Counts.Add(c.Counts)
		}
	}
	return out
}

type walkSpread struct{ s *Spread }

// Walk is the members' walks: the table's, with every count summed.
func (w walkSpread) Walk() workload.WalkReport {
	var out workload.WalkReport
	for i, r := range w.s.runs {
		x := r.(workload.WalkRun).Walk()
		if i == 0 {
			out = x
			out.Causes = slices.Clone(x.Causes)
			continue
		}
		out.SorryBacks += x.SorryBacks
		out.NoIDBacks += x.NoIDBacks
		out.Resets += x.Resets
		out.Retries += x.Retries
		out.Pages += x.Pages
		out.Images += x.Images
		out.ImageErrors += x.ImageErrors
		out.ImageBytes += x.ImageBytes
		out.ImageTime += x.ImageTime
		out.ImageMax = max(out.ImageMax, x.ImageMax)
		for _, c := range x.Causes {
			if !slices.Contains(out.Causes, c) {
				out.Causes = append(out.Causes, c)
			}
		}
	}
	return out
}
