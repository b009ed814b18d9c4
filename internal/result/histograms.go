package result

import (
	"fmt"

	"github.com/tierbench/tierbench/internal/metrics"
)

// Encoding names how the result's histograms are written.
const Encoding = "HdrHistogram V2 compressed, base64"

// Histograms are the full latency distributions behind the result's
// percentiles, in HdrHistogram's standard encoding so that other
// HdrHistogram tools read them, and so that results of agents or
// repetitions merge exactly.
type Histograms struct {
	Encoding string `json:"encoding"`
	// Unit of the recorded values: "ns".
	Unit string `json:"unit"`
	// Operations hold the steady state, 3 significant digits, values from
	// 100 ns.
	Operations map[string]OpHistograms `json:"operations"`
	// RunSucceeded and RunInDoubt count successes and commits of unknown
	// outcome per operation (in operation_order) over the whole run, ramps
	// included: what the consistency checks of merged results allow for.
	RunSucceeded []int64 `json:"run_succeeded"`
	RunInDoubt   []int64 `json:"run_in_doubt"`
	// Seconds are the whole run, ramps included, one per second with any
	// operation finished in it, 1 significant digit. Ops are in the
	// result's operation_order.
	Seconds []SecondHistograms `json:"seconds"`
}

// OpHistograms are one operation's steady-state distributions; an empty
// string is an empty histogram.
type OpHistograms struct {
	// Latency is end-to-end, of completed operations.
	Latency string `json:"latency"`
	// Queue and Service split it where clients waited for server threads;
	// Backoff is the pauses before retries.
	Queue   string `json:"queue,omitempty"`
	Service string `json:"service,omitempty"`
	Backoff string `json:"backoff,omitempty"`
	// ErrorLatency is of the failed operations.
	ErrorLatency string `json:"error_latency,omitempty"`
}

// SecondHistograms is one second of the run.
type SecondHistograms struct {
	T   int                `json:"t_s"`
	Ops []SecondOperations `json:"ops"`
}

// SecondOperations is one operation's second: completed operations,
// failures, and the completed ones' latency.
type SecondOperations struct {
	Count   int64  `json:"count"`
	Errors  int64  `json:"errors,omitempty"`
	Latency string `json:"latency,omitempty"`
}

func encodeNonEmpty(h *metrics.Histogram) string {
	if h == nil || h.Count() == 0 {
		return ""
	}
	return h.Encode()
}

func buildHistograms(snap metrics.Snapshot) *Histograms {
	hs := &Histograms{Encoding: Encoding, Unit: metrics.Unit, Operations: make(map[string]OpHistograms, len(snap.Ops)), Seconds: []SecondHistograms{},
		RunSucceeded: snap.Succeeded, RunInDoubt: snap.InDoubt}
	for _, o := range snap.Ops {
		hs.Operations[o.Name] = OpHistograms{
			Latency:      o.Latency.Encode(),
			Queue:        encodeNonEmpty(o.Queue),
			Service:      encodeNonEmpty(o.Service),
			Backoff:      encodeNonEmpty(o.Backoff),
			ErrorLatency: encodeNonEmpty(o.ErrorLatency),
		}
	}
	for _, s := range snap.Series {
		if s.Ops == 0 && s.Errors == 0 {
			continue
		}
		sec := SecondHistograms{T: s.T, Ops: make([]SecondOperations, len(s.PerOp))}
		for i, o := range s.PerOp {
			sec.Ops[i] = SecondOperations{Count: o.Ops, Errors: o.Errors, Latency: o.Latency}
		}
		hs.Seconds = append(hs.Seconds, sec)
	}
	return hs
}

// Snapshot rebuilds the measurements a result was built from: every count
// and histogram. It fails on a result written before results held
// histograms.
func (r *Result) Snapshot() (metrics.Snapshot, error) {
	if r.Histograms == nil {
		return metrics.Snapshot{}, fmt.Errorf("the result of %s started %s holds no histograms (tierbench %s wrote it before results had them)",
			r.Workload, r.StartedAt.Format("2006-01-02 15:04"), r.TierbenchVersion)
	}
	decode := func(op, kind, s string) (*metrics.Histogram, error) {
		if s == "" {
			return metrics.NewHistogram(), nil
		}
		h, err := metrics.DecodeHistogram(s)
		if err != nil {
			return nil, fmt.Errorf("operation %s, %s: %w", op, kind, err)
		}
		return h, nil
	}
	n := len(r.OperationOrder)
	snap := metrics.Snapshot{Succeeded: make([]int64, n), InDoubt: make([]int64, n)}
	copy(snap.Succeeded, r.Histograms.RunSucceeded)
	copy(snap.InDoubt, r.Histograms.RunInDoubt)
	for _, name := range r.OperationOrder {
		op, hs := r.Operations[name], r.Histograms.Operations[name]
		o := metrics.OpStats{Name: name, Errors: op.Errors, InDoubt: op.InDoubt, Business: op.BusinessExceptions,
			Successes: op.Count - op.BusinessExceptions, Retries: op.Retries, Completed: op.Completed}
		if op.Aborts != nil {
			o.Aborts = *op.Aborts
		}
		o.Failures.Merge(op.Failures)
		var err error
		for _, x := range []struct {
			dst  **metrics.Histogram
			kind string
			enc  string
		}{{&o.Latency, "latency", hs.Latency}, {&o.Queue, "queue", hs.Queue}, {&o.Service, "service", hs.Service},
			{&o.Backoff, "backoff", hs.Backoff}, {&o.ErrorLatency, "error latency", hs.ErrorLatency}} {
			if *x.dst, err = decode(name, x.kind, x.enc); err != nil {
				return metrics.Snapshot{}, err
			}
		}
		snap.Ops = append(snap.Ops, o)
	}
	for _, s := range r.Histograms.Seconds {
		if len(s.Ops) != len(snap.Ops) {
			return metrics.Snapshot{}, fmt.Errorf("second %d has %d operations, the result %d", s.T, len(s.Ops), len(snap.Ops))
		}
		for len(snap.Series) < s.T-1 {
			snap.Series = append(snap.Series, metrics.Second{T: len(snap.Series) + 1, PerOp: make([]metrics.SecondOp, len(snap.Ops))})
		}
		sec := metrics.Second{T: s.T, PerOp: make([]metrics.SecondOp, len(s.Ops))}
		for i, o := range s.Ops {
			sec.PerOp[i] = metrics.SecondOp{Ops: o.Count, Errors: o.Errors, Latency: o.Latency}
		}
		var err error
		if sec, err = metrics.Summed(sec); err != nil {
			return metrics.Snapshot{}, fmt.Errorf("second %d: %w", s.T, err)
		}
		snap.Series = append(snap.Series, sec)
	}
	return snap, nil
}
