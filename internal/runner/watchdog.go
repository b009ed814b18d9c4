package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// OutageGrace is how long the database may stay unreachable, once
// connections to it were lost, before the run is ended as failed. A
// restart (a few seconds) fits in it: the run goes on, the operations of
// the outage count as errors or in doubt, and the checks reconcile them.
const OutageGrace = 10 * time.Second

// probeEvery is how often the watchdog looks at the database's counters,
// and, while connections are being lost, probes it.
const probeEvery = 250 * time.Millisecond

// outage is a database lost for longer than the grace.
type outage struct {
	began time.Time
	err   error
	// failedBefore is the failed operations when it began.
	failedBefore int64
}

func (o *outage) effect(s *state) string {
	_, failed := s.rec.Completed()
	ended := s.rep.Started.Add(s.rep.Elapsed)
	return fmt.Sprintf("from the loss at %s (%.1f s into the run) the clients' operations failed: %d of them, counted as errors or in doubt; the run was ended %.1f s later and its rates cover the steady state up to then",
		o.began.UTC().Format(time.TimeOnly), o.began.Sub(s.rep.Started).Seconds(), failed-o.failedBefore, ended.Sub(o.began).Seconds())
}

// watchdog watches a run's database for an outage.
type watchdog struct {
	quit chan struct{}
	done chan *outage
}

// watchDatabase starts a watchdog: when connections are lost and the
// database does not answer a probe for grace, it calls stop with the cause
// and reports the outage.
func watchDatabase(ctx context.Context, db *store.DB, grace time.Duration, failed func() int64, stop context.CancelCauseFunc) *watchdog {
	w := &watchdog{quit: make(chan struct{}), done: make(chan *outage, 1)}
	go func() {
		w.done <- watch(ctx, db, grace, failed, stop, w.quit)
	}()
	return w
}

// stop ends the watch and returns the outage that ended the run, if any.
func (w *watchdog) stop() *outage {
	close(w.quit)
	return <-w.done
}

func watch(ctx context.Context, db *store.DB, grace time.Duration, failed func() int64, stop context.CancelCauseFunc, quit <-chan struct{}) *outage {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	lost := lostCount(db)
	var down *outage // since when the database has not answered
	for {
		select {
		case <-quit:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := lostCount(db)
		if now == lost && down == nil {
			continue
		}
		lost = now
		err := probe(ctx, db)
		switch {
		case err == nil:
			down = nil
		case down == nil:
			down = &outage{began: time.Now(), failedBefore: failed(), err: err}
		case time.Since(down.began) >= grace:
			down.err = fmt.Errorf("the database was lost at %s and did not answer for %v: %w", down.began.UTC().Format(time.TimeOnly), grace, err)
			stop(down.err)
			return down
		}
	}
}

// lostCount is how many connections were lost or commits left in doubt.
func lostCount(db *store.DB) int64 {
	s := db.Stats()
	return s.ConnectionsLost + s.InDoubt
}

// probe asks the database for one row, within a second.
func probe(ctx context.Context, db *store.DB) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return db.Ping(ctx)
}
