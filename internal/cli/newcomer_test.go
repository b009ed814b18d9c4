package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/runner"
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
	_, out, _ := runCLI(t, "run", "--help")
	for _, want := range []string{"--emulator string", "--pov string"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help does not show %q", want)
		}
	}
	_, out, _ = runCLI(t, "--help")
	if strings.Contains(out, "to come") || !strings.Contains(out, "TPC-App") {
		t.Errorf("tierbench --help does not name TPC-App as built:\n%s", out)
	}
}

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
