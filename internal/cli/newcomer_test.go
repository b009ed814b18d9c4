package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp"
)

// pflag takes a flag's first `quoted` word of usage as its value's
// placeholder, so "started with `tierbench emulator`" showed as
// "--emulator tierbench emulator" in place of "--emulator string".
func TestHelpShowsEveryFlagsValueType(t *testing.T) {
	root := newRoot(&Env{})
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage has a backquote, which help shows as the value's name: %q", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for cmd, want := range map[string]string{"ecperf": "--emulator string", "tpcapp": "--pov string"} {
		if _, out, _ := runCLIWith(t, allWorkloads, "run", cmd, "--help"); !strings.Contains(out, want) {
			t.Errorf("run %s --help does not show %q", cmd, want)
		}
	}
	_, out, _ := runCLI(t, "--help")
	if strings.Contains(out, "to come") || !strings.Contains(out, "TPC-App") {
		t.Errorf("tierbench --help does not name TPC-App as built:\n%s", out)
	}
}

// run WORKLOAD --help shows the workload's own flags with its defaults,
// and examples; another workload's flag is refused naming the workloads
// that have it.
func TestRunWorkloadHelpShowsItsOwnFlags(t *testing.T) {
	for _, tc := range []struct {
		workload string
		want     []string
		not      []string
	}{
		{"rubis", []string{"--ramp-up duration", "leading time not measured (default 10s)", "--think-scale float", "(default 1)", "--tiers int", "--clients int  concurrent clients (default 50)", "tierbench run rubis --db postgres://", "--mix browsing"},
			[]string{"--ir ", "--pov ", "--po-dispatch "}},
		{"ecperf", []string{"--ir int", "--po-dispatch string", `(default "sync")`, "--ramp-up duration", "(default 20s)", "tierbench run ecperf\n"}, []string{"--style ", "--think-scale "}},
		{"tpcapp", []string{"--partner-delay string", `(default "fixed:500ms")`, "--front string", `(default "soap")`}, []string{"--ir ", "--style "}},
		{"stockonline", []string{"--warmup", "--mix string", `(default "table-2")`, "--iterations int", "(default 10)"}, []string{"--ir ", "--front "}},
	} {
		code, out, _ := runCLIWith(t, allWorkloads, "run", tc.workload, "--help")
		if code != 0 {
			t.Errorf("run %s --help: exit %d", tc.workload, code)
		}
		for _, want := range tc.want {
			if !helpShows(out, want) {
				t.Errorf("run %s --help does not show %q", tc.workload, want)
			}
		}
		for _, not := range tc.not {
			if strings.Contains(out, not) {
				t.Errorf("run %s --help shows another workload's %q", tc.workload, not)
			}
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"run rubis --ir 3", "--ir applies to ecperf only, not rubis"},
		{"run rubis --broker nats://x:4222", "--broker applies to ecperf, tpcapp only, not rubis"},
		{"run stockonline --think-scale 0", "--think-scale applies to rubis only, not stockonline"},
		{"load tpcapp --style entity", "--style applies to rubis only, not tpcapp"},
		// A workload's flag before its name: a bool one must not swallow
		// the name as its value; the workload's command then judges it.
		{"run --skip-images stockonline", "--skip-images applies to rubis only, not stockonline"},
		{"run --skip-images rubis --scale 0", "--scale 0: must be at least 1"},
		{"run --ir 3 rubis", "--ir applies to ecperf only, not rubis"},
	} {
		code, _, errOut := runCLIWith(t, allWorkloads, strings.Fields(tc.args)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, %s; want 2, %q", tc.args, code, errOut, tc.want)
		}
	}
}

var allWorkloads = []workload.Workload{ecperf.New(), rubis.New(), stockonline.New(), tpcapp.New()}

// A workload's name is accepted in any case, and a misspelt one gets the
// closest name suggested.
func TestWorkloadNamesAnyCaseAndSuggested(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "so.db")
	code, out, errOut := runCLI(t, "load", "StockOnline", "--db", db)
	if code != 0 || !strings.Contains(out, "stockonline") {
		t.Errorf("load StockOnline: exit %d\n%s%s", code, out, errOut)
	}
	// ECperf's own key is accepted: the name reached the command as registered.
	code, _, errOut = runCLI(t, "run", "ECPERF", "--ir", "0")
	if code != 2 || !strings.Contains(errOut, "--ir 0: must be at least 1") {
		t.Errorf("run ECPERF --ir 0: exit %d, %s", code, errOut)
	}
	for _, tc := range []struct{ name, suggest string }{{"stokonline", "stockonline"}, {"ecpref", "ecperf"}, {"Stock-Online", "stockonline"}} {
		code, _, errOut = runCLI(t, "run", tc.name)
		if code != 2 || !strings.Contains(errOut, "did you mean "+tc.suggest+"?") || !strings.Contains(errOut, "available: ecperf, stockonline") {
			t.Errorf("run %s: exit %d, %s", tc.name, code, errOut)
		}
	}
	code, _, errOut = runCLI(t, "run", "tpcw")
	if code != 2 || strings.Contains(errOut, "did you mean") {
		t.Errorf("run tpcw suggests a name nothing like it: exit %d, %s", code, errOut)
	}
}

// serve --token-file prints a drive command that carries the token file:
// without it the drive is refused by the tier it was told to drive.
func TestServePrintsTheTokenFileInItsDriveCommand(t *testing.T) {
	var out bytes.Buffer
	cfg := config.Run{Workload: "stockonline"}
	printServing(&out, cfg, runner.Serving{Tier: runner.TierBusiness, URL: "http://127.0.0.1:8080", Scale: 1}, "/etc/tb.token")
	if !strings.Contains(out.String(), "drive it with: tierbench drive stockonline --target http://127.0.0.1:8080 --scale 1 --token-file /etc/tb.token") {
		t.Errorf("serve stockonline --token-file printed:\n%s", out.String())
	}
	out.Reset()
	printServing(&out, cfg, runner.Serving{Tier: runner.TierBusiness, URL: "http://127.0.0.1:8080", Scale: 1}, "")
	if strings.Contains(out.String(), "--token-file") {
		t.Errorf("serve without a token printed:\n%s", out.String())
	}
}

// helpShows: want is in out, a run of two or more spaces in want standing
// for any run of them (the column a flag's help starts in follows the
// longest flag, which other work may lengthen).
func helpShows(out, want string) bool {
	parts := strings.Split(want, "  ")
	if len(parts) == 1 {
		return strings.Contains(out, want)
	}
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(strings.TrimSpace(p))
	}
	return regexp.MustCompile(strings.Join(parts, `\s{2,}`)).MatchString(out)
}
