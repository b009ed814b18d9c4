package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/atomicfile"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/report"
)

func newReportCmd(_ *Env) *cobra.Command {
	var htmlPath, csvDir string
	var noHTML bool
	var maxRegression string
	cmd := &cobra.Command{
		Use:   "report RESULT.json… | SWEEP-DIR",
		Short: "Text and HTML reports of runs, comparisons with confidence intervals, a sweep's figures",
		Long: `Report one run again: its summary, and an HTML page beside the result (charts of
throughput and latency over time with the ramps shaded, each operation's latency
percentile spectrum, the operations, the container's counters, the tiers).

Several results are compared side by side: the metric, throughput, p50 and p99, and
each one's difference from the first with its 95% confidence interval. Results of one
configuration (all settings but the seed) count as repetitions, and their spread gives
the interval; a single run's comes from batch means of its steady-state seconds.

A sweep directory (tierbench sweep's --out-dir) gives each experiment's figure: x the
varied axis, one line per series, the metric with its interval over repetitions, p90
and p99.

--csv DIR writes each run's per-second series per operation: t_s, phase (ramp-up,
steady, ramp-down), operation, count, errors, p50_ms, p90_ms, p99_ms, p999_ms (to the
microsecond; operation "all": every operation together).
The HTML page is one file with no scripts and nothing fetched from the network.

--max-regression gates a comparison (for CI): it exits 1 when a run (B, …) is worse
than the first (A, the baseline) by more than the share allowed AND its difference's
95% interval excludes zero on the worse side (without an interval, on the figures
alone). Give one share for every figure (5%) or shares by figure (tps=5%,p99=10%);
the figures are metric, tps, p50 and p99 (see docs/thresholds.md).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if noHTML && cmd.Flags().Changed("html") {
				return config.Usage(errors.New("--html and --no-html both given: choose one"))
			}
			var limits report.MaxRegression
			if cmd.Flags().Changed("max-regression") {
				var err error
				if limits, err = report.ParseMaxRegression(maxRegression); err != nil {
					return config.Usage(err)
				}
			}
			// Every input problem, a damaged histogram in a result
			// included, is the user's to fix: exit 2 with its one line.
			in, err := report.Read(args)
			if err != nil {
				return config.Usage(err)
			}
			if limits != nil && (in.Sweep != nil || len(in.Runs) < 2) {
				return config.Usage(errors.New("--max-regression judges runs against the first (A, the baseline): give two or more result files"))
			}
			var text, page bytes.Buffer
			if err := in.WriteText(&text); err != nil {
				return config.Usage(err)
			}
			var regressed []string
			if limits != nil {
				regressed = report.WriteRegressions(&text, limits, report.Compare(report.Groups(in.Runs)).Regressions(limits))
			}
			if !noHTML {
				if err := in.WriteHTML(&page); err != nil {
					return config.Usage(err)
				}
			}
			out := cmd.OutOrStdout()
			out.Write(text.Bytes())
			if !noHTML {
				if htmlPath == "" {
					htmlPath = in.DefaultHTML()
				}
				if err := atomicfile.Write(htmlPath, page.Bytes(), 0o644); err != nil {
					return config.Usage(fmt.Errorf("--html %s: the report cannot be written there: %v", htmlPath, errors.Unwrap(err)))
				}
				fmt.Fprintf(out, "\nHTML report: %s\n", htmlPath)
			}
			if csvDir != "" {
				paths, err := in.WriteCSV(csvDir)
				if err != nil {
					return config.Usage(fmt.Errorf("--csv %s: the series cannot be written there: %v", csvDir, err))
				}
				files := "CSV files"
				if len(paths) == 1 {
					files = "CSV file"
				}
				fmt.Fprintf(out, "per-second series: %d %s in %s\n", len(paths), files, csvDir)
			}
			if len(regressed) > 0 {
				return &exitError{code: ExitFailed, err: fmt.Errorf("regressed beyond --max-regression: %s", strings.Join(regressed, "; "))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlPath, "html", "", "write the HTML report to FILE (default: RESULT.html beside one result, report.html in a sweep directory, compare.html here for several results)")
	cmd.Flags().StringVar(&csvDir, "csv", "", "write each run's per-second, per-operation series as CSV files into DIR")
	cmd.Flags().BoolVar(&noHTML, "no-html", false, "print the text report only")
	cmd.Flags().StringVar(&maxRegression, "max-regression", "", "exit 1 when a run is worse than the first (A) beyond this share and beyond its 95% interval: SHARE for every figure (5%) or FIGURE=SHARE,… (tps=5%,p99=10%); figures: "+strings.Join(report.RegressionKeys, ", "))
	return cmd
}
