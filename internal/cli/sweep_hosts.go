package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/hosts"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/sweep"
)

// A sweep's points of --placement hosts (decision 0037). A point's driver
// must run on its driver's host, which a Go process cannot enter whole
// (decision 0027), so such a point is not run in the sweep's process:
// the sweep makes the point's hosts, runs itself again on the driver's
// host told to run that one point (the hidden --run-point N and
// --run-point-out FILE: the child expands the same file with the same
// flags, so its point is this one, every setting alike), passes each
// interrupt on, removes the hosts before the next point, and reads the
// point's result back from the file. Points of other placements run in
// the sweep's process as before.

// Hidden flags of the child that runs one point on its hosts.
const (
	runPointFlag    = "run-point"
	runPointOutFlag = "run-point-out"
)

// sweepRunner runs a sweep's points: those of --placement hosts each in a
// child process on hosts of its own, the others in this process.
type sweepRunner struct {
	env *Env
	r   *runner.Runner
}

var _ sweep.PointRunner = (*sweepRunner)(nil)

func (s *sweepRunner) Run(ctx context.Context, cfg config.Run) (*result.Result, error) {
	return s.r.Run(ctx, cfg)
}

// RunPoint runs points[index] (cfg is its configuration).
func (s *sweepRunner) RunPoint(ctx context.Context, index int, cfg config.Run) (*result.Result, error) {
	if placement.Mode(cfg.Placement) != placement.Hosts {
		return s.r.Run(ctx, cfg)
	}
	if ctx.Err() != nil {
		return nil, sweep.ErrInterrupted
	}
	f, err := os.CreateTemp("", "tierbench-point-*.json")
	if err != nil {
		return nil, err
	}
	out := f.Name()
	f.Close()
	defer os.Remove(out)
	args := withFlags(s.env.Args, "--"+runPointFlag, strconv.Itoa(index+1), "--"+runPointOutFlag, out)
	runErr := onHosts(ctx, s.env, s.r, cfg, args)
	if st, err := os.Stat(out); err == nil && st.Size() > 0 {
		res, err := result.ReadFile(out)
		if err != nil {
			return nil, errors.Join(runErr, fmt.Errorf("the point's result: %w", err))
		}
		// The hosts are gone whatever the child's exit said: its result
		// is the point's, as a run's in this process would be.
		var ee *exitError
		if runErr != nil && !(errors.As(runErr, &ee) && ee.err == nil) {
			return res, runErr // the hosts could not be removed
		}
		return res, nil
	}
	if runErr == nil {
		runErr = errors.New("exit 0")
	}
	return nil, fmt.Errorf("the point's run on its driver's host ended without a result (%w; its messages are above)", runErr)
}

// withFlags is args with flags added before a "--", if any.
func withFlags(args []string, flags ...string) []string {
	at := len(args)
	if i := slices.Index(args, "--"); i >= 0 {
		at = i
	}
	return slices.Concat(args[:at], flags, args[at:])
}

// runOnePoint is the child's side: run points[n-1] in this process, on the
// hosts of the plan the sweep passed, and write its result to out.
func runOnePoint(ctx context.Context, r *runner.Runner, points []sweep.Point, n int, out string) error {
	plan, err := hosts.FromEnv()
	if err != nil {
		return infra(err)
	}
	if plan == nil || out == "" {
		return config.Usage(fmt.Errorf("--%s is the sweep's own, for a point it runs on hosts", runPointFlag))
	}
	if n < 1 || n > len(points) {
		return config.Usage(fmt.Errorf("--%s %d: the sweep has %d points", runPointFlag, n, len(points)))
	}
	inner := *r
	inner.Hosts = plan
	cfg := points[n-1].Config
	cfg.Out, cfg.Quiet = "", true
	res, err := inner.Run(ctx, cfg)
	if res != nil {
		if werr := res.WriteFile(out); werr != nil {
			return infra(errors.Join(err, werr))
		}
	}
	if err != nil {
		return infra(err)
	}
	return nil
}

// checkHosts fails at once, before any point runs, when a sweep has
// points on hosts and this machine cannot make them.
func checkHosts(points []sweep.Point) error {
	if !slices.ContainsFunc(points, func(p sweep.Point) bool { return placement.Mode(p.Config.Placement) == placement.Hosts }) {
		return nil
	}
	if err := hosts.Check(); err != nil {
		return infra(err)
	}
	if err := placement.Check(); err != nil {
		return infra(fmt.Errorf("--placement hosts: %w", err))
	}
	return nil
}
