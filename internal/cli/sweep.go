package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/atomicfile"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/report"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/sweep"
)

func newSweepCmd(env *Env, r *runner.Runner) *cobra.Command {
	f := &runFlags{}
	var options rawOptions
	var dir string
	var repetitions int
	var only []string
	var point int
	var pointOut string
	cmd := &cobra.Command{
		Use:   "sweep FILE.yaml",
		Short: "Run a grid of configurations, one fresh container and database per point",
		Long: `Run a sweep file: a base run configuration, experiments that fix some settings and
vary others along axes, and repetitions of every point. Each run repopulates the database
and starts a fresh container. Results go to a directory: a result file per run, and per
experiment a CSV file and a table (also printed).

Run flags given here override the file's base for every point (an experiment's own
settings and axes still win), e.g. --db to run a paper's experiments on another database.

A point with placement: hosts (root) runs in a child process on hosts of its own, made
before the point and removed after it (docs/hosts.md).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name one sweep FILE.yaml (e.g. experiments/brebner-ran.yaml)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, flag := range []string{"file", "out"} {
				if cmd.Flags().Changed(flag) {
					return config.Usage(fmt.Errorf("--%s does not apply to sweep: the sweep file is the configuration, and --out-dir the directory of its results", flag))
				}
			}
			file, err := sweep.Parse(args[0])
			if err != nil {
				return config.Usage(err)
			}
			name, err := file.Workload()
			if err != nil {
				return config.Usage(err)
			}
			base, _, err := r.Config(name)
			if err != nil {
				return err
			}
			var set []string
			f.fs.Visit(func(fl *pflag.Flag) {
				if !slices.Contains([]string{"out-dir", "repetitions", "experiment", runPointFlag, runPointOutFlag}, fl.Name) {
					set = append(set, fl.Name)
				}
			})
			points, err := file.Points(base, func(c *config.Run) error {
				c.Overlay(&f.values, set)
				return options.set(c, set)
			})
			if err != nil {
				return config.Usage(err)
			}
			if len(only) > 0 {
				points = filterExperiments(points, only)
				if len(points) == 0 {
					return config.Usage(fmt.Errorf("--experiment %v: no such experiment in %s", only, args[0]))
				}
			}
			for _, p := range points {
				if err := r.Validate(p.Config); err != nil {
					return config.Usage(fmt.Errorf("%s %s: %w", p.Experiment.Name, p.Label(), err))
				}
			}
			if point != 0 || pointOut != "" {
				return runOnePoint(cmd.Context(), r, points, point, pointOut)
			}
			if err := checkHosts(points); err != nil {
				return err
			}
			if cmd.Flags().Changed("repetitions") {
				file.Repetitions = repetitions
			}
			if file.Repetitions < 1 {
				return config.Usage(fmt.Errorf("--repetitions %d: must be at least 1", file.Repetitions))
			}
			if dir == "" {
				dir = filepath.Join("results", fmt.Sprintf("sweep-%s-%s", file.Name, time.Now().UTC().Format("20060102-150405")))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return infra(err)
			}
			// tierbench report reads the experiments' axes and titles
			// from the directory's own copy of the file.
			spec, err := os.ReadFile(args[0])
			if err == nil {
				err = atomicfile.Write(filepath.Join(dir, report.SweepFile), spec, 0o644)
			}
			if err != nil {
				return infra(err)
			}
			out := cmd.OutOrStdout()
			total := len(points) * file.Repetitions
			fmt.Fprintf(out, "sweep %s: %d points × %d repetitions = %d runs; results in %s\n", file.Name, len(points), file.Repetitions, total, dir)
			n := 0
			done := func(p sweep.Point, rep int, res *result.Result) {
				n++
				if f.values.Quiet {
					return
				}
				fmt.Fprintf(out, "  [%d/%d] %s %s (run %d): %.1f %s, %s\n", n, total, p.Experiment.Name, p.Label(), rep,
					res.Summary.Metric.Value, res.Summary.Metric.Name, res.Verdict())
			}
			outcomes, runErr := sweep.Execute(cmd.Context(), &sweepRunner{env: env, r: r}, points, file.Repetitions, dir, done)
			fmt.Fprintln(out)
			if err := sweep.Report(out, dir, outcomes); err != nil {
				return infra(err)
			}
			fmt.Fprintf(out, "tables and CSV files: %s\n", dir)
			if runErr != nil {
				if errors.Is(runErr, sweep.ErrInterrupted) {
					return &exitError{code: ExitFailed, err: runErr}
				}
				return infra(runErr)
			}
			for _, o := range outcomes {
				for _, res := range o.Runs {
					if !res.Summary.Passed {
						return &exitError{code: ExitFailed, err: fmt.Errorf("%s %s: %s (see its result file)", o.Point.Experiment.Name, o.Point.Label(), res.Verdict())}
					}
				}
			}
			return nil
		},
	}
	addRunFlags(cmd.Flags(), f)
	options = bindRawOptions(env, cmd.Flags())
	cmd.Flags().MarkHidden("file")
	cmd.Flags().MarkHidden("out")
	cmd.Flags().StringVar(&dir, "out-dir", "", "directory for the results (default results/sweep-NAME-TIME)")
	cmd.Flags().IntVar(&repetitions, "repetitions", 0, "runs per point, overriding the file's repetitions")
	cmd.Flags().StringArrayVar(&only, "experiment", nil, "run only this experiment (repeatable)")
	cmd.Flags().IntVar(&point, runPointFlag, 0, "run only this point (1-based), on the hosts the sweep made (the sweep's own)")
	cmd.Flags().StringVar(&pointOut, runPointOutFlag, "", "the result file of --run-point (the sweep's own)")
	cmd.Flags().MarkHidden(runPointFlag)
	cmd.Flags().MarkHidden(runPointOutFlag)
	return cmd
}

func filterExperiments(points []sweep.Point, names []string) []sweep.Point {
	var out []sweep.Point
	for _, p := range points {
		for _, n := range names {
			if p.Experiment.Name == n {
				out = append(out, p)
			}
		}
	}
	return out
}
