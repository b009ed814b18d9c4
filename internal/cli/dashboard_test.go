package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
	pb "github.com/tierbench/tierbench/internal/workloads/stockonline/stockonlinepb"
)

const dashboardFile = "../../deploy/grafana/tierbench.json"

// dashboardPanel is what the check reads of a Grafana panel: its queries,
// and the panels a collapsed row holds.
type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// dashboardQueries are the PromQL expressions of a dashboard's panels
// (rows' nested panels included) and of its query variables
// (label_values(SELECTOR, label)), each under where it was found.
func dashboardQueries(raw []byte) (map[string]string, error) {
	var d struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	queries := map[string]string{}
	var walk func(path string, ps []dashboardPanel)
	walk = func(path string, ps []dashboardPanel) {
		for _, p := range ps {
			for i, t := range p.Targets {
				queries[fmt.Sprintf("%s%q target %d", path, p.Title, i)] = t.Expr
			}
			walk(fmt.Sprintf("%s%q > ", path, p.Title), p.Panels)
		}
	}
	walk("", d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				return nil, fmt.Errorf("variable %s: query is neither a string nor {query}: %s", v.Name, v.Query)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			return nil, fmt.Errorf("variable %s: %q is not label_values(SELECTOR, label)", v.Name, q.Query)
		}
		queries["variable "+v.Name] = m[1]
	}
	return queries, nil
}

// grafanaIntervals are the interval variables Grafana replaces before
// Prometheus sees the query.
var grafanaIntervals = regexp.MustCompile(`\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}`)

// seriesOf are the metric names expr selects, parsed by Prometheus's own
// parser (a query that does not parse is the error).
func seriesOf(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaIntervals.ReplaceAllString(expr, "5m"))
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			names = append(names, name)
		}
		return nil
	})
	if len(names) == 0 {
		return nil, fmt.Errorf("%q selects no series", expr)
	}
	return names, nil
}

// unknownSeries says, query by query, which series the dashboard asks
// for that are not exported (a histogram's or summary's name with
// _bucket, _sum or _count is exported).
func unknownSeries(raw []byte, exported map[string]*dto.MetricFamily) ([]string, error) {
	queries, err := dashboardQueries(raw)
	if err != nil {
		return nil, err
	}
	if len(queries) == 0 {
		return nil, fmt.Errorf("no query in the dashboard")
	}
	var bad []string
	for where, expr := range queries {
		names, err := seriesOf(expr)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		for _, name := range names {
			if !isExported(name, exported) {
				bad = append(bad, fmt.Sprintf("%s: %s is not a series tierbench exports", where, name))
			}
		}
	}
	slices.Sort(bad)
	return bad, nil
}

func isExported(name string, exported map[string]*dto.MetricFamily) bool {
	if f := exported[name]; f != nil && f.GetType() != dto.MetricType_HISTOGRAM {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		f := exported[base]
		switch {
		case f == nil:
		case f.GetType() == dto.MetricType_HISTOGRAM:
			return true
		case f.GetType() == dto.MetricType_SUMMARY && suffix != "_bucket":
			return true
		}
	}
	return false
}

// exportedSeries are the families tierbench's --metrics-listen serves, as
// scraped from a real run (on the entity container, clients outnumbering
// server threads: queue and service times) once it is done, and from a
// served business tier that answered a call.
func exportedSeries(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	ws := []workload.Workload{stockonline.New()}
	reg, err := workload.NewRegistry(ws...)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), Env{
			// Paced: the series exist after a few operations.
			Args: []string{"run", "stockonline", "--persistence", "cmp", "--clients", "6", "--server-threads", "2", "--think-time", "5ms", "--duration", "1s",
				"--ramp-up", "250ms", "--ramp-down", "250ms", "--metrics-listen", "127.0.0.1:0", "--metrics-linger", "3s",
				"--out", filepath.Join(t.TempDir(), "r.json")},
			Stdout: &stdout, Stderr: &stderr, Backends: storetest.Backends(), Workloads: reg, Version: "test",
		})
	}()
	url := waitMetricsURL(t, &stderr)
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(60 * time.Second); fams == nil && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if f := scrape(t, url); stage(f) == "done" {
			fams = f
		}
	}
	if fams == nil {
		t.Fatalf("the run never showed stage done: %s", stderr.String())
	}
	if c := <-code; c != 0 {
		t.Fatalf("run exit %d: %s", c, stderr.String())
	}

	db := loadSQLite(t, ws, "stockonline")
	s := startServe(t, ws, "stockonline", "--db", db, "--protocol", "grpc", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	queryStock(t, s.url, "", 1, codes.OK)
	for name, f := range scrape(t, s.metrics) {
		if fams[name] == nil {
			fams[name] = f
		}
	}
	return fams
}

// queryStock calls the business tier at url n times for a stock's quote,
// sending token, each call answered with want.
func queryStock(t *testing.T, url, token string, n int, want codes.Code) {
	t.Helper()
	protocol, addr, err := remote.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := remote.Dial(protocol, addr, remote.DialOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	broker := pb.NewBrokerClient(conn)
	for range n {
		if _, err := broker.QueryById(context.Background(), &pb.QueryByIdRequest{Stock: 1}); status.Code(err) != want {
			t.Fatalf("QueryById with token %q: %v, want code %s", token, err, want)
		}
	}
}

// The Grafana dashboard (deploy/grafana/tierbench.json) asks only for
// series tierbench exports: every PromQL query of its panels, nested rows
// and variables parses, and each series it names is one a real run or a
// served tier serves. A misspelt series in any query fails the check.
func TestDashboardQueriesNameExportedSeries(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedSeries(t)
	bad, err := unknownSeries(raw, exported)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}

	queries, _ := dashboardQueries(raw)
	var nested string
	for where := range queries {
		if strings.Contains(where, " > ") {
			nested = where
		}
	}
	if nested == "" {
		t.Fatal("the dashboard has no collapsed row's panel: the check of nested panels is untested")
	}
	for _, tc := range []struct{ from, to string }{
		{"tierbench_operations_total", "tierbench_operation_total"},
		{"tierbench_served_request_latency_seconds_bucket", "tierbench_served_request_latency_seconds_buckets"},
		{"tierbench_container_cache_hits_total", "tierbench_container_cache_hit_total"},
		{"process_resident_memory_bytes", "process_resident_memory"}, // in a collapsed row
		{`label_values(tierbench_run_stage,`, `label_values(tierbench_run_stages,`},
	} {
		misspelt := strings.Replace(string(raw), tc.from, tc.to, 1)
		if misspelt == string(raw) {
			t.Errorf("the dashboard has no %s to misspell", tc.from)
			continue
		}
		bad, err := unknownSeries([]byte(misspelt), exported)
		want := strings.TrimSuffix(strings.TrimPrefix(tc.to, "label_values("), ",")
		if err != nil || len(bad) != 1 || !strings.Contains(bad[0], want+" is not a series tierbench exports") {
			t.Errorf("%s misspelt %s: the check says %q, %v; want the one misspelt series", tc.from, tc.to, bad, err)
		}
	}
}
