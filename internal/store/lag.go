package store

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// ReplicationLag is one standby's lag behind the primary over a run, as
// the primary's pg_stat_replication reported it at each sample: the time
// (replay_lag: from a commit's flush on the primary to its replay on the
// standby) and the bytes of WAL not yet replayed.
type ReplicationLag struct {
	// Standby is the standby's application_name.
	Standby     string    `json:"standby"`
	Samples     int       `json:"samples"`
	ReplayLagMs LagFigure `json:"replay_lag_ms"`
	Bytes       LagFigure `json:"bytes"`
}

// LagFigure is a lag's median, 99th percentile and largest sample.
type LagFigure struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// LagInterval is how often the run samples the standbys' lag.
const LagInterval = 100 * time.Millisecond

var replicationLag = Statement{Name: "replication-lag", Dialects: map[Dialect]string{
	// replay_lag is NULL once a standby has been caught up for a while:
	// no lag.
	Postgres: "SELECT application_name, COALESCE(EXTRACT(epoch FROM replay_lag) * 1000, 0)::float8, " +
		"COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::float8 FROM pg_stat_replication ORDER BY application_name",
}}

// lagSampler keeps each standby's samples between Start and stop.
type lagSampler struct {
	mu      sync.Mutex
	samples map[string]*lagSamples
	order   []string
	cancel  context.CancelFunc
	done    chan struct{}
}

type lagSamples struct{ ms, bytes []float64 }

// SampleReplication samples, every LagInterval until the returned stop is
// called, the lag of the primary's standbys; the result's replicas carry
// the figures (Stats). It does nothing on a database without replicas.
// The samples go over the shared session, uncounted.
func (db *DB) SampleReplication(ctx context.Context) (stop func()) {
	rs := db.replicas
	if rs == nil {
		return func() {}
	}
	s, err := db.Prepare(ctx, replicationLag)
	if err != nil {
		return func() {}
	}
	l := &rs.lag
	l.stop()
	l.mu.Lock()
	l.samples, l.order = map[string]*lagSamples{}, nil
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	l.mu.Unlock()
	go func() {
		defer close(l.done)
		t := time.NewTicker(LagInterval)
		defer t.Stop()
		for {
			l.sample(ctx, db.backend.Shared(), s)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return l.stop
}

func (l *lagSampler) sample(ctx context.Context, q Querier, s *Stmt) {
	rows, err := q.Query(ctx, s.p, nil)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var ms, bytes float64
		if rows.Scan(&name, &ms, &bytes) != nil {
			return
		}
		l.mu.Lock()
		ls := l.samples[name]
		if ls == nil {
			ls = &lagSamples{}
			l.samples[name] = ls
			l.order = append(l.order, name)
		}
		ls.ms = append(ls.ms, ms)
		ls.bytes = append(ls.bytes, bytes)
		l.mu.Unlock()
	}
}

// stop ends the sampling, if under way, and waits for it.
func (l *lagSampler) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (l *lagSampler) stats() []ReplicationLag {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ReplicationLag
	for _, name := range l.order {
		ls := l.samples[name]
		out = append(out, ReplicationLag{Standby: name, Samples: len(ls.ms), ReplayLagMs: figure(ls.ms), Bytes: figure(ls.bytes)})
	}
	return out
}

// figure is the percentiles of samples (nearest rank).
func figure(samples []float64) LagFigure {
	if len(samples) == 0 {
		return LagFigure{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return LagFigure{P50: at(0.5), P99: at(0.99), Max: s[len(s)-1]}
}
