package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"

	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// served is a `serve` running in the test's process until the test ends:
// where it serves, and where its metrics are.
type served struct {
	url, metrics string
}

var (
	servingLine = regexp.MustCompile(`serving .* on ([a-z]+://[^\s;]+)`)
	metricsLine = regexp.MustCompile(`metrics: (http://\S+/metrics)`)
)

// startServe runs `tierbench serve args…` with ws registered and waits for
// its URL and its metrics' URL; the test's end interrupts it.
func startServe(t *testing.T, ws []workload.Workload, args ...string) served {
	t.Helper()
	reg, err := workload.NewRegistry(ws...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, Env{Args: append([]string{"serve"}, args...), Stdout: &stdout, Stderr: &stderr,
			Backends: storetest.Backends(), Workloads: reg, Version: "test"})
	}()
	t.Cleanup(func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("serve exit %d: %s", c, stderr.String())
		}
	})
	var s served
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := servingLine.FindStringSubmatch(stdout.String()); m != nil {
			s.url = m[1]
		}
		if m := metricsLine.FindStringSubmatch(stderr.String()); m != nil {
			s.metrics = m[1]
		}
		if s.url != "" && s.metrics != "" {
			return s
		}
		select {
		case c := <-code:
			t.Fatalf("serve exit %d before serving: %s %s", c, stdout.String(), stderr.String())
		default:
		}
	}
	t.Fatalf("serve never said where it serves: %q %q", stdout.String(), stderr.String())
	return s
}

// loadSQLite loads workload at scale 1 into a new SQLite file.
func loadSQLite(t *testing.T, ws []workload.Workload, name string) string {
	t.Helper()
	db := "sqlite:" + filepath.Join(t.TempDir(), name+".db")
	if code, _, stderr := runCLIWith(t, ws, "load", name, "--db", db, "--scale", "1"); code != 0 {
		t.Fatalf("load %s: exit %d: %s", name, code, stderr)
	}
	return db
}

// checkContainerSeries checks that the served container's counters are
// the series a run exports, one set per entity type, and that each
// type's finds are its cache hits, tx hits, loads and not-founds, as the
// container counts them. It returns the finds of all types.
func checkContainerSeries(t *testing.T, fams map[string]*dto.MetricFamily) float64 {
	t.Helper()
	f := fams["tierbench_container_finds_total"]
	if f == nil {
		t.Fatal("no tierbench_container_finds_total: the container's counters are not exported")
	}
	var finds float64
	for _, m := range f.Metric {
		var entity string
		for _, l := range m.Label {
			if l.GetName() == "entity" {
				entity = l.GetValue()
			}
		}
		labels := map[string]string{"entity": entity}
		var parts float64
		for _, c := range []string{"cache_hits", "tx_hits", "loads", "not_found"} {
			v, ok := value(fams, "tierbench_container_"+c+"_total", labels)
			if !ok {
				t.Errorf("%s: no tierbench_container_%s_total", entity, c)
			}
			parts += v
		}
		if got := m.Counter.GetValue(); got != parts {
			t.Errorf("%s: %v finds, but %v cache hits + tx hits + loads + not found", entity, got, parts)
		}
		finds += m.Counter.GetValue()
	}
	return finds
}

// The RUBiS site served on SQLite, driven by a few GETs: each page's
// requests, latency samples and errors are counted exactly, under its
// route; a path no route matches counts as "other", not as itself; and
// the container's counters are exported as a run's are.
func TestServeMetricsRUBiSPages(t *testing.T) {
	ws := []workload.Workload{rubis.New()}
	db := loadSQLite(t, ws, "rubis")
	s := startServe(t, ws, "rubis", "--db", db, "--persistence", "cmp", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	get := func(path string, want int) {
		t.Helper()
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
	for range 3 {
		get("/PHP/index.html", http.StatusOK)
	}
	for range 2 {
		get("/PHP/BrowseCategories.php", http.StatusOK)
	}
	get("/PHP/no-such-page.php", http.StatusNotFound)
	get("/PHP/no-such-page-either.php", http.StatusNotFound)

	fams := scrape(t, s.metrics)
	for _, tc := range []struct {
		operation, outcome, code string
		want                     float64
	}{
		{"/PHP/index.html", "success", "200", 3},
		{"/PHP/BrowseCategories.php", "success", "200", 2},
		{"other", "error", "404", 2},
	} {
		labels := map[string]string{"workload": "rubis", "tier": "site", "operation": tc.operation, "outcome": tc.outcome, "code": tc.code}
		if v, ok := value(fams, "tierbench_served_requests_total", labels); !ok || v != tc.want {
			t.Errorf("tierbench_served_requests_total%v = %v (series found: %v), want %v", labels, v, ok, tc.want)
		}
		if v, _ := value(fams, "tierbench_served_request_latency_seconds", map[string]string{"tier": "site", "operation": tc.operation}); v != tc.want {
			t.Errorf("%s: latency histogram of %v samples, want %v", tc.operation, v, tc.want)
		}
	}
	if f := fams["tierbench_served_requests_total"]; f == nil || len(f.Metric) != 3 {
		t.Errorf("want 3 request series (two pages, other), got %v", f)
	}
	if v, ok := value(fams, "tierbench_served_requests_in_flight", map[string]string{"tier": "site"}); !ok || v != 0 {
		t.Errorf("%v requests in flight (series found: %v) after all were answered", v, ok)
	}
	if v, _ := value(fams, "tierbench_run_stage", map[string]string{"stage": "serving"}); v != 1 {
		t.Error("stage is not serving")
	}
	if finds := checkContainerSeries(t, fams); finds == 0 {
		t.Error("browsing the categories found no entity in the container")
	}
}

// Stock-Online's business tier served over gRPC and over HTTP, called by
// the remote layer's client: each remote method's calls are counted
// exactly by the code they were answered with, refused calls (a wrong
// token) among the errors; and the container's counters are the tier's.
func TestServeMetricsStockOnlineRemote(t *testing.T) {
	ws := []workload.Workload{stockonline.New()}
	db := loadSQLite(t, ws, "stockonline")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"grpc", "http"} {
		t.Run(protocol, func(t *testing.T) {
			s := startServe(t, ws, "stockonline", "--db", db, "--persistence", "cmp", "--protocol", protocol, "--token-file", tokenFile,
				"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
			checkServedCalls(t, s)
		})
	}
}

// checkServedCalls calls the Stock-Online business tier s serves 5 times
// with its token and twice with a wrong one, and checks what its metrics
// count.
func checkServedCalls(t *testing.T, s served) {
	t.Helper()
	queryStock(t, s.url, "s3cret", 5, codes.OK)
	queryStock(t, s.url, "wrong", 2, codes.Unauthenticated)

	fams := scrape(t, s.metrics)
	const method = "tierbench.stockonline.Broker/QueryById"
	for _, tc := range []struct {
		outcome, code string
		want          float64
	}{{"success", "OK", 5}, {"error", "Unauthenticated", 2}} {
		labels := map[string]string{"workload": "stockonline", "tier": "business", "operation": method, "outcome": tc.outcome, "code": tc.code}
		if v, ok := value(fams, "tierbench_served_requests_total", labels); !ok || v != tc.want {
			t.Errorf("tierbench_served_requests_total%v = %v (series found: %v), want %v", labels, v, ok, tc.want)
		}
	}
	if v, _ := value(fams, "tierbench_served_request_latency_seconds", map[string]string{"tier": "business", "operation": method}); v != 7 {
		t.Errorf("latency histogram of %v samples, want 7", v)
	}
	if f := fams["tierbench_served_requests_total"]; f == nil || len(f.Metric) != 2 {
		t.Errorf("want 2 request series (QueryById answered, refused), got %v", f)
	}
	if finds := checkContainerSeries(t, fams); finds < 5 {
		t.Errorf("5 queries of a stock made %v finds in the container", finds)
	}
}
