package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/result"
)

// Runner runs one configuration (runner.Runner).
type Runner interface {
	Run(ctx context.Context, cfg config.Run) (*result.Result, error)
}

// PointRunner is a Runner that is told which point it runs: the command
// line's, which runs a point of --placement hosts in a child process on
// the point's own hosts, and names the point to the child by its index
// in points (the child expands the same sweep file). Execute finds it by
// type assertion.
type PointRunner interface {
	RunPoint(ctx context.Context, index int, cfg config.Run) (*result.Result, error)
}

// Outcome is a point's runs.
type Outcome struct {
	Point Point
	Runs  []*result.Result
}

// ErrInterrupted: the sweep stopped early; the outcomes so far are kept.
var ErrInterrupted = errors.New("sweep interrupted")

// Execute runs every point repetitions times, writing each result file
// under dir/EXPERIMENT/. done, if set, is called after each run.
//
// The repetitions go in rounds, every point once per round, rather than
// a point's runs back to back: whatever drifts during a sweep (the
// machine's other load, the database's caches and files growing) then
// falls on every point alike instead of on whichever ran last. The
// outcomes keep the points' order; an interrupted sweep returns the
// points that have a run.
func Execute(ctx context.Context, r Runner, points []Point, repetitions int, dir string, done func(p Point, rep int, res *result.Result)) ([]Outcome, error) {
	outs := make([]Outcome, len(points))
	for i, p := range points {
		outs[i].Point = p
	}
	ran := func() []Outcome {
		var out []Outcome
		for _, o := range outs {
			if len(o.Runs) > 0 {
				out = append(out, o)
			}
		}
		return out
	}
	for rep := 1; rep <= repetitions; rep++ {
		for i, p := range points {
			cfg := p.Config
			cfg.Out, cfg.Quiet = "", true
			var res *result.Result
			var err error
			if pr, ok := r.(PointRunner); ok {
				res, err = pr.RunPoint(ctx, i, cfg)
			} else {
				res, err = r.Run(ctx, cfg)
			}
			if err != nil {
				return ran(), fmt.Errorf("%s %s: %w", p.Experiment.Name, p.Label(), err)
			}
			path := filepath.Join(dir, p.Experiment.Name, fmt.Sprintf("%s-%d.json", fileName(p.Label()), rep))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return ran(), err
			}
			if err := res.WriteFile(path); err != nil {
				return ran(), err
			}
			outs[i].Runs = append(outs[i].Runs, res)
			if done != nil {
				done(p, rep, res)
			}
			if res.Summary.Interrupted {
				return ran(), ErrInterrupted
			}
		}
	}
	return outs, nil
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

// fileName makes a point's label fit a file name: "pool=20%" → "pool=20pct".
func fileName(label string) string {
	if label == "" {
		return "base"
	}
	return unsafe.ReplaceAllString(strings.ReplaceAll(label, "%", "pct"), "_")
}
