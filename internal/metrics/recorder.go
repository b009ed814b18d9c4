package metrics

import (
	"sync"
	"sync/atomic"
	"time"
)

// Outcome of one operation, as the driver classified it.
type Outcome uint8

const (
	// Success: the operation did what was asked.
	Success Outcome = iota
	// Business: the workload refused it as its rules say (insufficient
	// credit, unknown account): a complete, valid transaction.
	Business
	// Error: anything else, including a retryable failure whose retries ran out.
	Error
	// InDoubt: the commit's outcome is unknown (the connection was lost
	// after COMMIT was sent): the transaction may or may not have
	// happened. Counted apart from errors and never as throughput; the
	// consistency checks reconcile it either way.
	InDoubt
)

// outcomes is how many there are.
const outcomes = 4

// String names the outcome as results and metrics label it.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Business:
		return "business"
	case Error:
		return "error"
	case InDoubt:
		return "in_doubt"
	}
	return "unknown"
}

// Failed reports whether the outcome is a failure the client saw (not a
// completed transaction).
func (o Outcome) Failed() bool { return o == Error || o == InDoubt }

// Sample is one finished operation.
type Sample struct {
	Op      int
	Outcome Outcome
	// Retries is how many times it was run again after a retryable failure.
	Retries int
	// At is when it finished, since the start of the run.
	At time.Duration
	// Latency is end-to-end: from the intended start of the first attempt
	// to the end of the last. Queue is the time spent waiting for a server
	// thread and Service the time holding one, both summed over attempts;
	// Backoff the pauses before retries. The three add up to Latency.
	Latency, Queue, Service, Backoff time.Duration
	// Split: record Queue and Service apart from Latency (when clients can
	// wait for server threads; otherwise they restate it).
	Split bool
	// Measured is false in ramp-up and ramp-down: such samples reach only
	// the time series.
	Measured bool
	// Finished is true when the operation ended within the steady state.
	// Throughput counts these completions, so a run that falls behind its
	// schedule shows it in its rate, not only in its latency.
	Finished bool
	// Aborts are the attempts the database or the container aborted, by
	// cause (retried ones and a final one).
	Aborts Aborts
}

// Aborts count aborted attempts by cause: the symptoms of lock contention
// the ECperf paper diagnoses.
type Aborts struct {
	Deadlock      int64 `json:"deadlock"`
	LockTimeout   int64 `json:"lock_timeout"`
	Serialization int64 `json:"serialization"`
	// Certification: conflicts with a write committed on another node of
	// a multi-master cluster (Galera).
	Certification int64 `json:"certification,omitempty"`
}

// Total of all causes.
func (a Aborts) Total() int64 {
	return a.Deadlock + a.LockTimeout + a.Serialization + a.Certification
}

// Add a's counts to x.
func (a *Aborts) Add(x Aborts) {
	a.Deadlock += x.Deadlock
	a.LockTimeout += x.LockTimeout
	a.Serialization += x.Serialization
	a.Certification += x.Certification
}

// Recorder collects samples from all terminals of a run.
type Recorder struct {
	ops    []string
	shards []*Shard
	series series
}

// NewRecorder for the named operations, with n shards (at least one).
func NewRecorder(ops []string, n int) *Recorder {
	if n < 1 {
		n = 1
	}
	r := &Recorder{ops: ops, series: series{ops: len(ops)}}
	for i := 0; i < n; i++ {
		r.shards = append(r.shards, newShard(len(ops), &r.series))
	}
	return r
}

// Shard i (modulo the number of shards); a terminal keeps its shard for the
// whole run.
func (r *Recorder) Shard(i int) *Shard { return r.shards[i%len(r.shards)] }

// Completed counts finished operations and errors so far, measured or not;
// cheap enough for a progress line.
func (r *Recorder) Completed() (ops, errors int64) {
	for _, s := range r.shards {
		ops += s.done.Load()
		errors += s.failed.Load()
	}
	return ops, errors
}

// Committed counts, by operation, the successes and the commits of
// unknown outcome so far in every phase, as Snapshot's Succeeded and
// InDoubt: what a driver agent reports, so that the checks can count a
// lost agent's commits up to its last report. It takes each shard's lock
// once; call it once a second, not per operation.
func (r *Recorder) Committed() (succeeded, inDoubt []int64) {
	succeeded, inDoubt = make([]int64, len(r.ops)), make([]int64, len(r.ops))
	for _, sh := range r.shards {
		sh.mu.Lock()
		for i := range sh.ops {
			succeeded[i] += sh.ops[i].everSucceeded
			inDoubt[i] += sh.ops[i].everInDoubt
		}
		sh.mu.Unlock()
	}
	return succeeded, inDoubt
}

// Shard is one lock's worth of the recorder.
type Shard struct {
	mu  sync.Mutex
	ops []opRecord
	// The second being accumulated for the time series, per operation;
	// a histogram is allocated for an operation on its first sample.
	sec       int
	secOps    []int64
	secErrors []int64
	secHist   []*Histogram
	series    *series

	done, failed atomic.Int64
	// busy are the flags of the shard's terminals (Track), read by Live.
	busy []*atomic.Bool
}

// Track has Live count busy as an operation in flight whenever it is set:
// each terminal sets its own flag while an operation of it is under way.
// A flag of its own (a store, no read-modify-write, on the terminal's own
// memory) costs the hot path far less than a counter shared by the shard's
// terminals.
func (s *Shard) Track(busy *atomic.Bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy = append(s.busy, busy)
}

type opRecord struct {
	// all counts outcomes in every phase, ramps included, for live
	// metrics: what the system did, not what the result measures.
	all [outcomes]int64
	// everSucceeded counts successes in every phase, for consistency
	// checks that compare the database with what the clients did.
	everSucceeded int64
	// everInDoubt counts commits of unknown outcome in every phase: the
	// checks must allow for each having happened or not.
	everInDoubt                                   int64
	successes, business, errors, inDoubt, retries int64
	// completed: successes and business outcomes that finished in the
	// steady state, whenever they were meant to start.
	completed int64
	aborts    Aborts
	// latency is allocated on the operation's first completion in the
	// steady state, so that a shard holds histograms only for what it saw.
	latency *Histogram
	// queue and service are allocated on the first sample that splits
	// them (clients can wait for server threads).
	queue, service *Histogram
	// backoff holds the non-zero pauses before retries, allocated on the
	// first; the snapshot adds the zeros of operations without retries,
	// so that the hot path records nothing for them.
	backoff      *Histogram
	errorLatency *Histogram // allocated on the first failure
	// failures are the steady state's failures by class (RecordFailure).
	failures Failures
}

func newShard(ops int, s *series) *Shard {
	sh := &Shard{ops: make([]opRecord, ops), series: s, sec: -1,
		secOps: make([]int64, ops), secErrors: make([]int64, ops), secHist: make([]*Histogram, ops)}
	return sh
}

// Record adds one sample.
func (s *Shard) Record(x Sample) {
	e2e := x.Latency
	s.mu.Lock()
	if sec := int(x.At / time.Second); sec != s.sec {
		s.flushSecond()
		s.sec = sec
	}
	if x.Outcome.Failed() {
		s.secErrors[x.Op]++
	} else {
		s.secOps[x.Op]++
		h := s.secHist[x.Op]
		if h == nil {
			h = NewCoarseHistogram()
			s.secHist[x.Op] = h
		}
		h.Record(e2e)
	}
	o := &s.ops[x.Op]
	if x.Outcome == Success {
		o.everSucceeded++
	}
	if x.Finished && !x.Outcome.Failed() {
		o.completed++
	}
	if x.Outcome == InDoubt {
		o.everInDoubt++
	}
	o.all[x.Outcome]++
	if x.Measured {
		o.retries += int64(x.Retries)
		o.aborts.Add(x.Aborts)
		switch x.Outcome {
		case Success:
			o.successes++
		case Business:
			o.business++
		case Error:
			o.errors++
		case InDoubt:
			o.inDoubt++
		}
		if x.Outcome.Failed() {
			if o.errorLatency == nil {
				o.errorLatency = newTailHistogram()
			}
			o.errorLatency.Record(e2e)
		} else {
			if o.latency == nil {
				o.latency = NewHistogram()
			}
			o.latency.Record(e2e)
			if x.Backoff > 0 {
				if o.backoff == nil {
					o.backoff = newTailHistogram()
				}
				o.backoff.Record(x.Backoff)
			}
			if x.Split {
				if o.queue == nil {
					o.queue, o.service = NewHistogram(), NewHistogram()
				}
				o.queue.Record(x.Queue)
				o.service.Record(x.Service)
			}
		}
	}
	s.mu.Unlock()
	s.done.Add(1)
	if x.Outcome.Failed() {
		s.failed.Add(1)
	}
}

// flushSecond hands the finished second to the shared series; called with
// s.mu held, once per shard per second at most.
func (s *Shard) flushSecond() {
	if s.sec < 0 {
		return
	}
	s.series.add(s.sec, s.secOps, s.secErrors, s.secHist)
	clear(s.secOps)
	clear(s.secErrors)
	for _, h := range s.secHist {
		if h != nil {
			h.reset()
		}
	}
}

// series is the per-second time series over the whole run, per operation.
// A second's histograms stay live while shards may still add to it; once
// the run is sealOpen seconds past it, they are encoded (a few hundred
// bytes instead of tens of kilobytes each), so an hour-long run keeps its
// every second in a few megabytes. A shard that flushes a sealed second
// late (its terminals were all thinking) is merged in exactly all the same.
type series struct {
	mu      sync.Mutex
	ops     int
	seconds []*second
	// sealed: seconds[:sealed] are encoded.
	sealed int
}

const sealOpen = 3

type second struct {
	ops, errors []int64
	live        []*Histogram
	encoded     []string
	// quantiles of all operations together, set when sealed.
	quantiles Quantiles
}

func (s *series) add(sec int, ops, errors []int64, hists []*Histogram) {
	any := false
	for i := range ops {
		any = any || ops[i] > 0 || errors[i] > 0
	}
	if !any {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.seconds) <= sec {
		s.seconds = append(s.seconds, &second{ops: make([]int64, s.ops), errors: make([]int64, s.ops)})
	}
	x := s.seconds[sec]
	for i := range ops {
		x.ops[i] += ops[i]
		x.errors[i] += errors[i]
		h := hists[i]
		if h == nil || h.Count() == 0 {
			continue
		}
		if sec < s.sealed {
			x.mergeSealed(i, h)
			continue
		}
		if x.live == nil {
			x.live = make([]*Histogram, s.ops)
		}
		if x.live[i] == nil {
			x.live[i] = NewCoarseHistogram()
		}
		x.live[i].Merge(h)
	}
	for s.sealed < sec-sealOpen {
		s.seconds[s.sealed].seal()
		s.sealed++
	}
}

// seal encodes the second's live histograms and lets them go.
func (x *second) seal() {
	if x.live == nil {
		return
	}
	all := NewCoarseHistogram()
	x.encoded = make([]string, len(x.live))
	for i, h := range x.live {
		if h != nil {
			x.encoded[i] = h.Encode()
			all.Merge(h)
		}
	}
	x.quantiles = all.Quantiles()
	x.live = nil
}

// mergeSealed adds h to operation i of a sealed second.
func (x *second) mergeSealed(i int, h *Histogram) {
	if x.encoded == nil {
		x.encoded = make([]string, len(x.ops))
	}
	merged := NewCoarseHistogram()
	if x.encoded[i] != "" {
		old, err := DecodeHistogram(x.encoded[i])
		if err != nil {
			panic("metrics: a sealed second does not decode: " + err.Error()) // we encoded it
		}
		merged.Merge(old)
	}
	merged.Merge(h)
	x.encoded[i] = merged.Encode()
	x.quantiles = quantilesOf(x.encoded)
}

// quantilesOf the union of encoded histograms.
func quantilesOf(encoded []string) Quantiles {
	all := NewCoarseHistogram()
	for _, e := range encoded {
		if e == "" {
			continue
		}
		h, err := DecodeHistogram(e)
		if err != nil {
			panic("metrics: an encoded second does not decode: " + err.Error()) // we encoded it
		}
		all.Merge(h)
	}
	return all.Quantiles()
}
