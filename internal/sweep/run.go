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

// Outcome is a point's runs.
type Outcome struct {
	Point Point
	Runs  []*result.Result
}

// ErrInterrupted: the sweep stopped early; the outcomes so far are kept.
var ErrInterrupted = errors.New("sweep interrupted")

// Execute runs every point repetitions times, writing each result file
// under dir/EXPERIMENT/. done, if set, is called after each run.
func Execute(ctx context.Context, r Runner, points []Point, repetitions int, dir string, done func(p Point, rep int, res *result.Result)) ([]Outcome, error) {
	var out []Outcome
	for _, p := range points {
		o := Outcome{Point: p}
		for rep := 1; rep <= repetitions; rep++ {
			cfg := p.Config
			cfg.Out, cfg.Quiet = "", true
			res, err := r.Run(ctx, cfg)
			if err != nil {
				return out, fmt.Errorf("%s %s: %w", p.Experiment.Name, p.Label(), err)
			}
			path := filepath.Join(dir, p.Experiment.Name, fmt.Sprintf("%s-%d.json", fileName(p.Label()), rep))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return out, err
			}
			if err := res.WriteFile(path); err != nil {
				return out, err
			}
			o.Runs = append(o.Runs, res)
			if done != nil {
				done(p, rep, res)
			}
			if res.Summary.Interrupted {
				return append(out, o), ErrInterrupted
			}
		}
		out = append(out, o)
	}
	return out, nil
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

// fileName makes a point's label fit a file name: "pool=20%" → "pool=20pct".
func fileName(label string) string {
	if label == "" {
		return "base"
	}
	return unsafe.ReplaceAllString(strings.ReplaceAll(label, "%", "pct"), "_")
}
