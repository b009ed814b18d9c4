package report

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
)

// Each second's row per operation holds the result's count, errors and
// the percentiles of that second's histogram; the "all" row their sums
// and merge.
func TestSeriesCSV(t *testing.T) {
	t.Parallel()
	r := twoOps(0).build()
	var b bytes.Buffer
	if err := WriteSeriesCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "t_s,phase,operation,count,errors,p50_ms,p90_ms,p99_ms,p999_ms" {
		t.Errorf("header %v", rows[0])
	}
	if want := 1 + 20*3; len(rows) != want {
		t.Fatalf("%d rows, want %d (20 seconds × 2 operations and all)", len(rows), want)
	}
	// 2-second ramps of a 20-second run.
	phase := func(t int) string {
		switch {
		case t <= 2:
			return "ramp-up"
		case t > 18:
			return "ramp-down"
		}
		return "steady"
	}
	// Latencies to the microsecond: the bucket's bound, not its digits.
	us := func(d time.Duration) string { return num(float64(d.Round(time.Microsecond)) / 1e6) }
	for _, s := range r.Histograms.Seconds {
		var all *metrics.Histogram
		for i, o := range s.Ops {
			row := rows[1+(s.T-1)*3+i]
			h, err := metrics.DecodeHistogram(o.Latency)
			if err != nil {
				t.Fatal(err)
			}
			q := h.Quantiles()
			want := []string{strconv.Itoa(s.T), phase(s.T), r.OperationOrder[i], strconv.FormatInt(o.Count, 10), "0", us(q.P50), us(q.P90), us(q.P99), us(q.P999)}
			if strings.Join(row, ",") != strings.Join(want, ",") {
				t.Errorf("row %v, want %v", row, want)
			}
			if all == nil {
				all = h
			} else {
				all.Merge(h)
			}
		}
		total := rows[1+(s.T-1)*3+2]
		if total[1] != phase(s.T) || total[2] != AllOperations || total[3] != strconv.FormatInt(s.Ops[0].Count+s.Ops[1].Count, 10) || total[7] != us(all.Quantile(0.99)) {
			t.Errorf("second %d: all row %v", s.T, total)
		}
	}
}

// A result from before results held histograms still reports: text, and
// a page without spectra that says why; its CSV has the "all" rows.
func TestResultWithoutHistograms(t *testing.T) {
	t.Parallel()
	r := twoOps(0).build()
	r.Histograms = nil
	r.TierbenchVersion = "0.9"
	in := &Input{Runs: []*Run{{Path: "old.json", Name: "old", Result: r}}}
	var text, page, series bytes.Buffer
	if err := in.WriteText(&text); err != nil || !strings.Contains(text.String(), "TPS") {
		t.Errorf("text %q, %v", text.String(), err)
	}
	if err := in.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "holds no latency histograms (tierbench 0.9 wrote it before results had them)") || strings.Contains(page.String(), `id="chart-spectrum`) {
		t.Error("the page of a result without histograms does not say why it has no spectra")
	}
	if !strings.Contains(page.String(), `id="chart-throughput"`) {
		t.Error("the page lost its throughput chart")
	}
	if err := WriteSeriesCSV(&series, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(series.String()), "\n")
	if len(lines) != 21 || !strings.HasPrefix(lines[1], "1,ramp-up,all,") {
		t.Errorf("CSV of an old result:\n%s", series.String())
	}
}

// The CSV of a real run (Stock-Online on SQLite: 8 s, ramps of 1 s)
// names each second's phase, and no latency has digits below the
// microsecond.
func TestSeriesCSVOfARealRun(t *testing.T) {
	t.Parallel()
	run, err := ReadRun(filepath.Join("testdata", "runs", "stockonline-sqlite.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSeriesCSV(&b, run.Result); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	phases := map[string]string{}
	latencies := 0
	for _, row := range rows[1:] {
		phases[row[0]] = row[1]
		for _, v := range row[5:] {
			if v == "" {
				continue
			}
			latencies++
			if _, frac, _ := strings.Cut(v, "."); len(frac) > 3 {
				t.Errorf("second %s, %s: %s ms, finer than a microsecond", row[0], row[2], v)
			}
		}
	}
	want := map[string]string{"1": "ramp-up", "2": "steady", "7": "steady", "8": "ramp-down"}
	for sec, p := range want {
		if phases[sec] != p {
			t.Errorf("second %s is %q, want %q", sec, phases[sec], p)
		}
	}
	if latencies == 0 {
		t.Error("no latency in the CSV")
	}
}
