package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
)

func newRunCmd(env *Env, r *runner.Runner) *cobra.Command {
	f := &runFlags{}
	var cpuProfile, memProfile string
	cmd := &cobra.Command{
		Use:   "run WORKLOAD",
		Short: "(Re)populate, run, check consistency and report",
		Long: `Run a workload: repopulate the database (unless --no-load), drive it with the
configured clients, check the database's consistency, print a summary and write the
result file (tierbench/result/v1 JSON).`,
		Args: workloadArg(env),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(r, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return config.Usage(err)
				}
				defer stop()
			}
			if memProfile != "" {
				defer writeAllocProfile(memProfile, env.Stderr)
			}
			run := *r
			var progress *progressLine
			if env.StdoutIsTerminal && !cfg.Quiet {
				run.Started = func(p runner.Progress) { progress = startProgress(out, p) }
			}
			res, err := run.Run(cmd.Context(), cfg)
			progress.stop()
			if err != nil {
				return infra(err)
			}
			result.WriteSummary(out, res)
			path := cfg.Out
			if path == "" {
				path = filepath.Join("results", fmt.Sprintf("%s-%s.json", cfg.Workload, res.StartedAt.Format("20060102-150405")))
				if err := os.MkdirAll("results", 0o755); err != nil {
					return infra(err)
				}
			}
			if err := res.WriteFile(path); err != nil {
				return infra(err)
			}
			fmt.Fprintf(out, "result: %s\n", path)
			if !res.Summary.Passed {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%s (see above)", res.Verdict())}
			}
			return nil
		},
	}
	addRunFlags(cmd.Flags(), f)
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole command to this file (for tuning tierbench itself)")
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write a Go allocation profile of the whole command to this file (for tuning tierbench itself)")
	return cmd
}

// writeAllocProfile writes the allocations made since the start (go tool
// pprof -sample_index=alloc_objects).
func writeAllocProfile(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "tierbench: --memprofile: %v\n", err)
	}
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// progressLine rewrites one terminal line each second while a run lasts.
type progressLine struct {
	done chan struct{}
	over chan struct{}
}

// progressDelay keeps short runs free of a progress line.
const progressDelay = 2 * time.Second

func startProgress(w interface{ Write([]byte) (int, error) }, p runner.Progress) *progressLine {
	pl := &progressLine{done: make(chan struct{}), over: make(chan struct{})}
	go func() {
		defer close(pl.over)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var lastOps int64
		shown := false
		for {
			select {
			case <-pl.done:
				if shown {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-tick.C:
			}
			elapsed := time.Since(p.Began)
			if stage := stageOf(p); stage != "" {
				if elapsed >= progressDelay {
					shown = true
					fmt.Fprintf(w, "\r\033[K  %5.0fs  %s", elapsed.Seconds(), stage)
				}
				continue
			}
			ops, errs := p.Completed()
			rate := ops - lastOps
			lastOps = ops
			if elapsed < progressDelay {
				continue
			}
			shown = true
			done := ""
			switch {
			case p.Total > 0:
				done = fmt.Sprintf("%d/%d ops (%.0f%%)", ops, p.Total, 100*float64(ops)/float64(p.Total))
			case p.Duration > 0:
				done = fmt.Sprintf("%d ops, %s left", ops, max(p.Duration-elapsed, 0).Round(time.Second))
			}
			fmt.Fprintf(w, "\r\033[K  %5.0fs  %s  %d/s  %d errors", elapsed.Seconds(), done, rate, errs)
		}
	}()
	return pl
}

func (pl *progressLine) stop() {
	if pl == nil {
		return
	}
	close(pl.done)
	<-pl.over
}

func stageOf(p runner.Progress) string {
	if p.Stage == nil {
		return ""
	}
	return p.Stage()
}
