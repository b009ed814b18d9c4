package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// RegressionKeys are the figures --max-regression bounds, as a
// comparison sets them side by side.
var RegressionKeys = []string{"metric", "tps", "p50", "p99"}

// MaxRegression is how much worse than the baseline (A) each figure may
// get, in percent of the baseline's, by key; a key absent is not judged.
type MaxRegression map[string]float64

// ParseMaxRegression reads --max-regression: one share for every figure
// (5%), or shares by figure (tps=5%,p99=10%). The % may be left out.
func ParseMaxRegression(s string) (MaxRegression, error) {
	fail := func(format string, args ...any) (MaxRegression, error) {
		return nil, fmt.Errorf("--max-regression %q: %s", s, fmt.Sprintf(format, args...))
	}
	share := func(v string) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0, fmt.Errorf("%q is not a share of 0%% or more (examples: 5%%, 0.5%%)", v)
		}
		return x, nil
	}
	all := strings.ReplaceAll(s, " ", "")
	if !strings.Contains(all, "=") {
		x, err := share(all)
		if err != nil {
			return fail("%v; or give shares by figure, as tps=5%%,p99=10%% (figures: %s)", err, strings.Join(RegressionKeys, ", "))
		}
		m := MaxRegression{}
		for _, k := range RegressionKeys {
			m[k] = x
		}
		return m, nil
	}
	m := MaxRegression{}
	for _, part := range strings.Split(all, ",") {
		key, v, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			return fail("%q is not FIGURE=SHARE, as tps=5%%", part)
		case !slices.Contains(RegressionKeys, key):
			return fail("unknown figure %q; figures: %s", key, strings.Join(RegressionKeys, ", "))
		}
		if _, dup := m[key]; dup {
			return fail("%s given twice", key)
		}
		x, err := share(v)
		if err != nil {
			return fail("%s: %v", key, err)
		}
		m[key] = x
	}
	return m, nil
}

// String is the limits as the flag takes them.
func (m MaxRegression) String() string {
	var parts []string
	for _, k := range RegressionKeys {
		if x, ok := m[k]; ok {
			parts = append(parts, k+"="+strconv.FormatFloat(x, 'g', -1, 64)+"%")
		}
	}
	return strings.Join(parts, ",")
}

// Regression is one group's figure judged against the baseline's.
type Regression struct {
	Group  string
	Figure Figure
	Diff   Difference
	// Worse is how much worse than the baseline the figure got, in
	// percent of the baseline's (negative: better); NaN when the
	// baseline's is zero.
	Worse float64
	Limit float64
	// Regressed: worse by more than Limit, and the difference's interval
	// excludes zero on the worse side (or there is no interval).
	Regressed bool
}

// Regressions judges every group after the first against it, on each
// figure m bounds.
func (c *Comparison) Regressions(m MaxRegression) []Regression {
	var out []Regression
	for gi := 1; gi < len(c.Groups); gi++ {
		for _, f := range c.Figures {
			limit, ok := m[f.Key]
			if !ok {
				continue
			}
			d := f.Diffs[gi]
			worse, beyondInterval := d.Percent, d.Low > 0
			if f.HigherIsBetter {
				worse, beyondInterval = -d.Percent, d.High < 0
			}
			out = append(out, Regression{Group: c.Groups[gi].Label, Figure: f, Diff: d, Worse: worse, Limit: limit,
				Regressed: worse > limit && (beyondInterval || !d.HasCI)})
		}
	}
	return out
}

// WriteRegressions prints the verdict on each figure bounded, and
// returns the regressed ones in a line for the error.
func WriteRegressions(w io.Writer, m MaxRegression, rs []Regression) (regressed []string) {
	width := 0
	for _, r := range rs {
		width = max(width, len(r.Figure.Name))
		if r.Regressed {
			regressed = append(regressed, fmt.Sprintf("%s %s %.1f%% worse (limit %g%%)", r.Group, r.Figure.Name, r.Worse, r.Limit))
		}
	}
	head := fmt.Sprintf("%d of %d beyond --max-regression %s", len(regressed), len(rs), m)
	if len(regressed) == 0 {
		head = fmt.Sprintf("all %d within --max-regression %s", len(rs), m)
	}
	fmt.Fprintf(w, "\nregressions from A: %s\n", head)
	for _, r := range rs {
		mark, verdict := "ok  ", ""
		switch {
		case r.Regressed:
			mark, verdict = "FAIL", fmt.Sprintf("%.1f%% worse, beyond %g%%", r.Worse, r.Limit)
		case math.IsNaN(r.Worse):
			verdict = "A's figure is 0: no relative change to judge"
		case r.Worse > r.Limit:
			verdict = fmt.Sprintf("%.1f%% worse, beyond %g%%, but its interval holds 0", r.Worse, r.Limit)
		case r.Worse > 0:
			verdict = fmt.Sprintf("%.1f%% worse, within %g%%", r.Worse, r.Limit)
		default:
			verdict = fmt.Sprintf("not worse, limit %g%%", r.Limit)
		}
		fmt.Fprintf(w, "  %s %s %-*s %s: %s\n", mark, r.Group, width, r.Figure.Name, DiffText(r.Diff), verdict)
	}
	return regressed
}
