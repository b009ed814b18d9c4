package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
)

// Group is runs of one configuration: repetitions when it holds several.
// A comparison sets groups side by side.
type Group struct {
	// Label is a letter (A, B, …) the tables and legends use.
	Label string
	Runs  []*Run
}

// Name is the group's runs' names.
func (g Group) Name() string {
	names := make([]string, len(g.Runs))
	for i, r := range g.Runs {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

// configKey is what makes runs repetitions of each other: the same
// configuration but for its seed, where its result went and whether it
// printed, on the same tierbench, database and host.
func configKey(r *result.Result) string {
	c := r.Config
	// Thresholds judge a run; they do not change it.
	c.Seed, c.Out, c.Quiet, c.Thresholds = 0, "", false, nil
	b, err := json.Marshal(struct {
		Config                    any
		Version, DB, Target, Host string
	}{c, r.TierbenchVersion, r.Environment.DB, r.Environment.Target, r.Environment.Host})
	if err != nil {
		return fmt.Sprint(c)
	}
	return string(b)
}

// Groups puts runs of identical configurations together, in the order
// their first run was given. Runs that are all of one configuration are
// compared one by one instead: there is no other group to set them
// against, and whoever gave them wants to see them apart.
func Groups(runs []*Run) []Group {
	groups := groupByConfig(runs)
	if len(groups) == 1 && len(runs) > 1 {
		groups = nil
		for i, r := range runs {
			groups = append(groups, Group{Label: label(i), Runs: []*Run{r}})
		}
	}
	return groups
}

func groupByConfig(runs []*Run) []Group {
	var groups []Group
	index := make(map[string]int)
	for _, r := range runs {
		k := configKey(r.Result)
		if i, ok := index[k]; ok {
			groups[i].Runs = append(groups[i].Runs, r)
			continue
		}
		index[k] = len(groups)
		groups = append(groups, Group{Label: label(len(groups)), Runs: []*Run{r}})
	}
	return groups
}

// label is A, B, …, Z, AA, AB, …
func label(i int) string {
	s := ""
	for i++; i > 0; i = (i - 1) / 26 {
		s = string(rune('A'+(i-1)%26)) + s
	}
	return s
}

// Figure is one row of a comparison: a figure of every group, and each
// group's difference from the first.
type Figure struct {
	Name string
	// Key names the figure in --max-regression (metric, tps, p50, p99);
	// HigherIsBetter says which way it gets worse.
	Key            string
	HigherIsBetter bool
	Estimates      []Estimate
	// Diffs[i] is group i's difference from group 0 (Diffs[0] is zero).
	Diffs []Difference
}

// Comparison is groups side by side.
type Comparison struct {
	Groups  []Group
	Figures []Figure
	// Methods say, per group, where its intervals come from.
	Methods []string
}

// figureDef reads one figure of a run, and its batch figures for the
// run's standard error.
type figureDef struct {
	name, key      string
	higherIsBetter bool
	// value is the run's own figure.
	value func(*result.Result) float64
	// batches returns the standard error of the figure from the run's
	// steady-state seconds and how it was found, or why there is none.
	batches func(*Run) (Estimate, string)
}

// batchHistograms keeps each run's batch histograms: both percentiles
// read the same ones, and an hour's worth takes a while to decode.
type batchHistograms map[*Run][]*metrics.Histogram

// Compare sets the groups side by side: the workload's metric, the
// throughput and the p50 and p99 latency of all operations. Each group's
// estimate is the mean of its runs; its standard error comes from the
// spread of its repetitions when it has several, otherwise from batches of
// its run's steady-state seconds (see batchMeans).
func Compare(groups []Group) *Comparison {
	metricName := "metric"
	if len(groups) > 0 {
		metricName = groups[0].Runs[0].Result.Summary.Metric.Name
	}
	hists := batchHistograms{}
	defs := []figureDef{
		{metricName, "metric", true, func(r *result.Result) float64 { return r.Summary.Metric.Value }, metricBatches},
		{"throughput/s", "tps", true, func(r *result.Result) float64 { return r.Summary.ThroughputPerS }, throughputBatches},
		{"p50 ms", "p50", false, func(r *result.Result) float64 { return r.TotalLatency.P50 }, hists.quantile(0.5)},
		{"p99 ms", "p99", false, func(r *result.Result) float64 { return r.TotalLatency.P99 }, hists.quantile(0.99)},
	}
	c := &Comparison{Groups: groups, Methods: make([]string, len(groups))}
	for _, d := range defs {
		f := Figure{Name: d.name, Key: d.key, HigherIsBetter: d.higherIsBetter}
		for gi, g := range groups {
			var e Estimate
			if len(g.Runs) > 1 {
				xs := make([]float64, len(g.Runs))
				for i, r := range g.Runs {
					xs[i] = d.value(r.Result)
				}
				e = fromSamples(xs)
				c.Methods[gi] = fmt.Sprintf("%d repetitions of one configuration (t interval on their spread)", len(g.Runs))
			} else {
				var method string
				e, method = d.batches(g.Runs[0])
				e.Value = d.value(g.Runs[0].Result)
				// The figures share their batching; say it once, and
				// each figure's exception.
				if !strings.Contains(c.Methods[gi], method) {
					c.Methods[gi] = joinMethod(c.Methods[gi], method)
				}
			}
			f.Estimates = append(f.Estimates, e)
			f.Diffs = append(f.Diffs, difference(f.Estimates[0], e))
		}
		c.Figures = append(c.Figures, f)
	}
	return c
}

func joinMethod(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func batchingWords(bt Batching) string {
	if bt.Size == 1 {
		return fmt.Sprintf("%d one-second batches of its steady state (under 20 s: its seconds taken as independent)", bt.Batches)
	}
	return fmt.Sprintf("batch means: %d batches of %d s of its steady state", bt.Batches, bt.Size)
}

func throughputBatches(r *Run) (Estimate, string) {
	e, bt := batchMeans(steadyThroughput(r.Result))
	if bt.Batches == 0 {
		return Estimate{}, "steady state under 2 whole seconds: no interval"
	}
	return e, batchingWords(bt)
}

// metricBatches scales the throughput's batches by the metric's share of
// it: the metric counts a fixed subset of the operations (or all of
// them), per second or per minute.
func metricBatches(r *Run) (Estimate, string) {
	e, why := throughputBatches(r)
	s := r.Result.Summary
	if s.ThroughputPerS == 0 {
		return Estimate{}, why
	}
	e.SE *= s.Metric.Value / s.ThroughputPerS
	return e, why
}

// quantile estimates a latency percentile's standard error by
// sectioning: the percentile of each batch of steady-state seconds (their
// histograms merged) spreads as the whole run's would over batches.
func (hists batchHistograms) quantile(q float64) func(*Run) (Estimate, string) {
	return func(r *Run) (Estimate, string) {
		if r.Result.Histograms == nil {
			return Estimate{}, "no latency intervals: the result holds no histograms"
		}
		bt := batchesFor(steadySeconds(r.Result))
		if bt.Batches == 0 {
			return Estimate{}, "steady state under 2 whole seconds: no interval"
		}
		batches, ok := hists[r]
		if !ok {
			var err error
			if batches, err = steadyBatchHistograms(r.Result, bt); err != nil {
				return Estimate{}, "no latency intervals: " + err.Error()
			}
			hists[r] = batches
		}
		xs := make([]float64, len(batches))
		for i, h := range batches {
			xs[i] = ms(h.Quantile(q))
		}
		e := fromSamples(xs)
		if e.SE == 0 {
			// Every batch's percentile fell in one bucket of the coarse
			// per-second histograms: the spread is below their resolution,
			// not zero.
			return Estimate{}, fmt.Sprintf("p%g: every batch in one bucket of the per-second histograms (within 6.25%%), no interval", q*100)
		}
		return e, batchingWords(bt)
	}
}

// signed formats a difference with its sign.
func signed(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.*f", decimals(x), x)
}

// decimals gives a figure three significant digits at most, one decimal
// at least below 1000.
func decimals(x float64) int {
	a := math.Abs(x)
	switch {
	case a == 0 || a >= 100:
		return 1
	case a >= 1:
		return 2
	case a >= 0.01:
		return 3
	}
	return 4
}

func plain(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals(x), x)
}

// DiffText is a difference in words: "+65.6 [+3.1, +128.1] +5.3%", and
// "not significant" when the interval holds zero.
func DiffText(d Difference) string { return diffText(d, signed) }

// diffText is DiffText with the numbers printed by signed.
func diffText(d Difference, signed func(float64) string) string {
	s := signed(d.Delta)
	if d.HasCI {
		s += " [" + signed(d.Low) + ", " + signed(d.High) + "]"
	}
	if !math.IsNaN(d.Percent) {
		s += fmt.Sprintf(" %+.1f%%", d.Percent)
	}
	switch {
	case !d.HasCI:
		s += " (no interval)"
	case !d.Significant():
		s += " not significant"
	}
	return s
}
