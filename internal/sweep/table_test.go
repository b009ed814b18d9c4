package sweep_test

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/sweep"
)

// A point of one run prints its mean alone: "± 0.0" would claim a spread
// nobody measured. Two runs print theirs. The runs are real (the
// report's fixtures: a short SQLite sweep of Stock-Online).
func TestTableShowsASpreadOnlyWhereThereAreRepetitions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "report", "testdata", "runs", "sweep", "experiment-1")
	var runs []*result.Result
	for _, name := range []string{"pool=0-1.json", "pool=0-2.json"} {
		r, err := result.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	e := &sweep.Experiment{Name: "experiment-1"}
	for _, tc := range []struct {
		runs   []*result.Result
		spread bool
	}{{runs[:1], false}, {runs, true}} {
		var b bytes.Buffer
		sweep.WriteTable(&b, []sweep.Outcome{{Point: sweep.Point{Experiment: e, Values: []string{"pool=0"}}, Runs: tc.runs}})
		_, row, _ := strings.Cut(b.String(), "\n  pool=0")
		if got := strings.Contains(row, "±"); got != tc.spread {
			t.Errorf("%d runs: the table shows a spread: %v, want %v:\n%s", len(tc.runs), got, tc.spread, b.String())
		}
	}
}

// fixtureRuns are the report's fixtures (a short SQLite sweep of
// Stock-Online), their metric set to values: n runs.
func fixtureRuns(t *testing.T, values ...float64) []*result.Result {
	t.Helper()
	path := filepath.Join("..", "report", "testdata", "runs", "sweep", "experiment-1", "pool=0-1.json")
	var runs []*result.Result
	for _, v := range values {
		r, err := result.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r.Summary.Metric.Value = v
		runs = append(runs, r)
	}
	return runs
}

// The table's interval is the mean's 95% confidence interval from
// Student's t, not the standard deviation, and the CSV carries its
// half-width: for 10, 12, 14 the mean is 12, the sd 2 and the interval
// ± t(0.975, 2) · 2 / √3 = ± 4.302653 · 1.154701 = ± 4.968275; for 10 and
// 12, ± 12.706205 · √2 / √2.
func TestTableShowsTheConfidenceInterval(t *testing.T) {
	t.Parallel()
	e := &sweep.Experiment{Name: "experiment-1"}
	for _, tc := range []struct {
		values   []float64
		row, sd  string
		ci95     float64
		ciColumn string
	}{
		{[]float64{10, 12, 14}, "12.0 ± 5.0", "2.0", 4.968275, "tps_ci95"},
		{[]float64{10, 12}, "11.0 ± 12.7", "1.4", 12.706205, "tps_ci95"},
		{[]float64{10}, "10.0 ", "-", 0, "tps_ci95"},
	} {
		outs := []sweep.Outcome{{Point: sweep.Point{Experiment: e, Values: []string{"pool=0"}}, Runs: fixtureRuns(t, tc.values...)}}
		var b bytes.Buffer
		sweep.WriteTable(&b, outs)
		if !strings.Contains(b.String(), "(mean ± 95% CI)") {
			t.Errorf("the table's header does not say its interval is the 95%% CI:\n%s", b.String())
		}
		_, row, _ := strings.Cut(b.String(), "\n  pool=0")
		fields := strings.Fields(row)
		if got := strings.Join(fields[:len(strings.Fields(tc.row))], " "); got != strings.TrimSpace(tc.row) {
			t.Errorf("%v: row %q, want it to start %q", tc.values, row, tc.row)
		}
		if sdAt := len(strings.Fields(tc.row)); fields[sdAt] != tc.sd {
			t.Errorf("%v: sd column %q, want %q", tc.values, fields[sdAt], tc.sd)
		}
		var csv bytes.Buffer
		if err := sweep.WriteCSV(&csv, outs); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(csv.String(), "\n")
		header, values := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
		col := slices.Index(header, tc.ciColumn)
		if col < 0 {
			t.Fatalf("CSV header %v lacks %s", header, tc.ciColumn)
		}
		got, err := strconv.ParseFloat(values[col], 64)
		if err != nil || math.Abs(got-tc.ci95) > 1e-5 {
			t.Errorf("%v: %s = %q, want %.6f", tc.values, tc.ciColumn, values[col], tc.ci95)
		}
	}
}

// A point whose runs' checks held but one of which was interrupted is
// marked INTERRUPTED, not CHECKS FAILED; a failed check is CHECKS FAILED
// whether or not the run was interrupted.
func TestTableMarksInterruptedRunsApartFromFailedChecks(t *testing.T) {
	t.Parallel()
	e := &sweep.Experiment{Name: "experiment-1"}
	for _, tc := range []struct {
		interrupted, failCheck bool
		want                   string
	}{
		{false, false, ""},
		{true, false, " INTERRUPTED"},
		{true, true, " CHECKS FAILED"},
		{false, true, " CHECKS FAILED"},
	} {
		runs := fixtureRuns(t, 10, 12)
		if len(runs[1].Checks) == 0 {
			t.Fatal("the fixture has no checks to fail")
		}
		runs[1].Summary.Interrupted = tc.interrupted
		if tc.failCheck {
			runs[0].Checks[0].Passed = false
		}
		var b bytes.Buffer
		sweep.WriteTable(&b, []sweep.Outcome{{Point: sweep.Point{Experiment: e, Values: []string{"pool=0"}}, Runs: runs}})
		_, row, _ := strings.Cut(b.String(), "\n  pool=0")
		row, _, _ = strings.Cut(row, "\n")
		var mark string
		for _, m := range []string{" INTERRUPTED", " CHECKS FAILED"} {
			if strings.HasSuffix(row, m) {
				mark = m
			}
		}
		if mark != tc.want {
			t.Errorf("interrupted %v, a check failed %v: row %q marked %q, want %q", tc.interrupted, tc.failCheck, row, mark, tc.want)
		}
	}
}
