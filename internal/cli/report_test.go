package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/result"
)

// A real run, reported again: its summary, the page beside it, the
// per-second series; then two runs compared. The runs are paced by a
// think time: a report needs each second's operations, not as many as the
// machine can run.
func TestReportOfARealRun(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "so.json")
	for i, args := range [][]string{
		{"run", "stockonline", "--duration", "2s", "--clients", "4", "--think-time", "5ms", "--db", "sqlite:" + filepath.Join(dir, "a.db"), "--out", res, "--quiet"},
		{"run", "stockonline", "--duration", "2s", "--clients", "8", "--think-time", "5ms", "--db", "sqlite:" + filepath.Join(dir, "b.db"), "--out", filepath.Join(dir, "so8.json"), "--quiet"},
	} {
		if code, out, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("run %d: exit %d:\n%s%s", i, code, out, stderr)
		}
	}
	code, out, stderr := runCLI(t, "report", res, "--csv", filepath.Join(dir, "csv"))
	if code != 0 {
		t.Fatalf("report: exit %d:\n%s%s", code, out, stderr)
	}
	html := filepath.Join(dir, "so.html")
	for _, want := range []string{"stockonline · sqlite", "TPS", "checks: all 5 passed", "HTML report: " + html, "per-second series: 1 CSV file in " + filepath.Join(dir, "csv")} {
		if !strings.Contains(out, want) {
			t.Errorf("report does not say %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="chart-throughput"`, `id="chart-spectrum"`, "BuyStock", "holdings-match-transactions"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	series, err := os.ReadFile(filepath.Join(dir, "csv", "so.csv"))
	if err != nil || !strings.HasPrefix(string(series), "t_s,phase,operation,count,errors,p50_ms,p90_ms,p99_ms,p999_ms\n1,steady,CreateAccount,") {
		t.Errorf("CSV (%v):\n%.300s", err, series)
	}

	cmp := filepath.Join(dir, "cmp.html")
	code, out, stderr = runCLI(t, "report", res, filepath.Join(dir, "so8.json"), "--html", cmp)
	if code != 0 {
		t.Fatalf("compare: exit %d:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"A   " + res, "B   " + filepath.Join(dir, "so8.json"), "difference from A, 95% confidence interval", "B − A", "throughput/s", "p99 ms", "HTML report: " + cmp} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(cmp); err != nil {
		t.Error(err)
	}
}

// A real sweep's directory: the tables again, and a page with one chart
// per figure of each experiment whose points are the runs' means. The
// eight runs share one population, loaded before (no-load in the base):
// a load per run would be most of the test's work.
func TestReportOfARealSweep(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "s.db")
	if code, out, stderr := runCLI(t, "load", "stockonline", "--db", db); code != 0 {
		t.Fatalf("load: exit %d:\n%s%s", code, out, stderr)
	}
	spec := filepath.Join(dir, "tiny.yaml")
	os.WriteFile(spec, []byte(`name: tiny
base:
  workload: stockonline
  no-load: true
  iterations: 2
repetitions: 2
experiments:
  - name: clients
    title: "clients by persistence"
    axes:
      persistence: [cmp, direct]
      clients: [2, 4]
`), 0o644)
	out := filepath.Join(dir, "out")
	if code, stdout, stderr := runCLI(t, "sweep", spec, "--db", db, "--out-dir", out, "--quiet"); code != 0 {
		t.Fatalf("sweep: exit %d:\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "sweep.yaml")); err != nil {
		t.Fatalf("the sweep did not keep its file: %v", err)
	}
	code, stdout, stderr := runCLI(t, "report", out)
	if code != 0 {
		t.Fatalf("report: exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"clients — clients by persistence", "persistence=direct clients=4", "HTML report: " + filepath.Join(out, "report.html")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report does not say %q:\n%s", want, stdout)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"cmp", "direct"} {
		for _, c := range []int{2, 4} {
			var sum float64
			for rep := 1; rep <= 2; rep++ {
				b, err := os.ReadFile(filepath.Join(out, "clients", fmt.Sprintf("persistence=%s_clients=%d-%d.json", p, c, rep)))
				if err != nil {
					t.Fatal(err)
				}
				var r result.Result
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				sum += r.Summary.Metric.Value
			}
			row := fmt.Sprintf(`<td class="text">persistence=%s</td><td>%d</td><td>2</td><td>%s</td>`, p, c, strconv.FormatFloat(sum/2, 'f', -1, 64))
			if !strings.Contains(string(page), row) {
				t.Errorf("the metric chart's numbers lack %s", row)
			}
		}
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	notJSON := write("notes.txt", "hello")
	noSchema := write("other.json", `{"name": "x"}`)
	v2 := write("v2.json", `{"schema": "tierbench/result/v2"}`)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to report", []string{"report"}, "name one or more result files (RESULT.json), or one sweep directory"},
		{"no such file", []string{"report", filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
		{"not JSON", []string{"report", notJSON}, "notes.txt is not a tierbench result: not JSON"},
		{"no schema", []string{"report", noSchema}, `other.json is not a tierbench result: it has no "schema"`},
		{"another schema", []string{"report", v2}, `v2.json: schema "tierbench/result/v2"; this tierbench reads "tierbench/result/v1"`},
		{"not a sweep", []string{"report", empty}, "empty is not a sweep directory: it holds no EXPERIMENT/LABEL-N.json result files"},
		{"a directory and files", []string{"report", noSchema, empty}, "empty is a directory: report one sweep directory alone, or result files, not both"},
		{"html both ways", []string{"report", noSchema, "--no-html", "--html", "x.html"}, "--html and --no-html both given"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || len(lines) != 2 || !strings.Contains(lines[0], tt.want) || lines[1] != "tierbench: see 'tierbench report --help'" {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2, one line saying %q and the pointer to help", code, stderr, tt.want)
			}
		})
	}
}
