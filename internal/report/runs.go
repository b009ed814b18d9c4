package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
)

// Run is one result file.
type Run struct {
	// Path is where it was read from; Name its base name without .json,
	// which names it in tables, legends and CSV files.
	Path, Name string
	Result     *result.Result
}

// InputError is a problem with what the user asked to report (no such
// file, not a result, not a sweep directory), said in one line.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputError(format string, args ...any) error {
	return &InputError{msg: fmt.Sprintf(format, args...)}
}

// ReadRun reads one result file, saying in one line what is wrong with a
// file that is not one.
func ReadRun(path string) (*Run, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, inputError("%s: no such file", path)
	case err != nil:
		return nil, inputError("%s: %v", path, err)
	case info.IsDir():
		return nil, inputError("%s is a directory: give result files, or one sweep directory alone", path)
	}
	r, err := result.ReadFile(path)
	if err != nil {
		return nil, inputError("%v", err)
	}
	return &Run{Path: path, Name: strings.TrimSuffix(filepath.Base(path), ".json"), Result: r}, nil
}

// steadyWindow is the run's steady state in whole seconds of its time
// series: the seconds T (covering [T-1, T)) with from < T ≤ to. A run of
// iterations has no planned end: its steady state runs to its last whole
// second.
func steadyWindow(r *result.Result) (from, to int) {
	c := r.Config
	from = int(math.Ceil(time.Duration(c.RampUp).Seconds()))
	if c.Duration > 0 {
		to = int(math.Floor((time.Duration(c.Duration) - time.Duration(c.RampDown)).Seconds()))
	} else {
		to = int(math.Floor(r.Summary.RunS))
	}
	return from, to
}

// Phases are a run's ramp-up and ramp-down in seconds since its start,
// for shading the over-time charts; zero where there is none.
type phases struct {
	rampUp, rampDownFrom, end float64
}

func phasesOf(r *result.Result) phases {
	c := r.Config
	p := phases{rampUp: time.Duration(c.RampUp).Seconds(), end: r.Summary.RunS}
	if c.Duration > 0 {
		p.end = time.Duration(c.Duration).Seconds()
		if c.RampDown > 0 {
			p.rampDownFrom = p.end - time.Duration(c.RampDown).Seconds()
		}
	}
	return p
}

// perSecond is the run's time series as a dense slice indexed by T-1.
func perSecond(r *result.Result) []result.Point {
	n := 0
	for _, p := range r.Timeseries {
		n = max(n, p.T)
	}
	out := make([]result.Point, n)
	for i := range out {
		out[i].T = i + 1
	}
	for _, p := range r.Timeseries {
		if p.T >= 1 {
			out[p.T-1] = p
		}
	}
	return out
}

// steadyThroughput is the completed operations of each steady-state
// second.
func steadyThroughput(r *result.Result) []float64 {
	from, to := steadyWindow(r)
	var xs []float64
	for _, p := range perSecond(r) {
		if p.T > from && p.T <= to {
			xs = append(xs, float64(p.Ops))
		}
	}
	return xs
}

// steadySeconds is how many whole seconds the run's steady state has.
func steadySeconds(r *result.Result) int {
	from, to := steadyWindow(r)
	return max(to-from, 0)
}

// steadyBatchHistograms merges the per-second histograms of every
// operation in each batch of steady-state seconds: one histogram per
// batch, at the seconds' own coarse precision (merging into a histogram
// of the seconds' geometry keeps an hour's worth cheap). nil when the
// result holds no histograms.
func steadyBatchHistograms(r *result.Result, bt Batching) ([]*metrics.Histogram, error) {
	if r.Histograms == nil {
		return nil, nil
	}
	from, _ := steadyWindow(r)
	byT := make(map[int]result.SecondHistograms, len(r.Histograms.Seconds))
	for _, s := range r.Histograms.Seconds {
		byT[s.T] = s
	}
	out := make([]*metrics.Histogram, bt.Batches)
	for b := range out {
		for t := from + 1 + b*bt.Size; t <= from+(b+1)*bt.Size; t++ {
			for _, o := range byT[t].Ops {
				if o.Latency == "" {
					continue
				}
				h, err := metrics.DecodeHistogram(o.Latency)
				if err != nil {
					return nil, fmt.Errorf("%s: second %d: %w", r.Workload, t, err)
				}
				if out[b] == nil {
					out[b] = h
				} else {
					out[b].Merge(h)
				}
			}
		}
		if out[b] == nil {
			out[b] = metrics.NewHistogram()
		}
	}
	return out, nil
}

// opHistogram decodes an operation's steady-state latency histogram.
func opHistogram(r *result.Result, op string) (*metrics.Histogram, error) {
	if r.Histograms == nil {
		return nil, nil
	}
	enc := r.Histograms.Operations[op].Latency
	if enc == "" {
		return metrics.NewHistogram(), nil
	}
	h, err := metrics.DecodeHistogram(enc)
	if err != nil {
		return nil, fmt.Errorf("operation %s: %w", op, err)
	}
	return h, nil
}

// totalHistogram merges every operation's steady-state latency.
func totalHistogram(r *result.Result) (*metrics.Histogram, error) {
	if r.Histograms == nil {
		return nil, nil
	}
	all := metrics.NewHistogram()
	for _, op := range r.OperationOrder {
		h, err := opHistogram(r, op)
		if err != nil {
			return nil, err
		}
		all.Merge(h)
	}
	return all, nil
}

// noHistograms says why a result has no spectra.
func noHistograms(r *result.Result) string {
	return fmt.Sprintf("%s holds no latency histograms (tierbench %s wrote it before results had them): no percentile spectra or per-second operation series",
		r.Workload, r.TierbenchVersion)
}
