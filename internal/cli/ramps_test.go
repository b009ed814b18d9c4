package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
)

// TestShortDurationScalesRamps: `run rubis --duration 20s` kept 5 s of
// steady state under the default ramps (10 s up, 5 s down); a --duration
// shorter than the default, given without ramps, scales them with it and
// says so. Ramps given, or a longer duration, are kept.
func TestShortDurationScalesRamps(t *testing.T) {
	w, err := workload.NewRegistry(rubis.New(), ecperf.New())
	if err != nil {
		t.Fatal(err)
	}
	r := &runner.Runner{Backends: storetest.Backends(), Workloads: w}
	for _, tc := range []struct {
		workload   string
		args       []string
		up, down   time.Duration
		noteWanted string
	}{
		{"rubis", []string{"--duration", "20s"}, 3333 * time.Millisecond, 1667 * time.Millisecond,
			"tierbench: --duration 20s: the default ramps (10s up, 5s down, of 1m0s) scaled to 3.333s up, 1.667s down; give --ramp-up and --ramp-down to set them"},
		{"rubis", []string{"--duration", "20s", "--ramp-up", "2s"}, 2 * time.Second, 5 * time.Second, ""},
		{"rubis", []string{"--duration", "5m"}, 10 * time.Second, 5 * time.Second, ""},
		{"rubis", nil, 10 * time.Second, 5 * time.Second, ""},
		// ECperf's 20 s ramp-up left no steady state in 20 s: refused before.
		{"ecperf", []string{"--duration", "20s"}, 3333 * time.Millisecond, 0, "scaled to 3.333s up, 0s down"},
	} {
		f := &runFlags{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addRunFlags(fs, f)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(r, tc.workload)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.workload, tc.args, err)
		}
		if errs := cfg.Validate(nil); len(errs) > 0 && tc.workload == "ecperf" {
			for _, e := range errs {
				if strings.Contains(e.Error(), "steady state") {
					t.Fatalf("%s %v: %v", tc.workload, tc.args, e)
				}
			}
		}
		var notes bytes.Buffer
		f.printNotes(&notes)
		if time.Duration(cfg.RampUp) != tc.up || time.Duration(cfg.RampDown) != tc.down || !strings.Contains(notes.String(), tc.noteWanted) || (tc.noteWanted == "") != (notes.Len() == 0) {
			t.Errorf("%s %v: ramps %v and %v, note %q; want %v and %v, note %q", tc.workload, tc.args,
				time.Duration(cfg.RampUp), time.Duration(cfg.RampDown), notes.String(), tc.up, tc.down, tc.noteWanted)
		}
	}
}
