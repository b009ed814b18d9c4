package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/sweep"
)

// SweepFile is the name under which tierbench sweep keeps a copy of its
// sweep file in the results directory: the report reads the experiments'
// axes, titles and the paper's figures from it.
const SweepFile = "sweep.yaml"

// Sweep is a sweep directory's results by experiment.
type Sweep struct {
	Dir         string
	Name, Title string
	// Inferred: the directory has no sweep file, so each experiment's
	// axes are the settings that differ between its results.
	Inferred    bool
	Experiments []SweepExperiment
	// Declared is how many experiments the sweep file has; fewer have
	// results when the sweep ran some (sweep --experiment).
	Declared int
}

// SweepExperiment is one experiment's points, in the sweep file's order.
type SweepExperiment struct {
	Experiment *sweep.Experiment
	// XKey is the axis drawn along x: the last (innermost) one; the
	// others make the series.
	XKey   string
	Points []SweepPoint
}

// SweepPoint is one configuration and its repetitions.
type SweepPoint struct {
	// Values are the point's axis values as "key=value", in axis order.
	Values    []string
	X, Series string
	Runs      []*Run
}

// Runs are every run of the sweep.
func (s *Sweep) Runs() []*Run {
	var out []*Run
	for _, e := range s.Experiments {
		for _, p := range e.Points {
			out = append(out, p.Runs...)
		}
	}
	return out
}

// resultName is a sweep's result file: LABEL-REPETITION.json.
var resultName = regexp.MustCompile(`^(.+)-([0-9]+)\.json$`)

// unsafeInName and fileStem mirror how tierbench sweep names a point's
// files (internal/sweep's fileName): "pool=20%" → "pool=20pct".
var unsafeInName = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

func fileStem(label string) string {
	if label == "" {
		return "base"
	}
	return unsafeInName.ReplaceAllString(strings.ReplaceAll(label, "%", "pct"), "_")
}

// isDir: the argument is a directory, to be read as a sweep's.
func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// ReadSweep reads a directory tierbench sweep wrote: DIR/EXPERIMENT/
// LABEL-N.json result files, and DIR/sweep.yaml when the sweep kept its
// file.
func ReadSweep(dir string) (*Sweep, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, inputError("%s: %v", dir, err)
	}
	// stems[experiment][stem] are the point's runs, by repetition.
	stems := make(map[string]map[string][]*Run)
	var order []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, inputError("%s: %v", dir, err)
		}
		for _, f := range files {
			m := resultName.FindStringSubmatch(f.Name())
			if f.IsDir() || m == nil {
				continue
			}
			run, err := ReadRun(filepath.Join(dir, e.Name(), f.Name()))
			if err != nil {
				return nil, err
			}
			run.Name = e.Name() + "-" + run.Name
			if stems[e.Name()] == nil {
				stems[e.Name()] = make(map[string][]*Run)
				order = append(order, e.Name())
			}
			stems[e.Name()][m[1]] = append(stems[e.Name()][m[1]], run)
		}
	}
	if len(stems) == 0 {
		return nil, inputError("%s is not a sweep directory: it holds no EXPERIMENT/LABEL-N.json result files (tierbench sweep writes them)", dir)
	}
	for _, byStem := range stems {
		for _, runs := range byStem {
			slices.SortFunc(runs, func(a, b *Run) int { return repetition(a.Path) - repetition(b.Path) })
		}
	}
	s := &Sweep{Dir: dir, Name: filepath.Base(filepath.Clean(dir))}
	file, err := sweep.Parse(filepath.Join(dir, SweepFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.Inferred = true
		for _, name := range order {
			s.Experiments = append(s.Experiments, inferExperiment(name, stems[name]))
		}
		return s, nil
	case err != nil:
		return nil, inputError("%v", err)
	}
	s.Name, s.Title, s.Declared = file.Name, file.Title, len(file.Experiments)
	// The points' labels are all the report needs of their
	// configurations, so the workload's defaults and options can stay
	// unknown.
	points, err := file.Labels()
	if err != nil {
		return nil, inputError("%s: %v", filepath.Join(dir, SweepFile), err)
	}
	for i := range file.Experiments {
		x := SweepExperiment{Experiment: &file.Experiments[i]}
		for _, p := range points {
			if p.Experiment != x.Experiment {
				continue
			}
			runs := stems[x.Experiment.Name][fileStem(p.Label())]
			if len(runs) == 0 {
				continue // not run (sweep --experiment), or interrupted
			}
			x.Points = append(x.Points, SweepPoint{Values: p.Values, Runs: runs})
		}
		if len(x.Points) > 0 {
			s.Experiments = append(s.Experiments, placeAxes(x))
		}
	}
	if len(s.Experiments) == 0 {
		return nil, inputError("%s: none of the results matches a point of its %s", dir, SweepFile)
	}
	return s, nil
}

func repetition(path string) int {
	m := resultName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[2])
	return n
}

// placeAxes draws the last axis along x and makes series of the others.
func placeAxes(x SweepExperiment) SweepExperiment {
	for i := range x.Points {
		p := &x.Points[i]
		if len(p.Values) == 0 {
			p.X = "base"
			continue
		}
		last := p.Values[len(p.Values)-1]
		key, value, _ := strings.Cut(last, "=")
		x.XKey, p.X = key, value
		p.Series = strings.Join(p.Values[:len(p.Values)-1], " ")
	}
	return x
}

// inferExperiment recovers an experiment's axes from its results alone
// (a sweep directory from before sweeps kept their file): the settings
// whose values differ between its points, the seed and the result's path
// aside.
func inferExperiment(name string, byStem map[string][]*Run) SweepExperiment {
	stemsSorted := make([]string, 0, len(byStem))
	for stem := range byStem {
		stemsSorted = append(stemsSorted, stem)
	}
	slices.Sort(stemsSorted)
	settings := make([]map[string]string, len(stemsSorted))
	keys := map[string]bool{}
	for i, stem := range stemsSorted {
		settings[i] = flatConfig(byStem[stem][0].Result)
		for k := range settings[i] {
			keys[k] = true
		}
	}
	var axes []string
	for k := range keys {
		for _, s := range settings[1:] {
			if s[k] != settings[0][k] {
				axes = append(axes, k)
				break
			}
		}
	}
	// The innermost axis is the one most likely to be numeric with the
	// most values: put it last, to be drawn along x.
	slices.SortFunc(axes, func(a, b string) int {
		return cmp.Compare(axisRank(a, settings), axisRank(b, settings))
	})
	x := SweepExperiment{Experiment: &sweep.Experiment{Name: name}}
	for i, stem := range stemsSorted {
		p := SweepPoint{Runs: byStem[stem]}
		for _, k := range axes {
			p.Values = append(p.Values, k+"="+settings[i][k])
		}
		x.Points = append(x.Points, p)
	}
	x = placeAxes(x)
	// Series together, and along x in numeric order where x is numeric.
	slices.SortStableFunc(x.Points, func(a, b SweepPoint) int {
		if c := strings.Compare(a.Series, b.Series); c != 0 {
			return c
		}
		fa, oka := numeric(a.X)
		fb, okb := numeric(b.X)
		if oka && okb {
			return cmp.Compare(fa, fb)
		}
		return strings.Compare(a.X, b.X)
	})
	return x
}

// axisRank ranks an axis for x: numeric above not, then by how many
// values it takes.
func axisRank(key string, settings []map[string]string) int {
	distinct := map[string]bool{}
	allNumeric := true
	for _, s := range settings {
		distinct[s[key]] = true
		_, ok := numeric(s[key])
		allNumeric = allNumeric && ok
	}
	rank := len(distinct)
	if allNumeric {
		rank += 1 << 20
	}
	return rank
}

// flatConfig is a run's settings as key → JSON text.
func flatConfig(r *result.Result) map[string]string {
	c := r.Config
	c.Seed, c.Out, c.Quiet = 0, "", false
	b, _ := json.Marshal(c)
	var m map[string]json.RawMessage
	json.Unmarshal(b, &m)
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = strings.Trim(string(v), `"`)
	}
	return out
}

// sweepAxis is how a sweep axis's values are drawn: along a linear axis
// when they are all numbers, or all percentages (percent; a plain 0 among
// them is 0% too: none is none, counted or as a share); as categories
// otherwise, counts and percentages mixed included.
func sweepAxis(values []string) (kind axisKind, percent bool) {
	counts, percents := 0, 0
	for _, v := range values {
		if _, ok := numeric(v); !ok {
			return categoryAxis, false
		}
		switch {
		case strings.HasSuffix(v, "%"):
			percents++
		case v != "0":
			counts++
		}
	}
	if counts > 0 && percents > 0 {
		return categoryAxis, false
	}
	return linearAxis, percents > 0
}

// numeric reads a sweep value as a number: "20", "0.5", "20%".
func numeric(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	return f, err == nil
}

// outcomes are the experiment as internal/sweep's tables take it.
func (x SweepExperiment) outcomes() []sweep.Outcome {
	var out []sweep.Outcome
	for _, p := range x.Points {
		o := sweep.Outcome{Point: sweep.Point{Experiment: x.Experiment, Values: p.Values}}
		for _, r := range p.Runs {
			o.Runs = append(o.Runs, r.Result)
		}
		out = append(out, o)
	}
	return out
}

// sweepFigure is one figure of a sweep's chart.
type sweepFigure struct {
	id, title, unit string
	get             func(*result.Result) float64
}

// sweepPage draws each experiment as the paper's figure: x the varied
// axis, one line per series, the metric with its 95% interval over the
// repetitions, then the p90 and p99 latency.
func sweepPage(s *Sweep) *page {
	title := s.Name
	if s.Title != "" {
		title += ": " + s.Title
	}
	if n := len(s.Experiments); n < s.Declared {
		// The file's title names all its experiments; say which ran.
		var ran []string
		for _, x := range s.Experiments {
			ran = append(ran, x.Experiment.Name)
		}
		title = fmt.Sprintf("%s: %s only (%d of the %d experiments of %q)", s.Name, strings.Join(ran, ", "), n, s.Declared, s.Title)
	}
	p := &page{Title: "tierbench sweep " + title}
	if s.Inferred {
		p.Notes = append(p.Notes, fmt.Sprintf("%s has no %s (sweeps before it kept their file): each experiment's axes are the settings that differ between its results.", s.Dir, SweepFile))
	}
	for ei, x := range s.Experiments {
		e := x.Experiment
		heading := e.Name
		if e.Title != "" {
			heading += ": " + e.Title
		}
		sec := section{ID: "experiment-" + e.Name, Title: heading}
		metricName := x.Points[0].Runs[0].Result.Summary.Metric.Name
		figures := []sweepFigure{
			{"metric", metricName, metricName, func(r *result.Result) float64 { return r.Summary.Metric.Value }},
			{"p90", "p90 latency, all operations (ms)", "p90 (ms)", func(r *result.Result) float64 { return r.TotalLatency.P90 }},
			{"p99", "p99 latency, all operations (ms)", "p99 (ms)", func(r *result.Result) float64 { return r.TotalLatency.P99 }},
		}
		var categories []string
		for _, pt := range x.Points {
			if !slices.Contains(categories, pt.X) {
				categories = append(categories, pt.X)
			}
		}
		kind, percent := sweepAxis(categories)
		xLabel := x.XKey
		switch {
		case xLabel == "":
			xLabel, kind = "point", categoryAxis
		case percent:
			xLabel += " (%)"
			for i, c := range categories {
				if c == "0" {
					categories[i] = "0%"
				}
			}
		}
		for _, f := range figures {
			c := chart{ID: fmt.Sprintf("chart-sweep-%d-%s", ei, f.id), Title: f.title + " by " + xLabel, XLabel: xLabel, YLabel: f.unit, XKind: kind, Categories: categories,
				Data: table{Class: "data", Header: []string{"series", x.XKey, "runs", "mean", "ci_low", "ci_high"}}}
			if len(e.Paper) > 0 && f.id == "metric" {
				c.Data.Header = append(c.Data.Header, "paper")
			}
			bySeries := map[string]int{}
			for _, pt := range x.Points {
				i, ok := bySeries[pt.Series]
				if !ok {
					name := pt.Series
					if name == "" {
						name = f.unit
					}
					i = len(c.Series)
					bySeries[pt.Series] = i
					c.Series = append(c.Series, series{Name: name, Markers: true})
				}
				xs := make([]float64, len(pt.Runs))
				for j, r := range pt.Runs {
					xs[j] = f.get(r.Result)
				}
				est := fromSamples(xs)
				lo, hi, ok := interval(est)
				if !ok {
					lo, hi = math.NaN(), math.NaN()
				}
				xv := float64(slices.Index(categories, pt.X))
				if kind == linearAxis {
					xv, _ = numeric(pt.X)
				}
				sr := &c.Series[i]
				sr.X, sr.Y = append(sr.X, xv), append(sr.Y, est.Value)
				sr.Low, sr.High = append(sr.Low, lo), append(sr.High, hi)
				row := []string{pt.Series, pt.X, strconv.Itoa(len(xs)), num(est.Value), numOrEmpty(lo), numOrEmpty(hi)}
				if len(e.Paper) > 0 && f.id == "metric" {
					paper := ""
					if v, ok := paperFigure(e, pt.Values); ok {
						paper = num(v)
					}
					row = append(row, paper)
				}
				c.Data.Rows = append(c.Data.Rows, row)
			}
			if f.id == "metric" {
				c.Note = "Each point: the mean of its repetitions; bars: the 95% t interval over them (none for a single run; with two, t is 12.7, so the bars are long)."
				if paper, ok := paperSeries(x, kind, categories); ok {
					c.Series = append(c.Series, paper)
					c.Note += " Grey, dashed: the paper's figures, from the sweep file (another machine and era: compare the shapes in the next chart)."
					sec.Charts = append(sec.Charts, c)
					c = shapeChart(fmt.Sprintf("chart-sweep-%d-shape", ei), metricName, xLabel, kind, categories, c.Series)
				}
			}
			sec.Charts = append(sec.Charts, c)
		}
		var tab strings.Builder
		sweep.WriteTable(&tab, x.outcomes())
		sec.Pre, sec.PreTitle = tab.String(), "the sweep's table"
		points := table{Class: "points", Header: []string{"point", "runs", metricName + " mean", "p90", "p99", "verdicts", "files"}}
		for _, pt := range x.Points {
			var verdicts, files []string
			var m, p90, p99 []float64
			for _, r := range pt.Runs {
				verdicts = append(verdicts, r.Result.Verdict())
				files = append(files, filepath.Base(r.Path))
				m, p90, p99 = append(m, r.Result.Summary.Metric.Value), append(p90, r.Result.TotalLatency.P90), append(p99, r.Result.TotalLatency.P99)
			}
			points.Rows = append(points.Rows, []string{strings.Join(pt.Values, " "), strconv.Itoa(len(pt.Runs)), rate(fromSamples(m).Value), latency(fromSamples(p90).Value), latency(fromSamples(p99).Value),
				strings.Join(slices.Compact(verdicts), "; "), strings.Join(files, " ")})
		}
		sec.Tables = []table{points}
		p.Sections = append(p.Sections, sec)
	}
	return p
}

// paperFigure is the sweep file's figure for a point: by its first
// axis's value.
func paperFigure(e *sweep.Experiment, values []string) (float64, bool) {
	if len(values) == 0 {
		return 0, false
	}
	_, v, _ := strings.Cut(values[0], "=")
	f, ok := e.Paper[v]
	return f, ok
}

// paperSeries is the paper's figures along the experiment's x axis: for
// an experiment of one axis (the paper's figures are by the first axis's
// value, so with more axes they would not follow x).
func paperSeries(x SweepExperiment, kind axisKind, categories []string) (series, bool) {
	s := series{Name: "paper", Markers: true, Dashed: true, Colour: "#888"}
	for _, pt := range x.Points {
		v, ok := paperFigure(x.Experiment, pt.Values)
		if !ok || len(pt.Values) != 1 {
			continue
		}
		xv := float64(slices.Index(categories, pt.X))
		if kind == linearAxis {
			xv, _ = numeric(pt.X)
		}
		s.X, s.Y = append(s.X, xv), append(s.Y, v)
	}
	return s, len(s.X) > 0
}

// shapeChart draws the measured metric and the paper's, each relative to
// its own value at the first x both have: the paper ran on another
// machine, so its scale is not the run's, but its shape should be.
func shapeChart(id, metricName, xLabel string, kind axisKind, categories []string, lines []series) chart {
	measured, paper := lines[0], lines[len(lines)-1]
	c := chart{ID: id, Title: metricName + " relative to the first point the paper gives, measured and paper", XLabel: xLabel, YLabel: "relative " + metricName, XKind: kind, Categories: categories,
		Data: table{Class: "data", Header: []string{"x", "measured_relative", "paper_relative"}},
		Note: "Each line divided by its own value at the first point both have: 1 there; the lines agree where the measured figure grows or falls as the paper's did."}
	base := -1
	for i, x := range measured.X {
		if base < 0 && slices.Contains(paper.X, x) {
			base = i
		}
	}
	if base < 0 || measured.Y[base] == 0 || paper.Y[slices.Index(paper.X, measured.X[base])] == 0 {
		return c
	}
	pBase := paper.Y[slices.Index(paper.X, measured.X[base])]
	rel := series{Name: "measured", Markers: true}
	for i, x := range measured.X {
		rel.X, rel.Y = append(rel.X, x), append(rel.Y, measured.Y[i]/measured.Y[base])
	}
	relPaper := series{Name: "paper", Markers: true, Dashed: true, Colour: "#888"}
	for i, x := range paper.X {
		relPaper.X, relPaper.Y = append(relPaper.X, x), append(relPaper.Y, paper.Y[i]/pBase)
	}
	c.Series = []series{rel, relPaper}
	for i, x := range measured.X {
		row := []string{num(x), num(rel.Y[i]), ""}
		if j := slices.Index(paper.X, x); j >= 0 {
			row[2] = num(relPaper.Y[j])
		}
		c.Data.Rows = append(c.Data.Rows, row)
	}
	return c
}

func numOrEmpty(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return num(x)
}

// writeSweepText prints each experiment's table as tierbench sweep did.
func writeSweepText(w io.Writer, s *Sweep) {
	for _, x := range s.Experiments {
		sweep.WriteTable(w, x.outcomes())
		fmt.Fprintln(w)
	}
}
