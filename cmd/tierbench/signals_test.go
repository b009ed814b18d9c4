package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// prompt is how soon after SIGTERM a run must have exited.
const prompt = 15 * time.Second

// SIGTERM in each phase of a run of the real binary: it exits promptly,
// exit code 1 (interrupted), with its result written and naming the phase.
func TestSIGTERMInEachPhaseWritesTheResult(t *testing.T) {
	bin := testsvc.Binary(t)
	tests := []struct {
		name, phase string
		// point is the failpoint armed (NAME=ACTION) and the line that
		// says it was reached; after is how long to wait past it.
		point, reached string
		after          time.Duration
		args           []string
		check          func(t *testing.T, r *result.Result)
	}{
		{"load", "load", "load=pause", "failpoint load: paused", 0,
			[]string{"run", "stockonline", "--clients", "4"}, nil},
		{"ramp-up", "run", "run=print", "failpoint run", 0,
			[]string{"run", "stockonline", "--clients", "4", "--duration", "60s", "--ramp-up", "30s", "--think-time", "10ms"},
			func(t *testing.T, r *result.Result) {
				if r.Summary.Operations != 0 {
					t.Errorf("%d operations measured in a run stopped during its ramp-up, want 0", r.Summary.Operations)
				}
			}},
		// The wait puts the signal inside the steady state (ramp-up 1 s);
		// it synchronises nothing.
		{"steady state", "run", "run=print", "failpoint run", 2 * time.Second,
			[]string{"run", "stockonline", "--clients", "4", "--duration", "60s", "--ramp-up", "1s", "--think-time", "10ms"},
			func(t *testing.T, r *result.Result) {
				if r.Summary.Operations == 0 || len(r.Checks) != 5 {
					t.Errorf("%d operations and %d checks, want some operations and the 5 checks", r.Summary.Operations, len(r.Checks))
				}
			}},
		// Deliveries take 2 to 10 lead-time units of 10 s: the drain
		// would wait long for them.
		{"drain", "drain", "drain=print", "failpoint drain", 0,
			[]string{"run", "ecperf", "--po-dispatch", "poller", "--duration", "3s", "--ramp-up", "1s", "--cycle-scale", "0.05", "--lead-time-unit", "10s"}, nil},
		{"checks", "checks", "checks=pause", "failpoint checks: paused", 0,
			[]string{"run", "stockonline", "--clients", "4", "--iterations", "1"},
			func(t *testing.T, r *result.Result) {
				if len(r.Checks) != 5 {
					t.Errorf("%d checks, want the 5 checks to have run", len(r.Checks))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out := filepath.Join(dir, "result.json")
			args := append(tt.args, "--db", "sqlite:"+filepath.Join(dir, "db.sqlite"), "--out", out)
			p := testsvc.StartEnv(t, []string{failpoint.Env + "=" + tt.point}, bin, args...)
			if err := p.WaitFor(tt.reached, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tt.after)
			signalled := time.Now()
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			code, err := p.Wait(prompt)
			if err != nil {
				t.Fatalf("%v after SIGTERM: %v", prompt, err)
			}
			t.Logf("exited %v after SIGTERM", time.Since(signalled).Round(time.Millisecond))
			if code != 1 {
				t.Errorf("exit code %d, want 1 (interrupted)", code)
			}
			r, err := result.ReadFile(out)
			if err != nil {
				t.Fatalf("no result file: %v", err)
			}
			if !r.Summary.Interrupted || r.Summary.InterruptedDuring != tt.phase || r.Summary.Passed {
				t.Errorf("result: interrupted %v during %q, passed %v; want interrupted during %q, not passed",
					r.Summary.Interrupted, r.Summary.InterruptedDuring, r.Summary.Passed, tt.phase)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}
