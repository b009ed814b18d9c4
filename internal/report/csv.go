package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tierbench/tierbench/internal/atomicfile"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
)

// CSVHeader is the columns of a run's per-second CSV file: one row per
// second of the whole run (ramps included; t_s is the second's end, phase
// ramp-up, steady or ramp-down) and operation, then a row "all" of every
// operation together. Latencies are of the completed operations, in ms,
// from the per-second histograms (1 significant digit: within 6.25%),
// rounded to the microsecond as the result file's are (a bucket's bound,
// 41.943039 ms, claims a precision the bucket does not have); empty where
// none completed. A result without histograms has the "all" rows only,
// without p90 and p99.9.
var CSVHeader = []string{"t_s", "phase", "operation", "count", "errors", "p50_ms", "p90_ms", "p99_ms", "p999_ms"}

// Phases of the CSV's rows.
const (
	PhaseRampUp   = "ramp-up"
	PhaseSteady   = "steady"
	PhaseRampDown = "ramp-down"
)

// phaseOf names the phase of the second ending at t.
func phaseOf(p phases, t int) string {
	switch {
	case float64(t) <= p.rampUp:
		return PhaseRampUp
	case p.rampDownFrom > 0 && float64(t) > p.rampDownFrom:
		return PhaseRampDown
	}
	return PhaseSteady
}

// microseconds prints a latency in ms rounded to the microsecond.
func microseconds(msValue float64) string { return num(math.Round(msValue*1000) / 1000) }

// AllOperations names the rows of every operation together.
const AllOperations = "all"

// WriteSeriesCSV writes one run's per-second, per-operation series.
func WriteSeriesCSV(w io.Writer, r *result.Result) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	quantiles := func(h *metrics.Histogram) []string {
		if h == nil || h.Count() == 0 {
			return []string{"", "", "", ""}
		}
		q := h.Quantiles()
		return []string{microseconds(ms(q.P50)), microseconds(ms(q.P90)), microseconds(ms(q.P99)), microseconds(ms(q.P999))}
	}
	ph := phasesOf(r)
	last := 0
	for _, p := range r.Timeseries {
		last = max(last, p.T)
	}
	if r.Histograms == nil {
		for _, p := range perSecond(r) {
			row := []string{strconv.Itoa(p.T), phaseOf(ph, p.T), AllOperations, count(p.Ops), count(p.Errors), "", "", "", ""}
			if p.Ops > 0 {
				row[5], row[7] = microseconds(p.P50Ms), microseconds(p.P99Ms)
			}
			cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	}
	byT := make(map[int]result.SecondHistograms, len(r.Histograms.Seconds))
	for _, s := range r.Histograms.Seconds {
		byT[s.T] = s
		last = max(last, s.T)
	}
	for t := 1; t <= last; t++ {
		s := byT[t]
		// Merged into the first of the second's own histograms: they share
		// its coarse geometry, and a fine one per second of an hour is
		// slow to allocate.
		var all *metrics.Histogram
		var n, errs int64
		for i, op := range r.OperationOrder {
			var o result.SecondOperations
			if i < len(s.Ops) {
				o = s.Ops[i]
			}
			var h *metrics.Histogram
			if o.Latency != "" {
				var err error
				if h, err = metrics.DecodeHistogram(o.Latency); err != nil {
					return fmt.Errorf("second %d, %s: %w", t, op, err)
				}
			}
			n, errs = n+o.Count, errs+o.Errors
			cw.Write(append([]string{strconv.Itoa(t), phaseOf(ph, t), op, count(o.Count), count(o.Errors)}, quantiles(h)...))
			switch {
			case h == nil:
			case all == nil:
				all = h
			default:
				all.Merge(h)
			}
		}
		cw.Write(append([]string{strconv.Itoa(t), phaseOf(ph, t), AllOperations, count(n), count(errs)}, quantiles(all)...))
	}
	cw.Flush()
	return cw.Error()
}

// writeCSVFiles writes each run's series to dir/NAME.csv and returns the
// files' paths.
func writeCSVFiles(dir string, runs []*Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	seen := map[string]int{}
	for _, r := range runs {
		name := r.Name
		// Two results of one base name from different directories.
		if seen[name]++; seen[name] > 1 {
			name += "-" + strconv.Itoa(seen[name])
		}
		path := filepath.Join(dir, name+".csv")
		err := atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error { return WriteSeriesCSV(w, r.Result) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
