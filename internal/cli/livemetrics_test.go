package cli

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: not the Prometheus text format: %v", err)
	}
	return fams
}

// value of the family's series whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func stage(fams map[string]*dto.MetricFamily) string {
	for _, s := range []string{"starting", "driving", "draining", "checking", "done"} {
		if v, _ := value(fams, "tierbench_run_stage", map[string]string{"stage": s}); v == 1 {
			return s
		}
	}
	return ""
}

// waitMetricsURL is the metrics URL a command says on stderr it serves
// at, once it has said it.
func waitMetricsURL(t *testing.T, stderr *lockedBuffer) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := metricsLine.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no metrics URL on stderr: %q", stderr.String())
	return ""
}

// A run's metrics, scraped while it drives and once it is done: the
// documented names are there, and the final steady-state counts and
// latency sample counts equal the result file's, operation by operation.
func TestMetricsListenMatchesResult(t *testing.T) {
	reg, err := workload.NewRegistry(stockonline.New())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), Env{
			// Paced by a think time: the comparison needs operations in
			// every stage, not as many as the machine can run (a full-speed
			// run on in-process SQLite is CPU for its whole length).
			Args: []string{"run", "stockonline", "--clients", "4", "--server-threads", "2", "--think-time", "5ms", "--duration", "2s", "--ramp-up", "500ms", "--ramp-down", "500ms",
				"--metrics-listen", "127.0.0.1:0", "--metrics-linger", "3s", "--out", out},
			Stdout: &stdout, Stderr: &stderr, Backends: storetest.Backends(), Workloads: reg, Version: "test",
		})
	}()
	url := waitMetricsURL(t, &stderr)
	sawDriving := false
	var final map[string]*dto.MetricFamily
	for deadline := time.Now().Add(60 * time.Second); final == nil && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		fams := scrape(t, url)
		switch stage(fams) {
		case "driving":
			if v, _ := value(fams, "tierbench_operations_total", map[string]string{"operation": "QueryById", "outcome": "success"}); v > 0 {
				sawDriving = true
			}
		case "done":
			final = fams
		}
	}
	if !sawDriving {
		t.Error("no scrape while driving showed finished operations")
	}
	if final == nil {
		t.Fatalf("the run never showed stage done; stderr: %s", stderr.String())
	}
	if c := <-code; c != 0 {
		t.Fatalf("run exit %d: %s %s", c, stdout.String(), stderr.String())
	}
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tierbench_run_stage", "tierbench_run_elapsed_seconds", "tierbench_operations_total", "tierbench_steady_operations_total",
		"tierbench_operations_in_flight", "tierbench_operation_latency_seconds", "tierbench_operation_queue_seconds", "tierbench_operation_service_seconds",
		"tierbench_container_finds_total", "tierbench_container_loads_total", "tierbench_container_ready_instances"} {
		if final[name] == nil {
			t.Errorf("metric %s missing", name)
		}
	}
	if v, _ := value(final, "tierbench_operations_in_flight", nil); v != 0 {
		t.Errorf("%v operations in flight after the run", v)
	}
	for _, name := range res.OperationOrder {
		op := res.Operations[name]
		get := func(metric, outcome string) int64 {
			labels := map[string]string{"operation": name}
			if outcome != "" {
				labels["outcome"] = outcome
			}
			v, ok := value(final, metric, labels)
			if !ok {
				t.Errorf("%s %s %s: no series", metric, name, outcome)
			}
			return int64(v)
		}
		steady := get("tierbench_steady_operations_total", "success") + get("tierbench_steady_operations_total", "business")
		if steady != op.Count || get("tierbench_steady_operations_total", "business") != op.BusinessExceptions ||
			get("tierbench_steady_operations_total", "error") != op.Errors || get("tierbench_steady_operations_total", "in_doubt") != op.InDoubt {
			t.Errorf("%s: metrics say %d completed, the result %d (business %d, errors %d)", name, steady, op.Count, op.BusinessExceptions, op.Errors)
		}
		if n := get("tierbench_operation_latency_seconds", ""); n != op.Count {
			t.Errorf("%s: latency histogram of %d samples, the result counts %d", name, n, op.Count)
		}
		if all := get("tierbench_operations_total", "success") + get("tierbench_operations_total", "business"); all < op.Count {
			t.Errorf("%s: %d finished over the whole run, fewer than the steady state's %d", name, all, op.Count)
		}
	}
	for entity, st := range res.Container {
		for counter, want := range map[string]int64{"finds": st.Finds, "cache_hits": st.CacheHits, "tx_hits": st.TxHits, "loads": st.Loads, "not_found": st.NotFound} {
			if v, ok := value(final, "tierbench_container_"+counter+"_total", map[string]string{"entity": entity}); !ok || int64(v) != want {
				t.Errorf("%s %s: metrics %v (series found: %v), result %d", entity, counter, v, ok, want)
			}
		}
	}
}

func TestMetricsListenBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-listen", "127.0.0.1:notaport"}, `"notaport" is not a port`},
		{[]string{"--metrics-listen", "a:b:c"}, "want PORT, :PORT (loopback) or HOST:PORT"},
		{[]string{"--metrics-linger", "5s"}, "needs --metrics-listen"},
		{[]string{"--metrics-listen", "0.0.0.0:0"}, "--metrics-listen 0.0.0.0:0 reaches other hosts"},
		{[]string{"--metrics-listen", "[::]:0"}, "give --metrics-token-file FILE"},
		{[]string{"--metrics-listen", "127.0.0.1:0", "--metrics-token-file", "/nonexistent/token"}, "--metrics-token-file: stat /nonexistent/token"},
		{[]string{"--metrics-listen", "127.0.0.1:0", "--metrics-token-file", "/dev/zero"}, "--metrics-token-file: /dev/zero is not a regular file"},
	} {
		args := append([]string{"run", "stockonline", "--iterations", "1", "--clients", "1"}, tc.args...)
		code, _, stderr := runCLI(t, args...)
		if code != ExitUsage || !bytes.Contains([]byte(stderr), []byte(tc.want)) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}
