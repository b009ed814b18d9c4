package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/tierbench/tierbench/internal/result"
)

// WriteText writes the terminal's report: one run's summary as the run
// printed it; for several, each run in a line, the figures side by side
// and every group's difference from the first with its interval.
func WriteText(w io.Writer, runs []*Run) error {
	if len(runs) == 1 {
		result.WriteSummary(w, runs[0].Result)
		return nil
	}
	writeComparison(w, Compare(Groups(runs)))
	return nil
}

// describe is a run in one line: what ran, on what, when.
func describe(r *result.Result) string {
	c := r.Config
	parts := []string{r.Workload}
	if r.Environment.DB != "" {
		parts = append(parts, r.Environment.DB)
	}
	if r.Environment.Target != "" {
		parts = append(parts, "site "+r.Environment.Target)
	}
	parts = append(parts, fmt.Sprintf("%d clients", c.Clients), fmt.Sprintf("%d server threads", c.ServerThreads))
	if c.Persistence != "" {
		parts = append(parts, "persistence "+string(c.Persistence))
	}
	parts = append(parts, fmt.Sprintf("seed %d", r.Seed), "started "+r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"))
	return strings.Join(parts, " · ")
}

func writeComparison(w io.Writer, c *Comparison) {
	fmt.Fprintln(w, "runs (A is the baseline; runs of one configuration are repetitions):")
	for _, g := range c.Groups {
		for i, r := range g.Runs {
			l := g.Label
			if i > 0 {
				l = ""
			}
			fmt.Fprintf(w, "  %-3s %s: %s, %s\n", l, r.Path, describe(r.Result), r.Result.Verdict())
		}
	}
	fmt.Fprintln(w)

	width := len("figure")
	for _, f := range c.Figures {
		width = max(width, len(f.Name))
	}
	fmt.Fprintf(w, "%-*s", width, "figure")
	for _, g := range c.Groups {
		head := g.Label
		if len(g.Runs) > 1 {
			head += fmt.Sprintf(" (mean of %d)", len(g.Runs))
		}
		fmt.Fprintf(w, " %14s", head)
	}
	fmt.Fprintln(w)
	for _, f := range c.Figures {
		fmt.Fprintf(w, "%-*s", width, f.Name)
		for _, e := range f.Estimates {
			fmt.Fprintf(w, " %14s", plain(e.Value))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "difference from A, %.0f%% confidence interval:\n", Confidence*100)
	for gi, g := range c.Groups[1:] {
		fmt.Fprintf(w, "  %s − A\n", g.Label)
		for _, f := range c.Figures {
			fmt.Fprintf(w, "    %-*s %s\n", width, f.Name, DiffText(f.Diffs[gi+1]))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "intervals: Welch's t on each side's estimate and standard error, where")
	for gi, g := range c.Groups {
		fmt.Fprintf(w, "  %s: %s\n", g.Label, c.Methods[gi])
	}
	fmt.Fprintln(w, "  (a latency percentile's batches are the percentiles of each batch's merged per-second histograms;")
	fmt.Fprintln(w, "  the interval is centred on the difference of the runs' own figures; \"not significant\": it holds 0)")
}
