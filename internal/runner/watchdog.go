package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// OutageGrace is how long the database (or a driven site) may stay
// unreachable, once connections to it were lost, before the run is ended
// as failed. A restart (a few seconds) fits in it: the run goes on, the
// operations of the outage count as errors or in doubt, and the checks
// reconcile them.
const OutageGrace = 10 * time.Second

// probeEvery is how often the watchdog looks at the database's counters,
// and, while connections are being lost, probes it.
const probeEvery = 250 * time.Millisecond

// outage is a database lost for longer than the grace, or a driven tier
// that answers but whose every operation failed for as long.
type outage struct {
	began time.Time
	err   error
	// failedBefore is the failed operations when it began.
	failedBefore int64
	// answering: the tier answered its probes; every operation failed
	// all the same.
	answering bool
}

func (o *outage) effect(s *state) string {
	_, failed := s.rec.Completed()
	ended := s.rep.Started.Add(s.rep.Elapsed)
	from := "from the loss at"
	if o.answering {
		from = "from the last success, at"
	}
	return fmt.Sprintf("%s %s (%.1f s into the run) the clients' operations failed: %d of them, counted as errors or in doubt; the run was ended %.1f s later and its rates cover the steady state up to then",
		from, o.began.UTC().Format(time.TimeOnly), o.began.Sub(s.rep.Started).Seconds(), failed-o.failedBefore, ended.Sub(o.began).Seconds())
}

// watchdog watches a run's tier (its database, or the site a drive-only
// run drives) for an outage.
type watchdog struct {
	quit chan struct{}
	done chan *outage
}

// tier is what a watchdog watches: lost counts the failures that suggest
// it is gone, probe asks it whether it answers.
type tier struct {
	name  string // "the database", "the site at URL"
	lost  func() int64
	probe func(context.Context) error
	// succeeded, when set, counts the operations that succeeded: a tier
	// that answers its probes while every operation fails for the grace
	// (a drive's wrong --target: the site answers 404 to every page)
	// ends the run as a lost one does. samples, when set, are the first
	// failures' messages, for the error.
	succeeded func() int64
	samples   func() []string
}

// databaseTier watches db's lost connections and commits in doubt.
func databaseTier(db *store.DB) tier {
	return tier{
		name: "the database",
		lost: func() int64 { s := db.Stats(); return s.ConnectionsLost + s.InDoubt },
		probe: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return db.Ping(ctx)
		},
	}
}

// watchTier starts a watchdog: when failures appear and the tier does not
// answer a probe for grace, it calls stop with the cause and reports the
// outage.
func watchTier(ctx context.Context, t tier, grace time.Duration, failed func() int64, stop context.CancelCauseFunc) *watchdog {
	w := &watchdog{quit: make(chan struct{}), done: make(chan *outage, 1)}
	go func() {
		w.done <- watch(ctx, t, grace, failed, stop, w.quit)
	}()
	return w
}

// stop ends the watch and returns the outage that ended the run, if any.
func (w *watchdog) stop() *outage {
	close(w.quit)
	return <-w.done
}

func watch(ctx context.Context, t tier, grace time.Duration, failed func() int64, stop context.CancelCauseFunc, quit <-chan struct{}) *outage {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	lost := t.lost()
	var down *outage // since when the tier has not answered
	// Since when no operation has succeeded, and the failures then.
	var ok int64
	okAt, failedAtOK := time.Now(), failed()
	if t.succeeded != nil {
		ok = t.succeeded()
	}
	for {
		select {
		case <-quit:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if t.succeeded != nil {
			if n := t.succeeded(); n != ok {
				ok, okAt, failedAtOK = n, time.Now(), failed()
			}
		}
		now := t.lost()
		if now == lost && down == nil {
			continue
		}
		lost = now
		err := t.probe(ctx)
		switch {
		case err == nil:
			if down != nil {
				// Back within the grace (a restart): its operations get a
				// grace of their own to succeed again.
				okAt, failedAtOK = time.Now(), failed()
			}
			down = nil
			if t.succeeded != nil && time.Since(okAt) >= grace && failed() > failedAtOK {
				o := &outage{began: okAt, failedBefore: failedAtOK, answering: true}
				o.err = fmt.Errorf("every operation failed for %v while %s answered: %d failed since %s, none succeeded%s",
					grace, t.name, failed()-failedAtOK, okAt.UTC().Format(time.TimeOnly), firstFailures(t.samples))
				stop(o.err)
				return o
			}
		case down == nil:
			down = &outage{began: time.Now(), failedBefore: failed(), err: err}
		case time.Since(down.began) >= grace:
			down.err = fmt.Errorf("%s was lost at %s and did not answer for %v: %w", t.name, down.began.UTC().Format(time.TimeOnly), grace, err)
			stop(down.err)
			return down
		}
	}
}

// firstFailures is "; the first: MESSAGE; MESSAGE…" when samples has any.
func firstFailures(samples func() []string) string {
	if samples == nil {
		return ""
	}
	msgs := samples()
	if len(msgs) == 0 {
		return ""
	}
	return "; the first: " + strings.Join(msgs, "; ")
}
