package sweep_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/sweep"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp"
)

func write(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sweep.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newRunner(t *testing.T) *runner.Runner {
	t.Helper()
	w, err := workload.NewRegistry(stockonline.New(), ecperf.New(), rubis.New(), tpcapp.New())
	if err != nil {
		t.Fatal(err)
	}
	return &runner.Runner{Backends: storetest.Backends(), Workloads: w, Version: "test"}
}

func TestParseIsStrict(t *testing.T) {
	for content, want := range map[string]string{
		"name: x\nexperiments: [{name: a}]\ncolour: red\n":                                      "field colour not found",
		"experiments: [{name: a}]\n":                                                            "needs a name",
		"name: x\nexperiments: [{name: a}, {name: a}]\n":                                        "unique name",
		"name: x\nrepetitions: -2\nexperiments: [{name: a}]\n":                                  "repetitions -2",
		"name: x\nexperiments: [{name: a, axes: {pool: 20%}}]\nbase: {workload: stockonline}\n": "list of values",
	} {
		f, err := sweep.Parse(write(t, content))
		if err == nil && f != nil {
			_, err = f.Points(withOptions(config.New("stockonline", config.Defaults{Clients: 1, ServerThreads: 1, Iterations: 1}), stockonline.DefaultOptions), nil)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", content, err, want)
		}
	}
}

func TestPointsExpandAxesInOrderWithPrecedence(t *testing.T) {
	f, err := sweep.Parse(write(t, `
name: grid
base: {workload: stockonline, clients: 7, cache: "5", pool: "1"}
experiments:
  - name: e
    set: {commit-option: B}
    axes:
      cache: ["0", "50%"]
      pool: ["10", "20", "30"]
`))
	if err != nil {
		t.Fatal(err)
	}
	defaults := withOptions(config.New("stockonline", config.Defaults{Clients: 100, ServerThreads: 10, Iterations: 10}), stockonline.DefaultOptions)
	points, err := f.Points(defaults, func(c *config.Run) error { c.Clients, c.Pool = 3, container.Size{N: 99}; return nil })
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, p := range points {
		labels = append(labels, p.Label())
		c := p.Config
		if c.Clients != 3 || c.ServerThreads != 10 || c.CommitOption != container.OptionB {
			t.Errorf("%s: clients %d (flag), server threads %d (default), option %s (experiment)", p.Label(), c.Clients, c.ServerThreads, c.CommitOption)
		}
		if "cache="+c.Cache.String()+" pool="+c.Pool.String() != p.Label() {
			t.Errorf("point %s configured cache %s, pool %s: the axes must win", p.Label(), c.Cache, c.Pool)
		}
	}
	want := "cache=0 pool=10|cache=0 pool=20|cache=0 pool=30|cache=50% pool=10|cache=50% pool=20|cache=50% pool=30"
	if got := strings.Join(labels, "|"); got != want {
		t.Errorf("points %s, want %s", got, want)
	}
}

// Variants vary settings together as one axis ahead of the others, over
// the experiment's set; their names label the points; a variant's unknown
// key, a missing or repeated name, are refused naming the experiment.
func TestVariantsVaryTogetherAheadOfTheAxes(t *testing.T) {
	f, err := sweep.Parse(write(t, `
name: styles
base: {workload: rubis, clients: 7}
experiments:
  - name: e
    set: {tiers: 2, mix: browsing}
    variants:
      - {name: servlets, style: servlets}
      - {name: entity-grpc, style: entity, protocol: grpc, tiers: 3}
    axes:
      clients: [10, 20]
`))
	if err != nil {
		t.Fatal(err)
	}
	points, err := f.Points(withOptions(config.New("rubis", config.Defaults{Clients: 100, ServerThreads: 10}), rubis.DefaultOptions), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range points {
		c := p.Config
		o := c.Options.(rubis.Options)
		got = append(got, fmt.Sprintf("%s: %s %s %d %s %d", p.Label(), o.Style, o.Protocol, o.Tiers, o.Mix, c.Clients))
	}
	want := []string{
		"variant=servlets clients=10: servlets http 2 browsing 10",
		"variant=servlets clients=20: servlets http 2 browsing 20",
		"variant=entity-grpc clients=10: entity grpc 3 browsing 10",
		"variant=entity-grpc clients=20: entity grpc 3 browsing 20",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("points:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct{ variants, want string }{
		{"[{name: a, colour: red}]", "e variant a"},
		{"[{style: servlets}]", `variant name ""`},
		{"[{name: a}, {name: a}]", "two variants are named a"},
		{"[[style]]", "a variant must be a mapping"},
	} {
		f, err := sweep.Parse(write(t, "name: s\nbase: {workload: rubis}\nexperiments: [{name: e, variants: "+tc.variants+"}]\n"))
		if err == nil {
			_, err = f.Points(withOptions(config.New("rubis", config.Defaults{Clients: 1, ServerThreads: 1}), rubis.DefaultOptions), nil)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("variants %s: error %v, want one saying %q", tc.variants, err, tc.want)
		}
	}
}

func TestShippedBrebnerRanSweepIsValid(t *testing.T) {
	f, err := sweep.Parse("../../experiments/brebner-ran.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	base, _, _ := r.Config("stockonline")
	points, err := f.Points(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 24 {
		t.Fatalf("%d points, want 4 experiments × 6 sizes", len(points))
	}
	for _, p := range points {
		if err := r.Validate(p.Config); err != nil {
			t.Errorf("%s %s: %v", p.Experiment.Name, p.Label(), err)
		}
	}
	if c := points[23].Config; c.CommitOption != container.OptionA || c.Concurrency != container.Exclusive || c.Cache.String() != "200%" || c.Pool.String() != "20%" || !c.Options.(stockonline.Options).Warmup || c.Clients != 100 {
		t.Errorf("experiment 4 at 200%%: %+v", c)
	}
}

func TestShippedKounevChoppingSweepIsValid(t *testing.T) {
	f, err := sweep.Parse("../../experiments/kounev-chopping.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	base, _, _ := r.Config("ecperf")
	points, err := f.Points(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 68 {
		t.Fatalf("%d points, want 2 databases × (3 dispatch modes × 6 Ir + 2 chopped modes × 4 Ir) + SQLite's 2 modes × 4 Ir + MariaDB with table locks' 2 modes × 4 Ir", len(points))
	}
	for _, p := range points {
		if err := r.Validate(p.Config); err != nil {
			t.Errorf("%s %s: %v", p.Experiment.Name, p.Label(), err)
		}
	}
	if c, o := points[51].Config, points[51].Config.Options.(ecperf.Options); o.PODispatch != "queue" || o.IR != 40 || o.CycleScale != 0.2 || c.DB.Dialect != store.Postgres {
		t.Errorf("last point: %+v", c)
	}
}

func TestShippedSweepsAreValid(t *testing.T) {
	r := newRunner(t)
	for _, tc := range []struct {
		file, workload string
		points         int
		why            string
	}{
		{"rubis-clients.yaml", "rubis", 32, "2 databases × 2 mixes × (5 client counts + 3 beyond)"},
		{"cecchet-styles.yaml", "rubis", 180, "2 databases × 2 mixes × 15 styles and protocols × 3 client counts"},
		{"cecchet-core.yaml", "rubis", 14, "7 styles and protocols × 2 client counts"},
		{"asskildt-tuning.yaml", "tpcapp", 48, "4 experiments × 2 variants × 6 counts of businesses"},
		{"cluster-caching.yaml", "stockonline", 18, "6 options × 3 counts of app servers"},
		{"cluster-caching-rubis.yaml", "rubis", 18, "6 options × 3 counts of app servers"},
		{"kounev-concurrency.yaml", "ecperf", 10, "2 strategies × 3 Ir, then 2 strategies × 2 access orders"},
		{"read-mostly.yaml", "ecperf", 2, "the pattern off and on"},
		{"cluster-caching-writes.yaml", "stockonline", 12, "3 write ratios × 4 options"},
	} {
		base, _, _ := r.Config(tc.workload)
		f, err := sweep.Parse("../../experiments/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		points, err := f.Points(base, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(points) != tc.points {
			t.Errorf("%s: %d points, want %s", tc.file, len(points), tc.why)
		}
		// The styles' saturated points vary between runs: each runs 3
		// times, for an interval.
		if strings.HasPrefix(tc.file, "cecchet-") && f.Repetitions < 3 {
			t.Errorf("%s: %d repetitions, want at least 3", tc.file, f.Repetitions)
		}
		for _, p := range points {
			if err := r.Validate(p.Config); err != nil {
				t.Errorf("%s %s %s: %v", tc.file, p.Experiment.Name, p.Label(), err)
			}
		}
	}
}

func TestSweepRunsAndReports(t *testing.T) {
	f, err := sweep.Parse(write(t, `
name: small
base: {workload: stockonline, clients: 3, server-threads: 2, iterations: 1, warmup: true}
repetitions: 2
experiments:
  - name: opt
    title: options
    axes:
      commit-option: [B, C]
    paper: {B: 1, C: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	base, _, _ := r.Config("stockonline")
	dsn := storetest.SQLite(t)
	points, err := f.Points(base, func(c *config.Run) error { c.DB = store.MustParseDSN(dsn); return nil })
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var order []string
	outs, err := sweep.Execute(context.Background(), r, points, f.Repetitions, dir, func(p sweep.Point, rep int, _ *result.Result) {
		order = append(order, fmt.Sprintf("%s#%d", p.Label(), rep))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 4 || len(outs) != 2 || len(outs[0].Runs) != 2 {
		t.Fatalf("%d runs in %d outcomes, want 2 points × 2 repetitions", len(order), len(outs))
	}
	// Rounds: every point once, then every point again.
	if got, want := strings.Join(order, " "), "commit-option=B#1 commit-option=C#1 commit-option=B#2 commit-option=C#2"; got != want {
		t.Errorf("runs in the order %s, want rounds %s", got, want)
	}
	if outs[0].Point.Label() != "commit-option=B" || outs[1].Point.Label() != "commit-option=C" {
		t.Errorf("outcomes %s, %s: want the points' order", outs[0].Point.Label(), outs[1].Point.Label())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "opt", "*.json"))
	if len(files) != 4 {
		t.Errorf("%d result files, want 4: %v", len(files), files)
	}
	var table bytes.Buffer
	if err := sweep.Report(&table, dir, outs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"opt — options", "commit-option=B", "commit-option=C", "paper", "Account ready/pool/disc"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table does not say %q:\n%s", want, table.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "opt.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("CSV: %d rows, %v; want a header and 2 points", len(rows), err)
	}
	header := strings.Join(rows[0], ",")
	for _, col := range []string{"experiment,commit-option,runs,tps_mean,tps_sd", "Holding.peak_ready", "Transaction.discards"} {
		if !strings.Contains(header, col) {
			t.Errorf("CSV header lacks %q: %s", col, header)
		}
	}
	if rows[1][1] != "B" || rows[1][2] != "2" || rows[2][1] != "C" {
		t.Errorf("CSV rows: %v", rows[1:])
	}
	if _, err := os.Stat(filepath.Join(dir, "tables.txt")); err != nil {
		t.Error(err)
	}
}

// A workload with validity rules gets them in its table and CSV (whether
// response times and mix held, aborts, each operation's p90); the entity
// columns appear only when the experiment sets or varies a container
// setting.
func TestReportShowsValidityAndContainerColumnsWhenTheyMatter(t *testing.T) {
	f, err := sweep.Parse(write(t, `
name: r
base: {workload: ecperf}
experiments:
  - name: chop
    axes: {po-dispatch: [sync, queue]}
  - name: opts
    axes: {commit-option: [B, C]}
`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(rtOK, mixOK bool, aborts int64, checkOK bool) *result.Result {
		return &result.Result{
			OperationOrder: []string{"NewOrder", "ScheduleWorkOrder"},
			EntityOrder:    []string{"Order"},
			Operations: map[string]result.Operation{
				"NewOrder":          {Latency: metricsLatency(120)},
				"ScheduleWorkOrder": {Latency: metricsLatency(7000)},
			},
			Container: map[string]result.EntityStats{"Order": {}},
			Checks:    []workload.Check{{Name: "orders-match", Passed: checkOK}},
			Summary: result.Summary{Passed: rtOK && mixOK && checkOK, Metric: result.Metric{Name: "BBops/min", Value: 100},
				Aborts: abortsOf(aborts)},
			Validity: &result.Validity{Passed: rtOK && mixOK, ResponseTimesPassed: rtOK, MixPassed: mixOK},
		}
	}
	chop, opts := &f.Experiments[0], &f.Experiments[1]
	outs := []sweep.Outcome{
		{Point: sweep.Point{Experiment: chop, Values: []string{"po-dispatch=sync"}}, Runs: []*result.Result{run(false, true, 12, true)}},
		{Point: sweep.Point{Experiment: chop, Values: []string{"po-dispatch=queue"}}, Runs: []*result.Result{run(true, true, 0, true), run(true, false, 0, false)}},
		{Point: sweep.Point{Experiment: opts, Values: []string{"commit-option=B"}}, Runs: []*result.Result{run(true, true, 0, true)}},
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := sweep.Report(&out, dir, outs); err != nil {
		t.Fatal(err)
	}
	tables := strings.SplitN(out.String(), "opts", 2)
	lineOf := func(table, point string) string {
		for _, l := range strings.Split(table, "\n") {
			if strings.Contains(l, point) {
				return l
			}
		}
		t.Fatalf("no line for %s in:\n%s", point, table)
		return ""
	}
	sync, queue := lineOf(tables[0], "po-dispatch=sync"), lineOf(tables[0], "po-dispatch=queue")
	for _, tc := range []struct{ line, want string }{
		{sync, "no: resp. times"}, {sync, " 12"}, {queue, "no: mix"}, {queue, "CHECKS FAILED"},
		{tables[0], "valid"}, {tables[1], "Order ready/pool/disc"},
	} {
		if !strings.Contains(tc.line, tc.want) {
			t.Errorf("%q lacks %q", tc.line, tc.want)
		}
	}
	if strings.Contains(sync, "CHECKS FAILED") || strings.Contains(tables[0], "ready/pool/disc") {
		t.Errorf("chop table marks a passing point or shows entity columns:\n%s", tables[0])
	}
	rows := readCSV(t, filepath.Join(dir, "chop.csv"))
	header := strings.Join(rows[0], ",")
	if want := "aborts_mean,passed,checks_passed,valid,response_times_valid,mix_valid,NewOrder.p90_ms,ScheduleWorkOrder.p90_ms"; !strings.Contains(header, want) {
		t.Fatalf("CSV header %s\nlacks %s", header, want)
	}
	col := func(row []string, name string) string {
		for i, h := range rows[0] {
			if h == name {
				return row[i]
			}
		}
		return ""
	}
	for _, tc := range []struct {
		row       []string
		col, want string
	}{
		{rows[1], "response_times_valid", "false"}, {rows[1], "mix_valid", "true"}, {rows[1], "aborts_mean", "12"},
		{rows[1], "ScheduleWorkOrder.p90_ms", "7000"}, {rows[2], "checks_passed", "false"}, {rows[2], "mix_valid", "false"},
		{rows[2], "response_times_valid", "true"},
	} {
		if got := col(tc.row, tc.col); got != tc.want {
			t.Errorf("%s of %s = %q, want %q", tc.col, tc.row[1], got, tc.want)
		}
	}
}

func metricsLatency(p90 float64) metrics.Latency { return metrics.Latency{P90: p90} }

func abortsOf(n int64) metrics.Aborts { return metrics.Aborts{Deadlock: n} }

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// Tiered runs (a remote RUBiS style) report what crossing the tiers cost
// per page, as the mean over the point's runs; untiered ones have no such
// columns. Every point reports its p90.
func TestReportShowsTierCostsOfTieredRuns(t *testing.T) {
	f, err := sweep.Parse(write(t, `
name: styles
base: {workload: rubis}
experiments:
  - name: remote
    axes: {style: [entity]}
  - name: inproc
    axes: {style: [servlets]}
`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(calls, out, in float64, tiered bool) *result.Result {
		r := &result.Result{
			TotalLatency: metrics.Latency{P90: 250, P99: 900},
			Summary:      result.Summary{Passed: true, Metric: result.Metric{Name: "interactions/min", Value: 6000}},
		}
		if tiered {
			r.Tiers = &result.Tiers{Style: "entity", Protocol: "grpc", Processes: 3,
				Total: result.TierCalls{CallsPerPage: calls, BytesOutPerPage: out, BytesInPerPage: in, LayerMsPerPage: 1.5}}
		}
		return r
	}
	// The site in a child process (--tiers 2): a tiers section, no calls.
	siteAlone := run(0, 0, 0, false)
	siteAlone.Tiers = &result.Tiers{Style: "servlets", Processes: 2}
	outs := []sweep.Outcome{
		// An in-process point first: the experiment still gets the columns.
		{Point: sweep.Point{Experiment: &f.Experiments[0], Values: []string{"style=local"}}, Runs: []*result.Result{run(0, 0, 0, false)}},
		{Point: sweep.Point{Experiment: &f.Experiments[0], Values: []string{"style=entity"}}, Runs: []*result.Result{run(20, 900, 1500, true), run(30, 1100, 2500, true)}},
		{Point: sweep.Point{Experiment: &f.Experiments[1], Values: []string{"style=servlets"}}, Runs: []*result.Result{siteAlone}},
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := sweep.Report(&out, dir, outs); err != nil {
		t.Fatal(err)
	}
	tables := strings.SplitN(out.String(), "inproc", 2)
	for _, want := range []string{"calls/page", "25.00", "1000/2000", "p90 ms", "250.0"} {
		if !strings.Contains(tables[0], want) {
			t.Errorf("the tiered table lacks %q:\n%s", want, tables[0])
		}
	}
	if strings.Contains(tables[1], "calls/page") || !strings.Contains(tables[1], "250.0") {
		t.Errorf("the untiered table shows tier columns or lacks its p90:\n%s", tables[1])
	}
	rows := readCSV(t, filepath.Join(dir, "remote.csv"))
	header := strings.Join(rows[0], ",")
	if want := "p90_ms_mean,p99_ms_mean,errors_mean,aborts_mean,passed,checks_passed,calls_per_page,bytes_out_per_page,bytes_in_per_page,layer_ms_per_page"; !strings.Contains(header, want) {
		t.Fatalf("CSV header %s\nlacks %s", header, want)
	}
	if got := strings.Join(rows[1][len(rows[1])-4:], ","); got != "0,0,0,0" {
		t.Errorf("the in-process point's tier columns = %s, want zeros", got)
	}
	if got := strings.Join(rows[2][len(rows[2])-4:], ","); got != "25,1000,2000,1.5" {
		t.Errorf("tier columns = %s, want 25,1000,2000,1.5", got)
	}
	if header := strings.Join(readCSV(t, filepath.Join(dir, "inproc.csv"))[0], ","); strings.Contains(header, "calls_per_page") {
		t.Errorf("untiered CSV has tier columns: %s", header)
	}
}

// withOptions is c with a workload's options.
func withOptions(c config.Run, o any) config.Run {
	c.Options = o
	return c
}

// A reader of a sweep's results knows no workload: the labels of a file
// whose base and axes set a workload's options still come out (report of
// a sweep directory); Points with no options refuses those keys.
func TestLabelsNeedNoWorkloadOptions(t *testing.T) {
	f, err := sweep.Parse(write(t, "name: s\nbase: {workload: stockonline, warmup: true}\nexperiments: [{name: e, axes: {mix: [table-2, UpdateAccount=1], pool: [\"10\"]}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	points, err := f.Labels()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range points {
		got = append(got, p.Label())
	}
	if want := "mix=table-2 pool=10|mix=UpdateAccount=1 pool=10"; strings.Join(got, "|") != want {
		t.Errorf("labels %s, want %s", strings.Join(got, "|"), want)
	}
	if _, err := f.Points(config.Run{}, nil); err == nil || !strings.Contains(err.Error(), "unknown key warmup") {
		t.Errorf("Points without options: %v, want warmup refused", err)
	}
}
