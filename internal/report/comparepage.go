package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// runLabels name each run in legends: its group's letter, and its place in
// the group when the group holds repetitions.
func runLabels(groups []Group) map[*Run]string {
	labels := make(map[*Run]string)
	for _, g := range groups {
		for i, r := range g.Runs {
			l := g.Label
			if len(g.Runs) > 1 {
				l += strconv.Itoa(i + 1)
			}
			labels[r] = l + " " + r.Name
		}
	}
	return labels
}

func comparisonTables(c *Comparison) []table {
	side := table{Class: "compare", Header: []string{"figure"}}
	diffs := table{Class: "differences", Header: []string{"figure"}}
	for _, g := range c.Groups {
		h := g.Label
		if len(g.Runs) > 1 {
			h += fmt.Sprintf(" (mean of %d)", len(g.Runs))
		}
		side.Header = append(side.Header, h)
	}
	for _, g := range c.Groups[1:] {
		diffs.Header = append(diffs.Header, g.Label+" − A, 95% CI")
	}
	for _, f := range c.Figures {
		// The page's rules: a latency with its unit, a rate to 3
		// significant digits.
		format := rate
		if strings.HasSuffix(f.Name, " ms") {
			format = latency
		}
		signedFormat := func(x float64) string {
			if x > 0 {
				return "+" + format(x)
			}
			return format(x)
		}
		row := []string{f.Name}
		for _, e := range f.Estimates {
			cell := format(e.Value)
			if lo, hi, ok := interval(e); ok {
				// Every figure compared (a rate, a latency) is positive:
				// the t interval is cut at 0 (a truncated interval keeps
				// its 95% coverage; the difference's interval is not cut).
				cell += " [" + format(math.Max(lo, 0)) + ", " + format(hi) + "]"
			}
			row = append(row, cell)
		}
		side.Rows = append(side.Rows, row)
		drow := []string{f.Name}
		for _, d := range f.Diffs[1:] {
			drow = append(drow, diffText(d, signedFormat))
		}
		diffs.Rows = append(diffs.Rows, drow)
	}
	return []table{side, diffs}
}

// runLetter is a run's label without its file name ("B2" of "B2 b-2").
func runLetter(label string) string {
	l, _, _ := strings.Cut(label, " ")
	return l
}

// settingsThatDiffer is the configuration keys (the seed, the result
// file's path and the progress line aside) whose values are not the same
// in every group, with each group's value; false when none differs.
func settingsThatDiffer(groups []Group) (table, bool) {
	t := table{Class: "settings", Header: []string{"setting that differs"}}
	flat := make([]map[string]string, len(groups))
	keys := map[string]bool{}
	for i, g := range groups {
		t.Header = append(t.Header, g.Label)
		flat[i] = flatConfig(g.Runs[0].Result)
		for k := range flat[i] {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		row := []string{k}
		differs := false
		for i := range groups {
			v, ok := flat[i][k]
			if !ok {
				v = "(none)"
			}
			row = append(row, v)
			differs = differs || v != row[1]
		}
		if differs {
			t.Rows = append(t.Rows, row)
		}
	}
	return t, len(t.Rows) > 0
}

// comparePage sets several runs side by side.
func comparePage(runs []*Run) (*page, error) {
	groups := Groups(runs)
	c := Compare(groups)
	labels := runLabels(groups)
	p := &page{Title: fmt.Sprintf("tierbench comparison of %d runs", len(runs))}

	who := table{Class: "runs", Header: []string{"run", "file", "what", "verdict"}}
	for _, g := range groups {
		for _, r := range g.Runs {
			who.Rows = append(who.Rows, []string{labels[r], r.Path, describe(r.Result), r.Result.Verdict()})
		}
	}
	runsSection := section{ID: "runs", Title: "Runs", Tables: []table{who},
		Notes: []string{"A is the baseline. Runs of one configuration (all settings but the seed) are repetitions and count as one group."}}
	if d, ok := settingsThatDiffer(groups); ok {
		runsSection.Tables = append(runsSection.Tables, d)
	} else if len(groups) > 1 {
		runsSection.Notes = append(runsSection.Notes, "The groups have the same settings: any difference is the seed's, the machine's or chance's.")
	}
	p.Sections = append(p.Sections, runsSection)

	notes := []string{"Each cell: the group's figure and its 95% confidence interval; differences from A with theirs (Welch's t), \"not significant\" when the interval holds 0."}
	for gi, g := range groups {
		notes = append(notes, g.Label+": "+c.Methods[gi]+".")
	}
	notes = append(notes, "A latency percentile's batches are the percentiles of each batch's merged per-second histograms; the interval is centred on the difference of the runs' own figures (sectioning).")
	p.Sections = append(p.Sections, section{ID: "comparison", Title: "Side by side", Tables: comparisonTables(c), Notes: notes})

	// Over time: one line per run.
	tput := chart{ID: "chart-throughput", Title: "Throughput (operations completed per second)", XLabel: "time since the start (s)", YLabel: "operations/s",
		Data: table{Class: "data", Header: []string{"t_s"}}}
	lat := chart{ID: "chart-latency", Title: "p99 latency per second, all operations (ms)", XLabel: "time since the start (s)", YLabel: "p99 (ms)",
		Data: table{Class: "data", Header: []string{"t_s"}}}
	longest := 0
	var all [][]int64
	var p99s [][]float64
	for _, r := range runs {
		secs := perSecond(r.Result)
		longest = max(longest, len(secs))
		s, l := series{Name: labels[r]}, series{Name: labels[r]}
		var ops []int64
		var lats []float64
		for _, x := range secs {
			t := float64(x.T)
			y := x.P99Ms
			if x.Ops == 0 {
				y = math.NaN()
			}
			s.X, s.Y = append(s.X, t), append(s.Y, float64(x.Ops))
			l.X, l.Y = append(l.X, t), append(l.Y, y)
			ops, lats = append(ops, x.Ops), append(lats, x.P99Ms)
		}
		all, p99s = append(all, ops), append(p99s, lats)
		tput.Series, lat.Series = append(tput.Series, s), append(lat.Series, l)
		tput.Data.Header = append(tput.Data.Header, labels[r])
		lat.Data.Header = append(lat.Data.Header, labels[r])
	}
	for t := 1; t <= longest; t++ {
		trow, lrow := []string{strconv.Itoa(t)}, []string{strconv.Itoa(t)}
		for i := range runs {
			if t <= len(all[i]) {
				trow, lrow = append(trow, count(all[i][t-1])), append(lrow, num(p99s[i][t-1]))
			} else {
				trow, lrow = append(trow, ""), append(lrow, "")
			}
		}
		tput.Data.Rows, lat.Data.Rows = append(tput.Data.Rows, trow), append(lat.Data.Rows, lrow)
	}
	// Shade the ramps when every run has the same; otherwise they would
	// hide one another.
	bands := rampBands(runs[0].Result)
	for _, r := range runs[1:] {
		if !slices.Equal(rampBands(r.Result), bands) {
			bands = nil
			break
		}
	}
	tput.Bands, lat.Bands = bands, bands
	p.Sections = append(p.Sections, section{ID: "over-time", Title: "Over time", Notes: []string{rampNote}, Charts: []chart{tput, lat}})

	spec := section{ID: "spectrum", Title: "Latency percentile spectra"}
	ops := runs[0].Result.OperationOrder
	for _, r := range runs {
		if r.Result.Histograms == nil {
			spec.Notes = append(spec.Notes, labels[r]+": "+noHistograms(r.Result)+".")
		}
		ops = slices.DeleteFunc(slices.Clone(ops), func(op string) bool { return !slices.Contains(r.Result.OperationOrder, op) })
	}
	if len(spec.Notes) == 0 {
		// The most frequent operations drawn, the others each behind its
		// name: a page of 27 charts is not read.
		ops = slices.DeleteFunc(byCount(runs[0].Result), func(op string) bool { return !slices.Contains(ops, op) })
		if len(ops) > spectrumLines {
			spec.PickLabel = fmt.Sprintf("The %d other operations, by count: open one to see its spectra.", len(ops)-spectrumLines)
		}
		for i, op := range append([]string{""}, ops...) {
			name := op
			if op == "" {
				name = "all operations"
			}
			c := chart{ID: "chart-spectrum-" + strconv.Itoa(i), Title: "Latency by percentile: " + name + " (ms)", XLabel: "percentile", YLabel: "latency (ms)", XKind: percentileAxis,
				Note: spectrumNote, Data: table{Class: "data", Header: []string{"run", "percentile", "latency_ms"}}}
			for _, r := range runs {
				pts, err := spectrumOf(r.Result, op)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", r.Path, err)
				}
				s, rows := spectrumSeries(labels[r], pts)
				c.Series = append(c.Series, s)
				c.Data.Rows = append(c.Data.Rows, rows...)
			}
			if i > spectrumLines {
				spec.Picks = append(spec.Picks, pick{Name: op, Chart: c})
				continue
			}
			spec.Charts = append(spec.Charts, c)
		}
	}
	p.Sections = append(p.Sections, spec)

	perOp := table{Class: "operations", Header: []string{"operation"}}
	for _, r := range runs {
		perOp.Header = append(perOp.Header, runLetter(labels[r])+" per s", runLetter(labels[r])+" p99")
	}
	for _, op := range runs[0].Result.OperationOrder {
		row := []string{op}
		for _, r := range runs {
			o, ok := r.Result.Operations[op]
			if !ok || r.Result.Summary.ElapsedS == 0 {
				row = append(row, "", "")
				continue
			}
			row = append(row, rate(float64(o.Completed)/r.Result.Summary.ElapsedS), latency(o.Latency.P99))
		}
		perOp.Rows = append(perOp.Rows, row)
	}
	p.Sections = append(p.Sections, section{ID: "operations", Title: "Operations", Tables: []table{perOp}})
	return p, nil
}
