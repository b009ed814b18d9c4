package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIWith(t, []workload.Workload{stockonline.New(), ecperf.New()}, args...)
}

// runCLIWith runs the command line with the workloads ws registered.
func runCLIWith(t *testing.T, ws []workload.Workload, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	w, err := workload.NewRegistry(ws...)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code = Main(context.Background(), Env{
		Args: args, Stdout: &out, Stderr: &errOut,
		Backends: storetest.Backends(), Workloads: w, Version: "test",
	})
	return code, out.String(), errOut.String()
}

func TestBadInputExitCodesAndMessages(t *testing.T) {
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("clinets: 5\n"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown workload", []string{"run", "tpcw"}, 2, []string{`unknown workload "tpcw"`, "available: ecperf, stockonline"}},
		{"no workload", []string{"run"}, 2, []string{"name a WORKLOAD: one of ecperf, stockonline"}},
		{"unknown command", []string{"benchmark"}, 2, []string{`unknown command "benchmark"`}},
		{"flag not a number", []string{"run", "stockonline", "--clients", "lots"}, 2, []string{`--clients "lots": want a whole number`}},
		{"bad entity setting", []string{"run", "stockonline", "--entity", "Item:readonly"}, 2, []string{`--entity "Item:readonly": write NAME.key=value`}},
		{"bad entity value", []string{"run", "stockonline", "--entity", "Item.pool=lots"}, 2, []string{`--entity "Item.pool=lots": "lots" is not a size`}},
		{"bad commit option", []string{"run", "stockonline", "--commit-option", "E"}, 2, []string{`--commit-option "E" is not a commit option; allowed: A, B, C, D`}},
		{"unknown flag", []string{"run", "stockonline", "--clientz", "5"}, 2, []string{"unknown flag: --clientz"}},
		{"zero clients", []string{"run", "stockonline", "--clients", "0"}, 2, []string{"--clients 0: must be at least 1"}},
		{"bad duration", []string{"run", "stockonline", "--duration", "soon"}, 2, []string{"--duration", `"soon"`}},
		{"bad dsn", []string{"run", "stockonline", "--db", "oracle://scott@db/orcl"}, 2, []string{"oracle://scott@db/orcl", "allowed: sqlite, sqlite:PATH, postgres://"}},
		{"several postgres hosts", []string{"run", "stockonline", "--db", "postgres://root@127.0.0.1:5442,127.0.0.1:5443/test"}, 2, []string{"names 2 hosts", "multi-master cluster", "--replica"}},
		{"bad dispatch", []string{"run", "rubis", "--dispatch", "foo"}, 2, []string{`--dispatch "foo" is not a dispatch; allowed: reflect|generated`}},
		{"bad lock granularity", []string{"run", "stockonline", "--lock-granularity", "page"}, 2, []string{`--lock-granularity "page" is not a lock granularity; allowed: engine, table`}},
		{"table locks on sqlite", []string{"run", "stockonline", "--lock-granularity", "table"}, 2, []string{"--lock-granularity table: only a single MariaDB or MySQL server locks tables"}},
		{"table locks with direct sql", []string{"run", "stockonline", "--db", "mysql://root@127.0.0.1:1/test", "--persistence", "direct", "--lock-granularity", "table"}, 2, []string{"--lock-granularity table with --persistence direct"}},
		{"bad isolation", []string{"run", "stockonline", "--isolation", "dirty"}, 2, []string{`--isolation "dirty" is not an isolation level; allowed: read-committed, repeatable-read, serializable`}},
		{"combination that loses updates", []string{"run", "stockonline", "--commit-option", "A", "--concurrency", "database"}, 2, []string{"commit option A with database concurrency would lose updates"}},
		{"unknown entity type", []string{"run", "stockonline", "--entity", "Portfolio.cache=10"}, 2, []string{"no entity type Portfolio"}},
		{"bad size", []string{"run", "stockonline", "--cache", "plenty"}, 2, []string{`--cache "plenty" is not a size`}},
		{"unknown persistence", []string{"run", "stockonline", "--persistence", "hibernate"}, 2, []string{`--persistence "hibernate" is not a persistence strategy; allowed: cmp, bmp, bmp-checked, direct`}},
		{"strict config file", []string{"run", "stockonline", "-f", badYAML}, 2, []string{"unknown key clinets"}},
		{"load into a throwaway file", []string{"load", "stockonline"}, 2, []string{"--db sqlite:PATH"}},
		{"unreachable postgres", []string{"run", "stockonline", "--db", "postgres://root@127.0.0.1:1/test?connect_timeout=2"}, 3, []string{"database unreachable", "127.0.0.1:1"}},
		{"unreachable mysql", []string{"run", "stockonline", "--db", "mysql://root@127.0.0.1:1/test?timeout=2s"}, 3, []string{"database unreachable", "connection refused"}},
		{"unreachable emulator", []string{"run", "ecperf", "--emulator", "http://127.0.0.1:1", "--out", filepath.Join(dir, "ecperf.json")}, 3, []string{"--emulator http://127.0.0.1:1: the supplier emulator does not answer"}},
		{"duration and iterations", []string{"run", "stockonline", "--duration", "5s", "--iterations", "3"}, 2, []string{"--duration and --iterations both given"}},
		{"zero injection rate", []string{"run", "ecperf", "--ir", "0"}, 2, []string{"--ir 0: must be at least 1"}},
		{"another workload's flag", []string{"run", "stockonline", "--po-dispatch", "queue"}, 2, []string{"--po-dispatch applies to ecperf only, not stockonline"}},
		{"a sell without its buy", []string{"run", "stockonline", "--mix", "SellStock=1"}, 2, []string{`--mix "SellStock=1": BuyStock 0 and SellStock 1`, "give both the same count"}},
		{"an operation Stock-Online lacks", []string{"run", "stockonline", "--mix", "NewOrder=1"}, 2, []string{`"NewOrder=1" is not OPERATION=COUNT; operations: CreateAccount, UpdateAccount, QueryById`, "or --mix table-2"}},
		{"warm-up without a container", []string{"run", "stockonline", "--warmup", "--persistence", "direct"}, 2, []string{"--warmup", "--persistence direct has none"}},
		{"one flag at fault", []string{"run", "stockonline", "--think-time", "-1s"}, 2, []string{"--think-time -1s: must not be negative"}},
		{"error rate not a percentage", []string{"run", "stockonline", "--max-error-rate", "some"}, 2, []string{"--max-error-rate", `"some" is not a percentage`}},
		{"error rate over 100%", []string{"run", "stockonline", "--max-error-rate", "150%"}, 2, []string{"--max-error-rate 150%: must be from 0% to 100%"}},
		{"result not writable", []string{"run", "stockonline", "--out", filepath.Join(dir, "no", "such", "dir", "r.json")}, 2, []string{"--out", "the result cannot be written there"}},
		{"no load marker", []string{"run", "stockonline", "--no-load", "--db", "sqlite:" + filepath.Join(dir, "empty.db"), "--out", filepath.Join(dir, "r.json")}, 2, []string{"--no-load", "tierbench load stockonline"}},
		{"receiver the emulator cannot reach", []string{"run", "ecperf", "--emulator", "http://emu-host:8099"}, 2, []string{`--receiver "127.0.0.1:0" is reachable only from this host`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			first := lines[0]
			// The pointer is to the workload's own command when one was named.
			help := "tierbench: see 'tierbench " + tt.args[0] + " --help'"
			if len(tt.args) > 1 && !strings.HasPrefix(tt.args[1], "-") {
				if w, err := workload.NewRegistry(stockonline.New(), ecperf.New()); err == nil {
					if wl, err := w.Get(tt.args[1]); err == nil {
						help = "tierbench: see 'tierbench " + tt.args[0] + " " + wl.Info().Name + " --help'"
					}
				}
			}
			if code == 2 && (len(lines) != 2 || lines[1] != help) && tt.name != "unknown command" && tt.name != "no workload" {
				t.Errorf("a usage error is one line and a pointer to the command's help; stderr:\n%s", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(first, w) {
					t.Errorf("first line of stderr %q does not say %q", first, w)
				}
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Errorf("stderr has a panic or stack trace:\n%s", stderr)
			}
		})
	}
}

func TestWorkloadsListsStockOnline(t *testing.T) {
	code, out, _ := runCLI(t, "workloads")
	for _, want := range []string{"stockonline", "CreateAccount, UpdateAccount, QueryById", "deck of 43 per iteration", "3 SellStock (each after its paired BuyStock)", "TPS", "100 clients, 10 server threads, 10 iterations"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("workloads (exit %d) does not say %q:\n%s", code, want, out)
		}
	}
}

func TestRunAndLoadThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "so.db")
	code, out, stderr := runCLI(t, "load", "stockonline", "--db", db, "--scale", "2")
	if code != 0 || !strings.Contains(out, "72000 rows") || !strings.Contains(out, "StockHolding 60000") {
		t.Fatalf("load (exit %d): %s%s", code, out, stderr)
	}
	cfgFile := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfgFile, []byte("clients: 50\nserver-threads: 2\niterations: 1\nscale: 2\n"), 0o644)
	resultFile := filepath.Join(dir, "r.json")
	code, out, stderr = runCLI(t, "run", "stockonline", "-f", cfgFile, "--db", db, "--no-load", "--clients", "3", "--out", resultFile, "--quiet")
	if code != 0 {
		t.Fatalf("run exit %d:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"stockonline · sqlite", "3 clients, 2 server threads, iterations 1", "BuyStock", "queue", "TPS ", "checks: all 5 passed", "result: " + resultFile} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not say %q:\n%s", want, out)
		}
	}
	var res struct {
		Schema  string
		Config  map[string]any
		Summary struct{ Operations int64 }
	}
	b, err := os.ReadFile(resultFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	// The file set 50 clients; the flag overrode it; the file's other keys held.
	if res.Schema != "tierbench/result/v1" || res.Config["clients"] != 3.0 || res.Config["server-threads"] != 2.0 || res.Config["scale"] != 2.0 || res.Summary.Operations+0 == 0 {
		t.Errorf("result: schema %q, config %v, %d operations", res.Schema, res.Config, res.Summary.Operations)
	}
}

// --mix runs a deck of the operations named, so one transaction's cost can
// be measured alone; each client deals the whole deck per iteration, so the
// counts are exact. Five buy-and-sell pairs, more than Table 2's three: a
// client sized its pairs from Table 2 and panicked on the fourth.
func TestStockOnlineMixOfOneTransaction(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := runCLI(t, "run", "stockonline", "--db", "sqlite:"+filepath.Join(dir, "so.db"), "--mix", "UpdateAccount=1,BuyStock=5,SellStock=5",
		"--clients", "3", "--iterations", "4", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Every operation of the workload, the ones left out of the deck at 0.
	want := map[string]int64{"UpdateAccount": 12, "BuyStock": 60, "SellStock": 60}
	for _, name := range stockonline.New().Info().Operations {
		op, ok := res.Operations[name]
		if n := op.Count + op.Errors; !ok || n != want[name] {
			t.Errorf("%s ran %d times (in the result: %v), want %d", name, n, ok, want[name])
		}
	}
	if mix := res.Config.Value("mix"); mix != "UpdateAccount=1,BuyStock=5,SellStock=5" {
		t.Errorf("the result's configuration has mix %q", mix)
	}
	if !strings.Contains(stdout, "checks: all 5 passed") {
		t.Errorf("checks did not pass:\n%s", stdout)
	}
}

// A paper's experiment through the command line. Its six points run on
// one population, loaded before (--no-load, a run flag that applies to
// every point): a load per point would be most of the test's work.
func TestSweepThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "s.db")
	if code, out, stderr := runCLI(t, "load", "stockonline", "--db", db); code != 0 {
		t.Fatalf("load: exit %d:\n%s%s", code, out, stderr)
	}
	code, out, stderr := runCLI(t, "sweep", "../../experiments/brebner-ran.yaml", "--experiment", "experiment-3",
		"--clients", "4", "--iterations", "1", "--db", db, "--no-load", "--out-dir", filepath.Join(dir, "out"), "--quiet")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"sweep brebner-ran: 6 points × 1 repetitions = 6 runs", "experiment-3 — option B, cache 0..200%, pool 20%", "cache=200%", "tables and CSV files"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "experiment-3.csv")); err != nil {
		t.Error(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nbase: {workload: stockonline}\nexperiments: [{name: e, set: {cahce: 10}}]\n"), 0o644)
	code, _, stderr = runCLI(t, "sweep", bad)
	if code != 2 || !strings.Contains(stderr, "e set: line 3: unknown key cahce (keys are the flag names of stockonline: ") {
		t.Errorf("misspelt key: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "sweep", "../../experiments/brebner-ran.yaml", "--out", "x.json")
	if code != 2 || !strings.Contains(stderr, "--out does not apply to sweep") {
		t.Errorf("--out: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "sweep", "../../experiments/brebner-ran.yaml", "--experiment", "experiment-9")
	if code != 2 || !strings.Contains(stderr, "no such experiment") {
		t.Errorf("unknown experiment: exit %d, %s", code, stderr)
	}
}

// --ir is ECperf's scale: the load reports it and populates by the kit's
// rules (Ir 3: C = 10, so 750 customers).
func TestIRIsTheScale(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "e.db")
	code, out, errOut := runCLI(t, "load", "ecperf", "--ir", "3", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "(scale 3)") || !strings.Contains(out, "c_customer 750,") {
		t.Errorf("load ecperf --ir 3 said: %s", out)
	}
	for _, args := range [][]string{{"--po-dispatch", "pigeon"}, {"--broker", "http://x"}, {"--cycle-scale", "0"}, {"--ir", "-1"}, {"--clients", "50"}, {"--think-time", "1s"}} {
		code, _, errOut := runCLI(t, append([]string{"run", "ecperf"}, args...)...)
		if code != 2 || !strings.Contains(errOut, args[0]) {
			t.Errorf("run ecperf %v: exit %d, %q; want 2 naming %s", args, code, errOut, args[0])
		}
	}
}

// Every command's help prints each flag's default readably: a setting
// whose zero value printed as a NUL showed "(default  )" after its own
// "(default C)".
func TestHelpShowsNoEmptyDefaults(t *testing.T) {
	for _, cmd := range []string{"run", "load", "serve", "drive", "sweep"} {
		code, out, errOut := runCLI(t, cmd, "--help")
		help := out + errOut
		if code != 0 || !strings.Contains(help, "--db") {
			t.Fatalf("%s --help (exit %d) is not its help:\n%s", cmd, code, help)
		}
		for _, line := range strings.Split(help, "\n") {
			if strings.Contains(line, "\x00") || strings.Contains(line, "(default  )") || strings.Contains(line, "(default )") {
				t.Errorf("%s --help: %q", cmd, line)
			}
		}
	}
}
