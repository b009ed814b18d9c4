package result

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/threshold"
	"github.com/tierbench/tierbench/internal/workload"
)

// Threshold is one of the run's --threshold and how its steady state met
// it.
type Threshold struct {
	Expression string `json:"expression"`
	// Measured is the figure judged, in Unit (ms, %, /s; the metric's is
	// its own); absent when the run has none to judge (no operation of
	// the one named finished in the steady state), which fails.
	Measured *float64 `json:"measured,omitempty"`
	Unit     string   `json:"unit,omitempty"`
	Passed   bool     `json:"passed"`
	// Detail says why a threshold could not be judged.
	Detail string `json:"detail,omitempty"`
}

// judgeThresholds judges the run's thresholds on the figures the result
// holds, rounded as the summary shows them; p99.9, which the result
// keeps no figure of, is read from the steady state's histograms.
func judgeThresholds(r *Result, snap metrics.Snapshot, total *metrics.Histogram) []Threshold {
	var out []Threshold
	for _, expr := range r.Config.Thresholds {
		t, err := threshold.Parse(expr)
		if err != nil {
			// The runner refuses these before a run; a result built from
			// another configuration still says why it did not pass.
			out = append(out, Threshold{Expression: expr, Detail: err.Error()})
			continue
		}
		hist := total
		if t.Operation != "" {
			hist = nil
			for _, o := range snap.Ops {
				if o.Name == t.Operation {
					hist = o.Latency
				}
			}
		}
		v := Threshold{Expression: t.Expr, Unit: t.Stat.Unit()}
		measured, why := r.measure(t, hist)
		if why != "" {
			v.Detail = why
		} else {
			v.Measured, v.Passed = &measured, t.Holds(measured)
		}
		out = append(out, v)
	}
	return out
}

// measure is the steady state's figure t bounds, or why there is none.
func (r *Result) measure(t threshold.Threshold, hist *metrics.Histogram) (float64, string) {
	s := r.Summary
	count, completed, failed, latency := s.Operations, s.Completed, s.Errors+s.InDoubt, r.TotalLatency
	of := "operation"
	if t.Operation != "" {
		op, ok := r.Operations[t.Operation]
		if !ok {
			return 0, fmt.Sprintf("no %s operation ran", t.Operation)
		}
		count, completed, failed, latency = op.Count, op.Completed, op.Errors+op.InDoubt, op.Latency
		of = t.Operation + " operation"
	}
	switch {
	case t.Stat == threshold.ErrorRate:
		if count+failed == 0 {
			return 0, "no " + of + " was due in the steady state"
		}
		return round(100*float64(failed)/float64(count+failed), 3), ""
	case t.Stat == threshold.TPS || t.Stat == threshold.Metric:
		if s.ElapsedS <= 0 {
			return 0, "the run has no steady state"
		}
		switch {
		case t.Stat == threshold.Metric:
			return s.Metric.Value, ""
		case t.Operation == "":
			return s.ThroughputPerS, ""
		}
		// As the summary's per-s column has it.
		return round(float64(completed)/s.ElapsedS, 1), ""
	case count == 0:
		return 0, "no " + of + " completed in the steady state"
	}
	if t.Stat == threshold.P999 {
		if hist == nil || hist.Count() == 0 {
			return 0, "no " + of + " completed in the steady state"
		}
		return round(float64(hist.Quantile(0.999))/1e6, 3), ""
	}
	figures := map[threshold.Stat]float64{threshold.Mean: latency.Mean, threshold.P50: latency.P50, threshold.P90: latency.P90,
		threshold.P95: latency.P95, threshold.P99: latency.P99, threshold.Max: latency.Max}
	if v, ok := figures[t.Stat]; ok {
		return v, ""
	}
	return 0, "statistic " + string(t.Stat) + " is not measured"
}

// ThresholdsFailed are the expressions of the thresholds the run did not
// meet.
func (r *Result) ThresholdsFailed() []string {
	var failed []string
	for _, t := range r.Thresholds {
		if !t.Passed {
			failed = append(failed, t.Expression)
		}
	}
	return failed
}

// ThresholdVerdicts are the thresholds as the checks are: each with its
// verdict and what was measured (or why nothing could be).
func (r *Result) ThresholdVerdicts() []workload.Check {
	lines := make([]workload.Check, len(r.Thresholds))
	for i, t := range r.Thresholds {
		detail := t.Detail
		if t.Measured != nil {
			name := t.Expression[:strings.IndexAny(t.Expression, "<>")]
			if name == string(threshold.Metric) {
				name = r.Summary.Metric.Name
			}
			detail = "measured " + name + " " + strconv.FormatFloat(*t.Measured, 'f', -1, 64) + t.Unit
		}
		lines[i] = workload.Check{Name: t.Expression, Passed: t.Passed, Detail: detail}
	}
	return lines
}

// writeThresholds prints the thresholds as the checks are: a verdict
// line, then each with what was measured.
func writeThresholds(w io.Writer, r *Result) {
	if len(r.Thresholds) == 0 {
		return
	}
	writeVerdicts(w, "thresholds", r.ThresholdVerdicts())
}
