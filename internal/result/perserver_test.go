package result

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

// SIPS per app server is the metric over the run's app servers, counted
// from the completions (not the rounded metric); it is in the summary only
// for a workload whose reference defines it, and the partners' counters
// reach the result and its summary.
func TestMetricPerAppServerAndPartners(t *testing.T) {
	t.Parallel()
	rec := metrics.NewRecorder([]string{"Read", "Write"}, 1)
	for range 601 { // 601 in 2 s: 300.5 a second
		rec.Shard(0).Record(metrics.Sample{Op: 0, Outcome: metrics.Success, At: time.Second, Latency: time.Millisecond, Measured: true, Finished: true})
	}
	info := fixtureInfo()
	build := func(servers int, perServer bool) *Result {
		cfg := config.New("demo", config.Defaults{Clients: 2, Iterations: 1})
		cfg.AppServers = servers
		i := info
		i.Metric.PerAppServer = perServer
		return Build(Inputs{Config: cfg, Info: i, Window: 2 * time.Second, Snapshot: rec.Snapshot(),
			Partners: []workload.Partner{{Name: "sne", URL: "http://127.0.0.1:1", InProcess: true, Counts: map[string]int64{"requests": 7, "duplicates": 1, "label_bytes": 3 << 20}}}})
	}
	for _, tc := range []struct {
		servers int
		want    float64
	}{{0, 300.5}, {1, 300.5}, {3, 100.2}} {
		r := build(tc.servers, true)
		if v := r.Summary.SIPSPerAppServer; v == nil || *v != tc.want || r.Summary.Metric.Value != 300.5 {
			t.Errorf("%d app servers: metric %v, per app server %v; want 300.5 and %v", tc.servers, r.Summary.Metric.Value, v, tc.want)
		}
	}
	r := build(3, false)
	if r.Summary.SIPSPerAppServer != nil {
		t.Errorf("a workload without the per-server metric has sips_per_app_server %v", *r.Summary.SIPSPerAppServer)
	}
	r = build(3, true)
	var out bytes.Buffer
	WriteSummary(&out, r)
	for _, line := range []string{"SIPS per app server 100.2   (over 3 app servers)", "partners: sne 7 notices (1 again), 3.0 MiB of labels"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, out.String())
		}
	}
	out.Reset()
	WriteSummary(&out, build(1, true))
	if want := "SIPS per app server 300.5   (one app server)"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	if len(r.Partners) != 1 || r.Partners[0].Counts["label_bytes"] != 3<<20 || !r.Partners[0].InProcess {
		t.Errorf("partners %+v", r.Partners)
	}
}
