package sweep

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/atomicfile"
	"github.com/tierbench/tierbench/internal/result"
)

// Stat is the mean, standard deviation and range of a figure over a
// point's repetitions, and the half-width of the mean's 95% confidence
// interval (Student's t with N-1 degrees of freedom; 0 for fewer than two
// runs, which have none).
type Stat struct {
	Mean, SD, Min, Max float64
	CI95               float64
	N                  int
}

// tQuantile975 are Student's t distribution's 97.5% quantiles by degrees
// of freedom, 1 to 30.
var tQuantile975 = [...]float64{12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
	2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024,
	2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272}

// tCritical is the two-sided 95% critical value of Student's t with df
// degrees of freedom: the table up to 30, beyond it the Cornish-Fisher
// expansion around the normal's 1.959964 (off by less than 1e-4 there).
func tCritical(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	if df <= len(tQuantile975) {
		return tQuantile975[df-1]
	}
	const z = 1.959964
	n := float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n)
}

func statOf(xs []float64) Stat {
	s := Stat{N: len(xs), Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	if s.N == 0 {
		return Stat{}
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		for _, x := range xs {
			s.SD += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(s.SD / float64(s.N-1))
		s.CI95 = tCritical(s.N-1) * s.SD / math.Sqrt(float64(s.N))
	}
	return s
}

// figure extracts one number from a run.
func (o Outcome) figure(f func(*result.Result) float64) Stat {
	xs := make([]float64, len(o.Runs))
	for i, r := range o.Runs {
		xs[i] = f(r)
	}
	return statOf(xs)
}

func (o Outcome) metric() Stat {
	return o.figure(func(r *result.Result) float64 { return r.Summary.Metric.Value })
}

func (o Outcome) passed() bool {
	return o.all(func(r *result.Result) bool { return r.Summary.Passed })
}

// checksPassed: every run's consistency checks held and none was
// interrupted (validity aside).
func (o Outcome) checksPassed() bool {
	return o.checksHeld() && !o.interrupted()
}

// checksHeld: every check of every run held, whether or not the run went
// to its end.
func (o Outcome) checksHeld() bool {
	return o.all(func(r *result.Result) bool {
		for _, c := range r.Checks {
			if !c.Passed {
				return false
			}
		}
		return true
	})
}

// interrupted: some run was stopped before its end.
func (o Outcome) interrupted() bool {
	return !o.all(func(r *result.Result) bool { return !r.Summary.Interrupted })
}

func (o Outcome) all(ok func(*result.Result) bool) bool {
	for _, r := range o.Runs {
		if !ok(r) {
			return false
		}
	}
	return true
}

// judged: the runs have validity rules (ECperf).
func (o Outcome) judged() bool {
	return len(o.Runs) > 0 && o.Runs[0].Validity != nil
}

// valid says whether every run met the validity rules: the response
// times, the mix, and both.
func (o Outcome) valid() (rt, mix, both bool) {
	rt = o.all(func(r *result.Result) bool { return r.Validity.ResponseTimesPassed })
	mix = o.all(func(r *result.Result) bool { return r.Validity.MixPassed })
	both = o.all(func(r *result.Result) bool { return r.Validity.Passed })
	return rt, mix, both
}

// validity in words over every run: "yes", or which kind of rule failed
// in some run.
func (o Outcome) validity() string {
	rt, mix, _ := o.valid()
	switch {
	case rt && mix:
		return "yes"
	case mix:
		return "no: resp. times"
	case rt:
		return "no: mix"
	}
	return "no: resp. times, mix"
}

func (o Outcome) aborts() Stat {
	return o.figure(func(r *result.Result) float64 { return float64(r.Summary.Aborts.Total()) })
}

// containerKeys are the entity container's settings. An experiment that
// sets or varies one is about the container, and its table shows each
// entity type's instances; for the others those columns are noise (ECperf
// has 14 types).
var containerKeys = map[string]bool{
	"commit-option": true, "cache": true, "pool": true, "persistence": true, "concurrency": true,
	"entity": true, "refresh-interval": true, "lock-timeout": true, "warmup": true,
}

func (e *Experiment) aboutContainer() bool {
	for _, n := range []yaml.Node{e.Set, e.Axes} {
		if n.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i < len(n.Content); i += 2 {
			if containerKeys[n.Content[i].Value] {
				return true
			}
		}
	}
	return false
}

// entityColumns are the container figures a sweep reports per type.
var entityColumns = []struct {
	name string
	get  func(result.EntityStats) float64
}{
	{"hit_rate", func(e result.EntityStats) float64 { return e.HitRate }},
	{"loads", func(e result.EntityStats) float64 { return float64(e.Loads) }},
	{"stores", func(e result.EntityStats) float64 { return float64(e.Stores) }},
	{"activations", func(e result.EntityStats) float64 { return float64(e.Activations) }},
	{"passivations", func(e result.EntityStats) float64 { return float64(e.Passivations) }},
	{"discards", func(e result.EntityStats) float64 { return float64(e.Discards) }},
	{"instantiations", func(e result.EntityStats) float64 { return float64(e.Instantiations) }},
	{"peak_ready", func(e result.EntityStats) float64 { return float64(e.PeakReady) }},
	{"peak_pooled", func(e result.EntityStats) float64 { return float64(e.PeakPooled) }},
	{"ready_at_end", func(e result.EntityStats) float64 { return float64(e.ReadyAtEnd) }},
	{"pooled_at_end", func(e result.EntityStats) float64 { return float64(e.PooledAtEnd) }},
}

// tiered: the runs made remote calls (RUBiS's remote styles,
// Stock-Online's --tiers 2), so what crossing the boundary cost is a
// figure of the point. A site alone in a child process makes none.
func (o Outcome) tiered() bool {
	return len(o.Runs) > 0 && o.Runs[0].Tiers != nil && o.Runs[0].Tiers.Protocol != ""
}

// anyTiered: some point of the experiment made remote calls (its variants
// may mix in-process styles with remote ones), so its table has the
// columns.
func anyTiered(outs []Outcome) bool {
	return slices.ContainsFunc(outs, Outcome.tiered)
}

// tierColumns are what a page's crossing of the tier boundary cost,
// reported per point when the runs were tiered.
var tierColumns = []struct {
	name string
	get  func(result.TierCalls) float64
}{
	{"calls_per_page", callsPerPage},
	{"bytes_out_per_page", bytesOutPerPage},
	{"bytes_in_per_page", bytesInPerPage},
	{"layer_ms_per_page", func(t result.TierCalls) float64 { return t.LayerMsPerPage }},
}

func callsPerPage(t result.TierCalls) float64    { return t.CallsPerPage }
func bytesOutPerPage(t result.TierCalls) float64 { return t.BytesOutPerPage }
func bytesInPerPage(t result.TierCalls) float64  { return t.BytesInPerPage }

func (o Outcome) tierFigure(get func(result.TierCalls) float64) Stat {
	return o.figure(func(r *result.Result) float64 {
		if r.Tiers == nil {
			return 0
		}
		return get(r.Tiers.Total)
	})
}

func entities(outs []Outcome) []string {
	for _, o := range outs {
		if len(o.Runs) > 0 {
			return o.Runs[0].EntityOrder
		}
	}
	return nil
}

// WriteCSV writes one experiment's points: the axes, the metric's mean,
// spread and range, the latency percentiles, what crossing the tiers cost
// when the runs were tiered, and the container's figures per entity type
// (means).
func WriteCSV(w io.Writer, outs []Outcome) error {
	if len(outs) == 0 {
		return nil
	}
	cw := csv.NewWriter(w)
	metricName := "metric"
	if len(outs[0].Runs) > 0 {
		metricName = strings.ToLower(outs[0].Runs[0].Summary.Metric.Name)
	}
	header := []string{"experiment"}
	for _, v := range outs[0].Point.Values {
		header = append(header, strings.SplitN(v, "=", 2)[0])
	}
	header = append(header, "runs", metricName+"_mean", metricName+"_sd", metricName+"_ci95", metricName+"_min", metricName+"_max", "p90_ms_mean", "p99_ms_mean", "errors_mean", "aborts_mean", "passed", "checks_passed")
	judged := outs[0].judged()
	var ops []string
	if judged {
		header = append(header, "valid", "response_times_valid", "mix_valid")
		ops = outs[0].Runs[0].OperationOrder
		for _, op := range ops {
			header = append(header, op+".p90_ms")
		}
	}
	tiered := anyTiered(outs)
	if tiered {
		for _, c := range tierColumns {
			header = append(header, c.name)
		}
	}
	names := entities(outs)
	for _, e := range names {
		for _, c := range entityColumns {
			header = append(header, e+"."+c.name)
		}
	}
	cw.Write(header)
	for _, o := range outs {
		row := []string{o.Point.Experiment.Name}
		for _, v := range o.Point.Values {
			row = append(row, strings.SplitN(v, "=", 2)[1])
		}
		m := o.metric()
		p90 := o.figure(func(r *result.Result) float64 { return r.TotalLatency.P90 })
		p99 := o.figure(func(r *result.Result) float64 { return r.TotalLatency.P99 })
		errs := o.figure(func(r *result.Result) float64 { return float64(r.Summary.Errors) })
		row = append(row, strconv.Itoa(m.N), num(m.Mean), num(m.SD), num(m.CI95), num(m.Min), num(m.Max), num(p90.Mean), num(p99.Mean), num(errs.Mean),
			num(o.aborts().Mean), strconv.FormatBool(o.passed()), strconv.FormatBool(o.checksPassed()))
		if judged {
			rt, mix, both := o.valid()
			row = append(row, strconv.FormatBool(both), strconv.FormatBool(rt), strconv.FormatBool(mix))
			for _, op := range ops {
				row = append(row, num(o.figure(func(r *result.Result) float64 { return r.Operations[op].Latency.P90 }).Mean))
			}
		}
		if tiered {
			for _, c := range tierColumns {
				row = append(row, num(o.tierFigure(c.get).Mean))
			}
		}
		for _, e := range names {
			for _, c := range entityColumns {
				s := o.figure(func(r *result.Result) float64 { return c.get(r.Container[e]) })
				row = append(row, num(s.Mean))
			}
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// WriteTable prints one experiment for people: per point the metric (mean
// ± the half-width of its 95% confidence interval, and the standard
// deviation, over the runs) and the p90 latency of all
// operations, the paper's figure where the sweep file gives one, the
// remote calls and bytes per page when runs made remote calls, whether the
// runs were valid and their aborts (workloads with validity rules), and,
// when the experiment is about the container, per entity type the peak
// ready and pooled instances and the discards.
// A point whose checks failed is marked so; one whose checks held but a
// run of which was interrupted, as interrupted.
func WriteTable(w io.Writer, outs []Outcome) {
	if len(outs) == 0 {
		return
	}
	e := outs[0].Point.Experiment
	title := e.Name
	if e.Title != "" {
		title += " — " + e.Title
	}
	fmt.Fprintln(w, title)
	metricName := "metric"
	if len(outs[0].Runs) > 0 {
		metricName = outs[0].Runs[0].Summary.Metric.Name
	}
	var names []string
	if e.aboutContainer() {
		names = entities(outs)
	}
	judged := outs[0].judged()
	width := len("point")
	for _, o := range outs {
		width = max(width, len(o.Point.Label()))
	}
	tiered := anyTiered(outs)
	fmt.Fprintf(w, "  %-*s %24s %9s %9s", width, "point", metricName+" (mean ± 95% CI)", "sd", "p90 ms")
	if len(e.Paper) > 0 {
		fmt.Fprintf(w, " %9s", "paper")
	}
	if tiered {
		fmt.Fprintf(w, " %11s %17s", "calls/page", "bytes/page out/in")
	}
	if judged {
		fmt.Fprintf(w, "  %-20s %8s", "valid", "aborts")
	}
	for _, n := range names {
		fmt.Fprintf(w, " %22s", n+" ready/pool/disc")
	}
	fmt.Fprintln(w)
	for _, o := range outs {
		m := o.metric()
		mark := ""
		switch {
		case !o.checksHeld():
			mark = " CHECKS FAILED"
		case o.interrupted():
			mark = " INTERRUPTED"
		}
		p90 := o.figure(func(r *result.Result) float64 { return r.TotalLatency.P90 })
		spread, sd := fmt.Sprintf("%.1f ± %.1f", m.Mean, m.CI95), fmt.Sprintf("%.1f", m.SD)
		if len(o.Runs) < 2 {
			// One run has no spread to show; ± 0.0 would claim one.
			spread, sd = fmt.Sprintf("%.1f", m.Mean), "-"
		}
		fmt.Fprintf(w, "  %-*s %24s %9s %9.1f", width, o.Point.Label(), spread, sd, p90.Mean)
		if len(e.Paper) > 0 {
			paper := "-"
			if len(o.Point.Values) > 0 {
				if p, ok := e.Paper[strings.SplitN(o.Point.Values[0], "=", 2)[1]]; ok {
					paper = num(p)
				}
			}
			fmt.Fprintf(w, " %9s", paper)
		}
		if tiered {
			out, in := o.tierFigure(bytesOutPerPage), o.tierFigure(bytesInPerPage)
			fmt.Fprintf(w, " %11.2f %17s", o.tierFigure(callsPerPage).Mean, fmt.Sprintf("%.0f/%.0f", out.Mean, in.Mean))
		}
		if judged {
			fmt.Fprintf(w, "  %-20s %8.0f", o.validity(), o.aborts().Mean)
		}
		for _, n := range names {
			pr := o.figure(func(r *result.Result) float64 { return float64(r.Container[n].PeakReady) })
			pp := o.figure(func(r *result.Result) float64 { return float64(r.Container[n].PeakPooled) })
			d := o.figure(func(r *result.Result) float64 { return float64(r.Container[n].Discards) })
			fmt.Fprintf(w, " %22s", fmt.Sprintf("%.0f/%.0f/%.0f", pr.Mean, pp.Mean, d.Mean))
		}
		fmt.Fprintln(w, mark)
	}
}

// Report writes each experiment's CSV and table under dir, and the tables
// to w.
func Report(w io.Writer, dir string, outs []Outcome) error {
	var tables strings.Builder
	for _, group := range byExperiment(outs) {
		err := atomicfile.WriteFunc(filepath.Join(dir, group[0].Point.Experiment.Name+".csv"), 0o644, func(w io.Writer) error { return WriteCSV(w, group) })
		if err != nil {
			return err
		}
		WriteTable(&tables, group)
		tables.WriteString("\n")
	}
	if err := atomicfile.Write(filepath.Join(dir, "tables.txt"), []byte(tables.String()), 0o644); err != nil {
		return err
	}
	_, err := io.WriteString(w, tables.String())
	return err
}

func byExperiment(outs []Outcome) [][]Outcome {
	var groups [][]Outcome
	for _, o := range outs {
		if n := len(groups); n > 0 && groups[n-1][0].Point.Experiment == o.Point.Experiment {
			groups[n-1] = append(groups[n-1], o)
			continue
		}
		groups = append(groups, []Outcome{o})
	}
	return groups
}
