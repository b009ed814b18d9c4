package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/livemetrics"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
)

func newRunCmd(env *Env, r *runner.Runner) *cobra.Command {
	return workloadCommands(env, func() (*cobra.Command, *runFlags) { return newRunCmdFor(env, r) })
}

func newRunCmdFor(env *Env, r *runner.Runner) (*cobra.Command, *runFlags) {
	f := &runFlags{}
	var cpuProfile, memProfile string
	var mf metricsFlags
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
			plan, err := hostsPlan(cfg)
			if err != nil {
				return err
			}
			if placement.Mode(cfg.Placement) == placement.Hosts && plan == nil {
				if err := r.Validate(cfg); err != nil {
					return err
				}
				return superviseHosts(cmd.Context(), env, r, cfg)
			}
			r := r
			if plan != nil {
				inner := *r
				inner.Hosts, r = plan, &inner
			}
			f.printNotes(env.Stderr)
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
			if err := r.Validate(cfg); err != nil {
				return err
			}
			if err := mf.guardReceiver(cmd.Context(), cfg, env.Stderr); err != nil {
				return err
			}
			return measure(cmd.Context(), env, out, r, cfg, &mf, func(run *runner.Runner) (*result.Result, error) {
				return run.Run(cmd.Context(), cfg)
			})
		},
	}
	addRunFlags(cmd.Flags(), f)
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole command to this file (for tuning tierbench itself)")
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write a Go allocation profile of the whole command to this file (for tuning tierbench itself)")
	addMetricsFlags(cmd.Flags(), &mf, true)
	return cmd, f
}

// measure performs a run (run or drive) with a progress line, prints its
// summary and writes its result file; the error carries the exit code.
func measure(ctx context.Context, env *Env, out io.Writer, r *runner.Runner, cfg config.Run, mf *metricsFlags, do func(*runner.Runner) (*result.Result, error)) error {
	resFile, err := reserveResult(cfg)
	if err != nil {
		return err
	}
	live, err := mf.start(env.Stderr, cfg.Workload)
	if err != nil {
		resFile.discard()
		return err
	}
	run := *r
	var progress *progressLine
	showProgress := env.StdoutIsTerminal && !cfg.Quiet
	if showProgress || live != nil {
		run.Started = func(p runner.Progress) {
			if live != nil {
				live.Entities(p.Entities)
				live.Watch(livemetrics.Run{Recorder: p.Recorder, Began: p.Began, Stage: p.Stage, Agents: p.Agents})
			}
			if showProgress {
				progress = startProgress(out, p)
			}
		}
	}
	// A second interrupt does not wait for the run: its result is what
	// was measured until then.
	var partial atomic.Pointer[func() *result.Result]
	run.Abortable = func(p func() *result.Result) { partial.Store(&p) }
	aborted := env.Abort.take()
	type ended struct {
		res *result.Result
		err error
	}
	done := make(chan ended, 1)
	go func() {
		res, err := do(&run)
		done <- ended{res, err}
	}()
	var res *result.Result
	cut := false // by the abort, the run still going
	select {
	case e := <-done:
		res, err = e.res, e.err
	case <-aborted:
		select {
		case e := <-done: // ended meanwhile: the whole result
			res, err = e.res, e.err
		default:
			cut, err = true, nil
			if p := partial.Load(); p != nil {
				res = (*p)()
			}
		}
	}
	progress.stop()
	defer mf.finish(ctx, live)
	if res == nil && cut {
		resFile.discard()
		return &exitError{code: ExitFailed, err: errors.New("interrupted twice before a result could be built: none was written")}
	}
	if res == nil {
		resFile.discard()
		return infra(err)
	}
	// Whatever happened, what was measured is shown and kept.
	result.WriteSummary(out, res)
	written, werr := resFile.write(res, env.Stderr)
	if written {
		fmt.Fprintf(out, "result: %s\n", resFile.path)
	}
	if werr != nil {
		return infra(errors.Join(err, werr))
	}
	if err != nil {
		return infra(err)
	}
	if !res.Summary.Passed {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s (see above)", res.Verdict())}
	}
	return nil
}

// resultFile is where a run's result goes, made sure of before the run.
type resultFile struct {
	path string
	// reserved: the file was created empty for this run, to be removed
	// if the run writes no result.
	reserved bool
}

// reserveResult checks that the result can be written before anything
// runs: --out's directory must exist and take the file; a default name
// (results/WORKLOAD-TIME.json) is created at once, with a suffix when a
// run started in the same second has it already, so no two runs share one.
func reserveResult(cfg config.Run) (*resultFile, error) {
	if cfg.Out != "" {
		_, statErr := os.Stat(cfg.Out)
		f, err := os.OpenFile(cfg.Out, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, config.Usage(fmt.Errorf("--out %s: the result cannot be written there: %v", cfg.Out, errors.Unwrap(err)))
		}
		f.Close()
		return &resultFile{path: cfg.Out, reserved: errors.Is(statErr, os.ErrNotExist)}, nil
	}
	if err := os.MkdirAll("results", 0o755); err != nil {
		return nil, infra(fmt.Errorf("results directory: %w (give --out FILE elsewhere)", err))
	}
	base := filepath.Join("results", fmt.Sprintf("%s-%s", cfg.Workload, time.Now().Format("20060102-150405")))
	for n := 1; ; n++ {
		path := base + ".json"
		if n > 1 {
			path = fmt.Sprintf("%s-%d.json", base, n)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, infra(fmt.Errorf("result file: %w (give --out FILE elsewhere)", err))
		}
		f.Close()
		return &resultFile{path: path, reserved: true}, nil
	}
}

// write writes r whole to its file. Where that fails (a full disk), the
// reserved empty file goes, and r is written to a fallback file in the
// temporary directory or the home directory, which f.path then names;
// the error says both. As a last resort r goes to stderr: a run is never
// lost. written: a file holds r.
func (f *resultFile) write(r *result.Result, stderr io.Writer) (written bool, err error) {
	if err = r.WriteFile(f.path); err == nil {
		return true, nil
	}
	f.discard()
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is a temporary file's: the cause says it all
	}
	name := fmt.Sprintf("tierbench-%s-%s-%d.json", r.Workload, time.Now().Format("20060102-150405"), os.Getpid())
	home, _ := os.UserHomeDir()
	for _, dir := range []string{os.TempDir(), home} {
		if dir == "" {
			continue
		}
		fallback := filepath.Join(dir, name)
		if r.WriteFile(fallback) == nil {
			err = fmt.Errorf("the result could not be written to %s: %w; it was written to %s instead", f.path, err, fallback)
			f.path = fallback
			return true, err
		}
	}
	b, merr := r.MarshalFile()
	if merr == nil {
		fmt.Fprintf(stderr, "tierbench: the result could not be written to %s nor to a fallback file; here it is:\n", f.path)
		stderr.Write(b)
	}
	return false, fmt.Errorf("the result could not be written to %s: %w, nor to a fallback file (it is on stderr)", f.path, err)
}

// discard removes a reserved file no result was written to.
func (f *resultFile) discard() {
	if f.reserved {
		os.Remove(f.path)
	}
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
