package metrics

import "time"

// OpStats is everything measured for one operation in the steady state.
type OpStats struct {
	Name string
	// Successes and Business outcomes are both completed transactions;
	// Count is their sum. Errors and InDoubt (commits of unknown outcome)
	// are the failures, never counted as completed.
	Successes, Business, Errors, InDoubt, Retries int64
	// Completed counts successes and business outcomes that finished in the
	// steady state, the population of throughput; Count is by intended
	// start, the population of latency. They differ by the edges of the
	// window and by how far a run fell behind its schedule.
	Completed int64
	Aborts    Aborts
	// Latency is end-to-end (queue + service + backoff) of completed
	// transactions.
	Latency, Queue, Service, Backoff *Histogram
	// ErrorLatency covers failed operations (errors and in doubt), kept
	// apart so failures do not skew the latency of completed ones.
	ErrorLatency *Histogram
}

// Count of completed transactions (successes and business exceptions).
func (o OpStats) Count() int64 { return o.Successes + o.Business }

// Failed is the operations that ended in an error or in doubt.
func (o OpStats) Failed() int64 { return o.Errors + o.InDoubt }

// Second is one point of the time series.
type Second struct {
	// T is the second's end since the start of the run: T=1 covers [0 s, 1 s).
	T      int
	Ops    int64
	Errors int64
	P99    time.Duration
}

// Snapshot is the merged content of a recorder.
type Snapshot struct {
	Ops    []OpStats
	Series []Second
	// Succeeded counts successes by operation over the whole run, ramps
	// included; InDoubt the commits of unknown outcome the same way.
	Succeeded, InDoubt []int64
}

func newOpStats(name string) OpStats {
	return OpStats{Name: name, Latency: NewHistogram(), Queue: NewHistogram(), Service: NewHistogram(), Backoff: NewHistogram(), ErrorLatency: NewHistogram()}
}

// Total merges all operations into one.
func (s Snapshot) Total() OpStats {
	t := newOpStats("total")
	for _, o := range s.Ops {
		t.Successes += o.Successes
		t.Business += o.Business
		t.Errors += o.Errors
		t.InDoubt += o.InDoubt
		t.Retries += o.Retries
		t.Completed += o.Completed
		t.Aborts.Add(o.Aborts)
		t.Latency.Merge(o.Latency)
		t.Queue.Merge(o.Queue)
		t.Service.Merge(o.Service)
		t.Backoff.Merge(o.Backoff)
		t.ErrorLatency.Merge(o.ErrorLatency)
	}
	return t
}

// Snapshot merges the shards. Call it once recording has stopped.
func (r *Recorder) Snapshot() Snapshot {
	snap := Snapshot{Ops: make([]OpStats, len(r.ops)), Succeeded: make([]int64, len(r.ops)), InDoubt: make([]int64, len(r.ops))}
	for i, name := range r.ops {
		snap.Ops[i] = newOpStats(name)
	}
	for _, sh := range r.shards {
		sh.mu.Lock()
		sh.flushSecond()
		sh.sec = -1
		for i := range sh.ops {
			src, dst := &sh.ops[i], &snap.Ops[i]
			snap.Succeeded[i] += src.everSucceeded
			snap.InDoubt[i] += src.everInDoubt
			dst.Successes += src.successes
			dst.Business += src.business
			dst.Errors += src.errors
			dst.InDoubt += src.inDoubt
			dst.Retries += src.retries
			dst.Completed += src.completed
			dst.Aborts.Add(src.aborts)
			dst.Latency.Merge(src.latency)
			dst.Queue.Merge(src.queue)
			dst.Service.Merge(src.service)
			if src.backoff != nil {
				dst.Backoff.Merge(src.backoff)
			}
			if src.errorLatency != nil {
				dst.ErrorLatency.Merge(src.errorLatency)
			}
		}
		sh.mu.Unlock()
	}
	for i := range snap.Ops {
		o := &snap.Ops[i]
		o.Backoff.recordZeros(o.Latency.Count() - o.Backoff.Count())
	}
	r.series.mu.Lock()
	defer r.series.mu.Unlock()
	for i, x := range r.series.seconds {
		p := Second{T: i + 1, Ops: x.ops, Errors: x.errors}
		if x.hist != nil {
			p.P99 = x.hist.Quantile(0.99)
		}
		snap.Series = append(snap.Series, p)
	}
	return snap
}
