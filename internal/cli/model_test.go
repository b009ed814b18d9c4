package cli

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/model"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// TestModelReproducesARun runs Stock-Online on SQLite for a few seconds,
// then models its result: at the run's own clients the model's throughput
// must be the measured one (the remaining demand is fitted to it; the
// tolerance covers the table's rounding to 0.1/s and the fit's bisection).
// The clients think 2 ms between operations (the model finds the think
// time by Little's law, as it finds any), so that the run does not take
// the machine's CPU for its whole length.
func TestModelReproducesARun(t *testing.T) {
	dir := t.TempDir()
	resFile := filepath.Join(dir, "so.json")
	code, out, stderr := runCLI(t, "run", "stockonline", "--db", "sqlite:"+filepath.Join(dir, "so.db"), "--scale", "1",
		"--clients", "8", "--server-threads", "4", "--think-time", "2ms", "--duration", "2s", "--ramp-up", "500ms", "--out", resFile, "--quiet")
	if code != 0 {
		t.Fatalf("run exit %d:\n%s%s", code, out, stderr)
	}
	res, err := result.ReadFile(resFile)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Resources
	if r == nil || r.AppCPUS <= 0 || r.DBCPUSource != result.DBCPUInProcess || r.SteadyS != res.Summary.ElapsedS || r.AppCPUs < 1 {
		t.Fatalf("resources of a SQLite run: %+v (steady state %v s)", r, res.Summary.ElapsedS)
	}
	measured := float64(res.Summary.Completed) / res.Summary.ElapsedS

	csvFile := filepath.Join(dir, "model.csv")
	code, out, stderr = runCLI(t, "model", resFile, "--clients", "1..100", "--csv", csvFile)
	if code != 0 {
		t.Fatalf("model exit %d:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"at the run's 8 clients: measured", "think", "cpu", "threads  pool", "SQLite runs in it", "clients", "bottleneck", "← measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("model output does not say %q:\n%s", want, out)
		}
	}
	var rows []int
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		rows = append(rows, n)
		if n != 8 {
			continue
		}
		x, err := strconv.ParseFloat(f[1], 64)
		if err != nil || math.Abs(x-measured) > 0.001*measured+0.1 {
			t.Errorf("model at the run's 8 clients: %q, measured %.1f/s", line, measured)
		}
	}
	if want := []int{1, 2, 5, 8, 10, 20, 50, 100}; !slices.Equal(rows, want) {
		t.Errorf("table rows %v, want %v:\n%s", rows, want, out)
	}
	f, err := os.Open(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 9 || recs[0][0] != "clients" || recs[4][0] != "8" {
		t.Fatalf("csv: %v %v", err, recs)
	}
	// Columns are snake_case; the latency station, a delay, has no
	// utilisation but the operations in it at once: X·D, the model's
	// throughput times the time each spends there.
	col := map[string]int{}
	for i, h := range recs[0] {
		if strings.ContainsAny(h, " -") || strings.ToLower(h) != h {
			t.Errorf("csv column %q is not snake_case", h)
		}
		col[h] = i
	}
	if _, ok := col["latency_utilisation_pct"]; ok {
		t.Error("csv gives the latency delay a utilisation")
	}
	inService, ok := col["latency_in_service"]
	if !ok {
		t.Fatalf("csv lacks latency_in_service: %v", recs[0])
	}
	for _, rec := range recs[1:] {
		x, _ := strconv.ParseFloat(rec[1], 64)
		r, _ := strconv.ParseFloat(rec[col["latency_residence_ms"]], 64)
		got, _ := strconv.ParseFloat(rec[inService], 64)
		if math.Abs(got-x*r/1000) > 0.01*got+0.002 {
			t.Errorf("%s clients: latency_in_service %v, X·R %v", rec[0], got, x*r/1000)
		}
	}
	x, _ := strconv.ParseFloat(recs[4][1], 64)
	if math.Abs(x-measured) > 1e-6*measured+0.001 {
		t.Errorf("csv at 8 clients: %v/s, measured %v/s", x, measured)
	}
}

// modelResult writes a small result with resources, as a run of 10
// clients on SQLite would: 1000 operations in 10 s, 2 s of CPU on 2 CPUs.
func modelResult(t *testing.T, dir string, withResources bool) string {
	t.Helper()
	cfg := config.New("stockonline", stockonline.New().Info().Defaults)
	cfg.Clients, cfg.ServerThreads = 10, 4
	r := &result.Result{
		Schema: result.Schema, Workload: "stockonline",
		Config:       cfg,
		Environment:  result.Environment{DB: "sqlite 3", CPUs: 2},
		Summary:      result.Summary{Completed: 1000, Operations: 1000, ElapsedS: 10},
		Terminals:    []result.Terminals{{Group: "clients", Count: 10}},
		TotalLatency: metrics.Latency{Mean: 50},
		TotalService: metrics.Latency{Mean: 40},
		TotalQueue:   metrics.Latency{Mean: 10},
	}
	if withResources {
		r.Resources = result.BuildResources(&result.ResourceInputs{
			Start: result.CPUSample{At: time.Unix(0, 0)}, End: result.CPUSample{At: time.Unix(10, 0), App: 2 * time.Second},
			Window: 10 * time.Second, AppCPUSource: "getrusage", DBCPUSource: result.DBCPUInProcess, AppCPUs: 2, SharedCPUs: true,
		})
	}
	path := filepath.Join(dir, "r.json")
	if !withResources {
		path = filepath.Join(dir, "old.json")
	}
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestModelBadInput(t *testing.T) {
	dir := t.TempDir()
	good := modelResult(t, dir, true)
	old := modelResult(t, dir, false)
	notJSON := filepath.Join(dir, "notes.txt")
	os.WriteFile(notJSON, []byte("not a result\n"), 0o644)
	rubisResult := filepath.Join(t.TempDir(), "rubis.json")
	if r, err := result.ReadFile(good); err != nil {
		t.Fatal(err)
	} else {
		r.Workload = "rubis"
		r.Terminals[0].Count = 20
		if err := r.WriteFile(rubisResult); err != nil {
			t.Fatal(err)
		}
	}
	otherSchema := filepath.Join(dir, "other.json")
	b, _ := json.Marshal(map[string]any{"schema": "someone/else/v9"})
	os.WriteFile(otherSchema, b, 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"model"}, "name a RESULT.json"},
		{"two files at one load", []string{"model", good, good}, "a load-dependent demand needs two different loads"},
		{"calibrate with an older result", []string{"model", good, "--calibrate", old}, "old.json: the result has no CPU time of its steady state"},
		{"calibrate missing", []string{"model", good, "--calibrate", filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
		{"calibrate other workload", []string{"model", good, "--calibrate", rubisResult}, "workloads stockonline and rubis"},
		{"no servers", []string{"model", good, "--app-servers", "0"}, `--app-servers "0": 0 is out of range; want a number of app servers or a list (1,2,4), each from 1 to 32`},
		{"too many servers", []string{"model", good, "--app-servers", "1,1000"}, `--app-servers "1,1000": 1000 is out of range`},
		{"servers not a number", []string{"model", good, "--app-servers", "two"}, `--app-servers "two": "two" is not a whole number`},
		{"invalidation without servers", []string{"model", good, "--invalidation-cost", "1ms"}, "give --app-servers N with them"},
		{"negative invalidation", []string{"model", good, "--app-servers", "2", "--invalidation-cost", "-1ms"}, "--invalidation-cost -1ms: want a duration from 0 to 1m"},
		{"missing file", []string{"model", filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
		{"not json", []string{"model", notJSON}, "is not a tierbench result: not JSON"},
		{"other schema", []string{"model", otherSchema}, `schema "someone/else/v9"`},
		{"older result", []string{"model", old}, "its run predates that measurement"},
		{"zero clients", []string{"model", good, "--clients", "0"}, `--clients "0": 0 is out of range; want a number of clients (100), a list (1,10,100) or a range (1..1000)`},
		{"not a number", []string{"model", good, "--clients", "many"}, `--clients "many": "many" is not a whole number; want a number of clients`},
		{"backwards range", []string{"model", good, "--clients", "100..10"}, `--clients "100..10": the range ends (10) before it starts (100)`},
		{"open range", []string{"model", good, "--clients", "1.."}, `--clients "1..": "" is not a whole number`},
		{"bad list", []string{"model", good, "--clients", "1,,3"}, `--clients "1,,3": "" is not a whole number`},
		{"too many", []string{"model", good, "--clients", "2000000"}, "2000000 is out of range"},
		{"negative step", []string{"model", good, "--step", "-1"}, "--step -1: want a whole number of clients, 1 or more"},
		{"csv not writable", []string{"model", good, "--csv", filepath.Join(dir, "no", "dir", "m.csv")}, "m.csv: the table cannot be written there: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and a first line that says %q", code, stderr, tt.want)
			}
			if len(lines) != 2 || lines[1] != "tierbench: see 'tierbench model --help'" {
				t.Errorf("a usage error is one line and a pointer to the command's help; stderr:\n%s", stderr)
			}
		})
	}
}

func TestModelOfASmallResult(t *testing.T) {
	// 1000 operations in 10 s: X = 100/s; R = 50 ms, so Z = 10/100 − 0.05
	// = 50 ms; CPU 2 s / 1000 = 2 ms per operation on 2 CPUs.
	good := modelResult(t, t.TempDir(), true)
	code, out, stderr := runCLI(t, "model", good, "--clients", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	for _, want := range []string{"at the run's 10 clients: measured 100.0/s, 50.000 ms; model 100.0/s (+0.0%), 50.000 ms", "think", "50.000 ms", "2.000 ms", "tierbench's CPU time 2.00 s", "← measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}

func TestParseClients(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec      string
		step, run int
		want      []int
	}{
		{"1..1000", 0, 100, []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}},
		{"1..1000", 0, 30, []int{1, 2, 5, 10, 20, 30, 50, 100, 200, 500, 1000}},
		{"3..70", 0, 100, []int{3, 5, 10, 20, 50, 70}},
		{"1..20", 5, 100, []int{1, 6, 11, 16, 20}},
		{"5..5", 0, 1, []int{5}},
		{"1,10,100", 0, 50, []int{1, 10, 100}},
		{"100, 1, 100", 0, 50, []int{100, 1}},
		{"7", 0, 50, []int{7}},
	}
	for _, tt := range tests {
		got, err := parseClients(tt.spec, tt.step, tt.run)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("parseClients(%q, step %d, run %d) = %v, %v; want %v", tt.spec, tt.step, tt.run, got, err, tt.want)
		}
	}
}

// The server threads are a resource: all busy while the CPU is at 16.4%,
// they are the bottleneck (the model named "cpu 16.4").
func TestModelNamesBusyServerThreadsTheBottleneck(t *testing.T) {
	n := model.Network{Stations: []model.Station{{Name: "cpu", Kind: model.Queue, Servers: 1}, {Name: "db", Kind: model.Delay}}, Admission: 10}
	busy := model.Point{Stations: []model.StationPoint{{Utilisation: 0.164}, {Utilisation: 3}}, Pool: &model.StationPoint{Utilisation: 1}}
	if name, u := bottleneck(n, busy); name != threadsName || u != 1 {
		t.Errorf("threads 100%% busy, cpu 16.4%%: bottleneck %s %.1f%%, want threads 100%%", name, 100*u)
	}
	idle := model.Point{Stations: []model.StationPoint{{Utilisation: 0.9}, {Utilisation: 3}}, Pool: &model.StationPoint{Utilisation: 0.5}}
	if name, _ := bottleneck(n, idle); name != "cpu" {
		t.Errorf("cpu 90%%, threads 50%%: bottleneck %s, want cpu", name)
	}
}

func TestModelAppServers(t *testing.T) {
	// The small result's 2 ms of CPU per operation, all tierbench's
	// (SQLite in it), split over 2 app servers of 2 CPUs: 1 ms each. A
	// commit waits 1 ms for its peer: the result counted no commits, so
	// one per operation.
	dir := t.TempDir()
	good := modelResult(t, dir, true)
	csvFile := filepath.Join(dir, "cluster.csv")
	code, out, stderr := runCLI(t, "model", good, "--clients", "10,100", "--app-servers", "1,2", "--invalidation-cost", "1ms", "--csv", csvFile)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	for _, want := range []string{"1 app server:", "2 app servers:", "app 2 cpu", "1.000 ms   1/2 of the app servers' CPU demand (2.00 ms per operation)",
		"invalidation", "each commit waits --invalidation-cost 1ms", "one commit per operation (the run counted none)",
		"SQLite runs inside each app server", "bottleneck", "from one server's run alone the spread misses what each added process costs"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	recs := readCSV(t, csvFile)
	if len(recs) != 5 || strings.Join(recs[0], ",") != "app_servers,clients,throughput_per_s,response_ms,bottleneck,bottleneck_utilisation_pct,solver" || recs[3][0] != "2" || recs[3][1] != "10" {
		t.Fatalf("csv: %v", recs)
	}
	// Two servers: twice the threads and half the CPU demand on each;
	// with 100 clients the model's throughput cannot fall.
	x1, _ := strconv.ParseFloat(recs[2][2], 64)
	x2, _ := strconv.ParseFloat(recs[4][2], 64)
	if x2 < x1 {
		t.Errorf("100 clients: 1 server %v/s, 2 servers %v/s", x1, x2)
	}
}

func TestModelFitsRunsOnSeveralServers(t *testing.T) {
	// One server: 100/s, 50 ms, 2 ms of CPU per operation. Two servers
	// on the same host: 80/s, 75 ms (the same 50 ms between operations),
	// 3 ms of CPU: each added server costs 1 ms of CPU per operation.
	// The fit goes through both runs, so on one host the model has the
	// two-server run's throughput; four servers extrapolate the line.
	dir := t.TempDir()
	one := modelResult(t, dir, true)
	r, err := result.ReadFile(one)
	if err != nil {
		t.Fatal(err)
	}
	r.Config.AppServers = 2
	r.Summary.Completed, r.Summary.Operations = 800, 800
	r.TotalLatency.Mean, r.TotalService.Mean = 75, 65
	r.Resources = result.BuildResources(&result.ResourceInputs{
		Start: result.CPUSample{At: time.Unix(0, 0)}, End: result.CPUSample{At: time.Unix(10, 0), App: 2400 * time.Millisecond},
		Window: 10 * time.Second, AppCPUSource: "getrusage + /proc of the tier processes", DBCPUSource: result.DBCPUInProcess, AppCPUs: 2, SharedCPUs: true,
	})
	two := filepath.Join(dir, "two.json")
	if err := r.WriteFile(two); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "model", one, two, "--same-host", "--clients", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	for _, want := range []string{
		"fitted to " + two + ", 2 app servers, 10 clients: measured 80.0/s; model on one host 80.0/s (+0.0%)",
		"1 app server:", "2 app servers:", "3.00 ms per operation on 2 app servers: 2.00 ms on one +1.000 ms per server beyond the first",
		"the demands grow with the servers as the runs measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "model", one, two, "--same-host", "--clients", "10", "--app-servers", "4")
	if code != 0 || !strings.Contains(out, "5.00 ms per operation on 4 app servers") || !strings.Contains(out, "4 servers extrapolates the line beyond the 2 measured") {
		t.Errorf("exit %d, 4 servers:\n%s", code, out)
	}
	code, _, stderr = runCLI(t, "model", two, one)
	if code != 2 || !strings.Contains(stderr, "the first result must be a run on one app server (it had 2)") {
		t.Errorf("a fit from a two-server run: exit %d, %s", code, stderr)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestModelCalibrated models two of the committed runs of
// internal/model/testdata/load (PostgreSQL, 1 and 8 clients): the output
// names the second run, gives both laws, and marks both runs' rows.
func TestModelCalibrated(t *testing.T) {
	dir := filepath.Join("..", "model", "testdata", "load", "postgres")
	code, out, stderr := runCLI(t, "model", filepath.Join(dir, "clients=1-2.json"), "--calibrate", filepath.Join(dir, "clients=8-3.json"), "--clients", "1..32")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	for _, want := range []string{"calibrated on ../model/testdata/load/postgres/clients=8-3.json, 8 clients (7.95 operations in service): measured 11326.9/s; model 11339.5/s (+0.1%)",
		"load-dependent, D(k) = 0.138 ms + 0.136 ms/k", "load-dependent, D(k) = 0.026 ms + 0.057 ms·(k − 1)", "← measured 3312.1/s", "← measured 11326.9/s",
		"exact MVA at each load, the middle tier as a load-dependent flow-equivalent server"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}
