package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/result"
)

// thresholdRun runs Stock-Online briefly on SQLite with args added, and
// reads back its result.
func thresholdRun(t *testing.T, args ...string) (code int, out, stderr string, res *result.Result) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	code, out, stderr = runCLI(t, append([]string{"run", "stockonline", "--db", "sqlite:" + filepath.Join(dir, "so.db"),
		"--clients", "4", "--iterations", "2", "--out", path, "--quiet"}, args...)...)
	res, err := result.ReadFile(path)
	if err != nil {
		t.Fatalf("exit %d, no result (%v):\n%s%s", code, err, out, stderr)
	}
	return code, out, stderr, res
}

// Thresholds a run meets: exit 0, each recorded as passed with the figure
// the summary shows.
func TestThresholdsMetPass(t *testing.T) {
	code, out, stderr, res := thresholdRun(t, "--threshold", "p99<60s", "--threshold", "BuyStock.p90 < 60000ms",
		"--threshold", "tps>0", "--threshold", "metric>=0.1", "--threshold", "QueryById.error_rate<=100%",
		"--threshold", "SellStock.tps>0", "--threshold", "p(99.9)<60s")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
	snap, err := res.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		expr     string
		measured float64
		unit     string
	}{
		{"p99<60s", res.TotalLatency.P99, "ms"},
		{"BuyStock.p90<60000ms", res.Operations["BuyStock"].Latency.P90, "ms"},
		{"tps>0", res.Summary.ThroughputPerS, "/s"},
		{"metric>=0.1", res.Summary.Metric.Value, ""},
		{"QueryById.error_rate<=100%", 0, "%"},
		{"SellStock.tps>0", math.Round(float64(res.Operations["SellStock"].Completed)/res.Summary.ElapsedS*10) / 10, "/s"},
		{"p(99.9)<60s", math.Round(float64(snap.Total().Latency.Quantile(0.999))/1e3) / 1e3, "ms"},
	}
	if len(res.Thresholds) != len(want) {
		t.Fatalf("result holds %d thresholds, want %d: %+v", len(res.Thresholds), len(want), res.Thresholds)
	}
	for i, w := range want {
		got := res.Thresholds[i]
		if got.Expression != w.expr || got.Measured == nil || *got.Measured != w.measured || got.Unit != w.unit || !got.Passed {
			t.Errorf("threshold %d: %+v (measured %v), want %s passed, measured %v %s", i, got, got.Measured, w.expr, w.measured, w.unit)
		}
	}
	if res.TotalLatency.P99 <= 0 || !res.Summary.Passed {
		t.Errorf("p99 %v, passed %v", res.TotalLatency.P99, res.Summary.Passed)
	}
	for _, w := range []string{"thresholds: all 7 passed", "ok   p99<60s", "measured p99 ", "measured TPS "} {
		if !strings.Contains(out, w) {
			t.Errorf("summary does not say %q:\n%s", w, out)
		}
	}
}

// Thresholds from the -f file, one no run can meet: exit 1, the result
// written with the verdict and the figure, the summary and the error
// naming it.
func TestThresholdUnmetFailsTheRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gate.yaml")
	os.WriteFile(file, []byte("threshold:\n  - tps>0\n  - BuyStock.p99<1us\n"), 0o644)
	code, out, stderr, res := thresholdRun(t, "-f", file)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out, stderr)
	}
	if len(res.Thresholds) != 2 || !res.Thresholds[0].Passed || res.Summary.Passed {
		t.Fatalf("thresholds %+v, run passed %v", res.Thresholds, res.Summary.Passed)
	}
	unmet := res.Thresholds[1]
	if unmet.Expression != "BuyStock.p99<1us" || unmet.Passed || unmet.Measured == nil || *unmet.Measured != res.Operations["BuyStock"].Latency.P99 || *unmet.Measured < 0.001 {
		t.Errorf("unmet threshold recorded as %+v (measured %v); BuyStock p99 %v", unmet, unmet.Measured, res.Operations["BuyStock"].Latency.P99)
	}
	for _, w := range []string{"thresholds: 1 of 2 FAILED", "FAIL BuyStock.p99<1us", "measured BuyStock.p99 "} {
		if !strings.Contains(out, w) {
			t.Errorf("summary does not say %q:\n%s", w, out)
		}
	}
	if !strings.Contains(stderr, "THRESHOLDS FAILED (BuyStock.p99<1us)") {
		t.Errorf("stderr does not name the threshold:\n%s", stderr)
	}
}

// A threshold that cannot be judged is refused before anything runs.
func TestThresholdBadInput(t *testing.T) {
	dir := t.TempDir()
	scalar := filepath.Join(dir, "scalar.yaml")
	os.WriteFile(scalar, []byte("threshold: p99<5ms\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("threshold: [p99<5]\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--threshold", "p99<50"}, `--threshold "p99<50": p99 is a latency: give the value a unit (ms, s, us or µs), e.g. p99<50ms`},
		{[]string{"--threshold", "NewOrder.p99<5ms"}, `--threshold "NewOrder.p99<5ms": stockonline has no operation NewOrder; its operations: CreateAccount, UpdateAccount, QueryById, QueryByCode, BuyStock, SellStock, GetHoldingStatement`},
		{[]string{"--threshold", "p98<5ms"}, `unknown statistic "p98"; allowed: p50, p90, p95, p99, p99.9, max, mean, tps, error_rate, metric`},
		{[]string{"--threshold", "p99=5ms"}, "comparison = not allowed; allowed: <, <=, >, >="},
		{[]string{"-f", scalar}, "want a list, as [p99<50ms, tps>1000]"},
		{[]string{"-f", bad}, `--threshold "p99<5": p99 is a latency`},
	} {
		out := filepath.Join(dir, "never.json")
		code, _, stderr := runCLI(t, append([]string{"run", "stockonline", "--out", out}, tt.args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 2 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and one line saying %q", tt.args, code, stderr, tt.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: a result was written", tt.args)
		}
	}
}

// report A B --max-regression on two real runs, B made slower on purpose
// by a think time ten times A's: B against A regresses in throughput
// beyond its interval (exit 1, the figure and how much named); A against
// B does not. A thinks too, so that neither run takes the machine's CPU
// for its whole length: paced, each second's throughput is steadier.
// The ramp-up leaves the first, uneven second out of the four one-second
// batches the intervals come from.
func TestReportMaxRegression(t *testing.T) {
	dir := t.TempDir()
	fast, slow := filepath.Join(dir, "fast.json"), filepath.Join(dir, "slow.json")
	for _, args := range [][]string{
		{"--out", fast, "--think-time", "5ms"},
		{"--out", slow, "--think-time", "50ms"},
	} {
		args = append([]string{"run", "stockonline", "--db", "sqlite:" + filepath.Join(dir, filepath.Base(args[1])+".db"),
			"--clients", "4", "--duration", "5s", "--ramp-up", "1s", "--quiet"}, args...)
		if code, out, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d:\n%s%s", args, code, out, stderr)
		}
	}
	code, out, stderr := runCLI(t, "report", fast, slow, "--no-html", "--max-regression", "tps=5%,p99=1000%")
	if code != 1 {
		t.Fatalf("report fast slow: exit %d, want 1:\n%s%s", code, out, stderr)
	}
	for _, w := range []string{"regressions from A: 1 of 2 beyond --max-regression tps=5%,p99=1000%", "FAIL B throughput/s", "% worse, beyond 5%", "ok   B p99 ms"} {
		if !strings.Contains(out, w) {
			t.Errorf("report does not say %q:\n%s", w, out)
		}
	}
	if !strings.Contains(stderr, "regressed beyond --max-regression: B throughput/s ") || !strings.Contains(stderr, "% worse (limit 5%)") {
		t.Errorf("stderr does not name the regression:\n%s", stderr)
	}

	// The same runs the other way round: throughput improved.
	code, out, stderr = runCLI(t, "report", slow, fast, "--no-html", "--max-regression", "tps=5%")
	if code != 0 || !strings.Contains(out, "regressions from A: all 1 within --max-regression tps=5%") || !strings.Contains(out, "ok   B throughput/s") {
		t.Errorf("report slow fast: exit %d:\n%s%s", code, out, stderr)
	}
	// A limit the slow run stays within.
	code, out, stderr = runCLI(t, "report", fast, slow, "--no-html", "--max-regression", "tps=99.9%")
	if code != 0 || !strings.Contains(out, "% worse, within 99.9%") {
		t.Errorf("report fast slow within 99.9%%: exit %d:\n%s%s", code, out, stderr)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{fast, slow, "--max-regression", "lots"}, `--max-regression "lots": "lots" is not a share`},
		{[]string{fast, slow, "--max-regression", "tpz=5%"}, `unknown figure "tpz"; figures: metric, tps, p50, p99`},
		{[]string{fast, "--max-regression", "5%"}, "--max-regression judges runs against the first (A, the baseline): give two or more result files"},
	} {
		code, _, stderr := runCLI(t, append([]string{"report", "--no-html"}, tt.args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 2 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and one line saying %q", tt.args, code, stderr, tt.want)
		}
	}
}

// A threshold on an operation the run's mix leaves out has nothing to
// judge: it fails and says why, rather than pass on no evidence.
func TestThresholdWithNothingToJudgeFails(t *testing.T) {
	code, out, stderr, res := thresholdRun(t, "--mix", "UpdateAccount=1", "--threshold", "BuyStock.p99<60s", "--threshold", "UpdateAccount.p99<60s")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out, stderr)
	}
	if len(res.Thresholds) != 2 || !res.Thresholds[1].Passed {
		t.Fatalf("thresholds %+v", res.Thresholds)
	}
	if got := res.Thresholds[0]; got.Passed || got.Measured != nil || got.Detail != "no BuyStock operation completed in the steady state" {
		t.Errorf("BuyStock's threshold recorded as %+v", got)
	}
	if !strings.Contains(out, "FAIL BuyStock.p99<60s       no BuyStock operation completed in the steady state") {
		t.Errorf("summary:\n%s", out)
	}
}
