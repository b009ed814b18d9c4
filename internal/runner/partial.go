package runner

import (
	"cmp"
	"time"

	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// reached is what a result built while the run goes on may read (partial):
// the run sets it, under state.mu, as it reaches each phase.
type reached struct {
	phase  string
	loaded *workload.LoadReport
	groups []workload.Group
	rec    *metrics.Recorder
	before store.Stats
	dcfg   driver.Config
	// began is when the terminals started; zero before.
	began time.Time
	// rep and snap, once the driver has returned.
	rep  driver.Report
	snap *metrics.Snapshot
	// entities are the container's counters, live.
	entities func() []workload.EntityStats
	// remote: the tiers' processes run the statements, counted there.
	remote bool
}

// reach records the run's progress for partial.
func (s *state) reach(update func(*reached)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	update(&s.progress)
}

// begin hands the runner's caller the means to build a result at any
// moment from now on (Runner.Abortable).
func (s *state) begin(phase string) *state {
	s.progress.phase = phase
	if s.r.Abortable != nil {
		s.r.Abortable(s.partial)
	}
	return s
}

// partial is the result of the run as far as it got: what the clients
// measured until now (operations still under way are not in it), marked
// interrupted in the phase it was in, its checks not run. It is safe to
// call while the run goes on.
func (s *state) partial() *result.Result {
	s.mu.Lock()
	p := s.progress
	s.mu.Unlock()
	var snap metrics.Snapshot
	started, elapsed, window := s.began, time.Duration(0), time.Duration(0)
	switch {
	case p.snap != nil:
		snap, started, elapsed, window = *p.snap, p.rep.Started, p.rep.Elapsed, p.rep.Window
	case !p.began.IsZero():
		snap, started = p.rec.Snapshot(), p.began
		elapsed = time.Since(started)
		window = p.dcfg.Window(elapsed)
	}
	var db store.Stats
	if s.db != nil && !p.remote {
		db = s.db.Stats().Sub(p.before)
	}
	var ents []workload.EntityStats
	if p.entities != nil {
		ents = p.entities()
	}
	cfg, env := s.cfg, environment(cmp.Or(s.db, s.checked), s.target)
	s.dbCut.environment(&env)
	if s.placed != nil {
		cfg.DB = store.DSN{}
		s.placed.environment(&env)
	}
	res := result.Build(result.Inputs{
		Version:       s.r.Version,
		Config:        cfg,
		Info:          s.info,
		Environment:   env,
		Load:          p.loaded,
		Started:       started,
		Elapsed:       elapsed,
		Window:        window,
		Interrupted:   true,
		InterruptedIn: p.phase,
		Snapshot:      snap,
		Queued:        s.serverThreads() > 0 && s.serverThreads() < driver.Clients(p.groups),
		Database:      db,
		Entities:      ents,
		Groups:        p.groups,
	})
	res.Summary.Aborted = true
	res.Summary.Unchecked = "a second interrupt stopped the run during " + p.phase + ", before its consistency checks finished"
	return res
}
