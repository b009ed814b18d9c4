package metrics

import "fmt"

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
	// Failures are the errors and commits in doubt by class, with a
	// sample message each; nil when there were none.
	Failures Failures
}

// Count of completed transactions (successes and business exceptions).
func (o OpStats) Count() int64 { return o.Successes + o.Business }

// Failed is the operations that ended in an error or in doubt.
func (o OpStats) Failed() int64 { return o.Errors + o.InDoubt }

// Second is one point of the time series: operations that finished in it,
// ramps included.
type Second struct {
	// T is the second's end since the start of the run: T=1 covers [0 s, 1 s).
	T int
	// Ops completed and Errors (failures) of all operations; Quantiles of
	// the completed ones' latency.
	Ops, Errors int64
	Quantiles
	// PerOp is per operation, in the recorder's order.
	PerOp []SecondOp
}

// SecondOp is one operation's second.
type SecondOp struct {
	Ops, Errors int64
	// Latency of the completed operations, encoded (Histogram.Encode) at 1
	// significant digit; empty when none completed.
	Latency string
}

// Snapshot is the merged content of a recorder.
type Snapshot struct {
	Ops    []OpStats
	Series []Second
	// Succeeded counts successes by operation over the whole run, ramps
	// included; InDoubt the commits of unknown outcome the same way.
	Succeeded, InDoubt []int64
}

// NewOpStats is an operation with nothing recorded, its histograms
// allocated.
func NewOpStats(name string) OpStats {
	return OpStats{Name: name, Latency: NewHistogram(), Queue: NewHistogram(), Service: NewHistogram(), Backoff: NewHistogram(), ErrorLatency: NewHistogram()}
}

// Total merges all operations into one.
func (s Snapshot) Total() OpStats {
	t := NewOpStats("total")
	for _, o := range s.Ops {
		t.add(o)
	}
	return t
}

// add o's counts and samples to x.
func (x *OpStats) add(o OpStats) {
	x.Successes += o.Successes
	x.Business += o.Business
	x.Errors += o.Errors
	x.InDoubt += o.InDoubt
	x.Retries += o.Retries
	x.Completed += o.Completed
	x.Aborts.Add(o.Aborts)
	x.Failures.Merge(o.Failures)
	x.Latency.Merge(o.Latency)
	x.Queue.Merge(o.Queue)
	x.Service.Merge(o.Service)
	x.Backoff.Merge(o.Backoff)
	x.ErrorLatency.Merge(o.ErrorLatency)
}

// mergeInto adds a shard's steady-state record of an operation to dst.
// Called with the shard's lock held.
func (o *opRecord) mergeInto(dst *OpStats) {
	dst.Successes += o.successes
	dst.Business += o.business
	dst.Errors += o.errors
	dst.InDoubt += o.inDoubt
	dst.Retries += o.retries
	dst.Completed += o.completed
	dst.Aborts.Add(o.aborts)
	dst.Failures.Merge(o.failures)
	for _, x := range []struct{ dst, src *Histogram }{
		{dst.Latency, o.latency}, {dst.Queue, o.queue}, {dst.Service, o.service}, {dst.Backoff, o.backoff}, {dst.ErrorLatency, o.errorLatency},
	} {
		if x.src != nil {
			x.dst.Merge(x.src)
		}
	}
}

// ByOutcome is the steady state's count of outcome o.
func (o OpStats) ByOutcome(x Outcome) int64 {
	switch x {
	case Success:
		return o.Successes
	case Business:
		return o.Business
	case Error:
		return o.Errors
	}
	return o.InDoubt
}

// Snapshot merges the shards. Call it once recording has stopped.
func (r *Recorder) Snapshot() Snapshot {
	snap := Snapshot{Ops: make([]OpStats, len(r.ops)), Succeeded: make([]int64, len(r.ops)), InDoubt: make([]int64, len(r.ops))}
	for i, name := range r.ops {
		snap.Ops[i] = NewOpStats(name)
	}
	for _, sh := range r.shards {
		sh.mu.Lock()
		sh.flushSecond()
		sh.sec = -1
		for i := range sh.ops {
			src, dst := &sh.ops[i], &snap.Ops[i]
			snap.Succeeded[i] += src.everSucceeded
			snap.InDoubt[i] += src.everInDoubt
			src.mergeInto(dst)
		}
		sh.mu.Unlock()
	}
	for i := range snap.Ops {
		o := &snap.Ops[i]
		o.Backoff.recordZeros(o.Latency.Count() - o.Backoff.Count())
	}
	r.series.mu.Lock()
	defer r.series.mu.Unlock()
	for ; r.series.sealed < len(r.series.seconds); r.series.sealed++ {
		r.series.seconds[r.series.sealed].seal()
	}
	for i, x := range r.series.seconds {
		snap.Series = append(snap.Series, x.point(i+1))
	}
	return snap
}

// Sealed returns the seconds sealed so far from second from on (T from+1
// on), for a live view of a run: a shard that flushes one of them late
// changes it afterwards, which only the final Snapshot has.
func (r *Recorder) Sealed(from int) []Second {
	r.series.mu.Lock()
	defer r.series.mu.Unlock()
	var out []Second
	for i := from; i < r.series.sealed; i++ {
		out = append(out, r.series.seconds[i].point(i+1))
	}
	return out
}

func (x *second) point(t int) Second {
	p := Second{T: t, Quantiles: x.quantiles, PerOp: make([]SecondOp, len(x.ops))}
	for i := range x.ops {
		p.Ops += x.ops[i]
		p.Errors += x.errors[i]
		p.PerOp[i] = SecondOp{Ops: x.ops[i], Errors: x.errors[i]}
		if x.encoded != nil {
			p.PerOp[i].Latency = x.encoded[i]
		}
	}
	return p
}

// Merge adds o's samples to s exactly: a snapshot of the same operations
// whose seconds count from the same start (another agent's, another
// process's). Latencies merge bucket by bucket, so every percentile of the
// merge is the percentile of all samples.
func (s *Snapshot) Merge(o Snapshot) error {
	if len(s.Ops) != len(o.Ops) {
		return fmt.Errorf("merge: %d operations and %d", len(s.Ops), len(o.Ops))
	}
	for i := range s.Ops {
		d, x := &s.Ops[i], o.Ops[i]
		if d.Name != x.Name {
			return fmt.Errorf("merge: operation %d is %s here and %s there", i, d.Name, x.Name)
		}
		d.add(x)
	}
	for i := range s.Succeeded {
		s.Succeeded[i] += o.Succeeded[i]
		s.InDoubt[i] += o.InDoubt[i]
	}
	for len(s.Series) < len(o.Series) {
		t := len(s.Series) + 1
		s.Series = append(s.Series, Second{T: t, PerOp: make([]SecondOp, len(s.Ops))})
	}
	for i, x := range o.Series {
		merged, err := MergeSecond(s.Series[i], x)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		s.Series[i] = merged
	}
	return nil
}

// MergeSecond is the second of d and x's samples together: the same
// second of two recorders of the same operations.
func MergeSecond(d, x Second) (Second, error) {
	if len(x.PerOp) != len(d.PerOp) {
		return d, fmt.Errorf("second %d has %d operations, want %d", x.T, len(x.PerOp), len(d.PerOp))
	}
	per := make([]SecondOp, len(d.PerOp))
	for j := range d.PerOp {
		do, xo := d.PerOp[j], x.PerOp[j]
		per[j] = SecondOp{Ops: do.Ops + xo.Ops, Errors: do.Errors + xo.Errors, Latency: do.Latency}
		if xo.Latency != "" {
			merged, err := mergeEncoded(do.Latency, xo.Latency)
			if err != nil {
				return d, fmt.Errorf("second %d, operation %d: %w", x.T, j, err)
			}
			per[j].Latency = merged
		}
	}
	d.PerOp = per
	return Summed(d)
}

// Summed sets a second's totals and quantiles from its operations'.
func Summed(s Second) (Second, error) {
	s.Ops, s.Errors = 0, 0
	all := NewCoarseHistogram()
	for _, o := range s.PerOp {
		s.Ops += o.Ops
		s.Errors += o.Errors
		if o.Latency == "" {
			continue
		}
		h, err := DecodeHistogram(o.Latency)
		if err != nil {
			return s, err
		}
		all.Merge(h)
	}
	s.Quantiles = all.Quantiles()
	return s, nil
}

func mergeEncoded(a, b string) (string, error) {
	merged := NewCoarseHistogram()
	for _, e := range []string{a, b} {
		if e == "" {
			continue
		}
		h, err := DecodeHistogram(e)
		if err != nil {
			return "", err
		}
		merged.Merge(h)
	}
	return merged.Encode(), nil
}
