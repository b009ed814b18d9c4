package result

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func fixtureInfo() workload.Info {
	return workload.Info{Name: "demo", Operations: []string{"Read", "Write"}, Metric: workload.Metric{Name: "TPS", Per: time.Second},
		Mix: workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}},
		Validity: &workload.Validity{
			ResponseTimes: []workload.ResponseTime{{Ops: []string{"Read", "Write"}, Quantile: 0.9, Max: 3 * time.Millisecond}},
			Mix:           []workload.Share{{Ops: []string{"Read"}, Percent: 90}, {Ops: []string{"Write"}, Percent: 10}}, MixTolerance: 0.05,
		}}
}

// fixture is a small run with known samples: two operations, queued
// clients, one business exception, one error, two checks.
func fixture() *Result {
	ops := []string{"Read", "Write"}
	rec := metrics.NewRecorder(ops, 2)
	for i := 0; i < 100; i++ {
		rec.Shard(i).Record(metrics.Sample{Op: 0, At: time.Duration(i) * 20 * time.Millisecond, Latency: time.Duration(1000+10*i) * time.Microsecond, Queue: 500 * time.Microsecond, Service: time.Duration(500+10*i) * time.Microsecond, Split: true, Measured: true, Finished: true})
	}
	rec.Shard(0).Record(metrics.Sample{Op: 1, Outcome: metrics.Success, Retries: 1, At: time.Second, Latency: 4 * time.Millisecond, Queue: time.Millisecond, Service: 3 * time.Millisecond, Split: true, Measured: true, Finished: true, Aborts: metrics.Aborts{Deadlock: 1}})
	rec.Shard(1).Record(metrics.Sample{Op: 1, Outcome: metrics.Business, At: time.Second, Latency: 2 * time.Millisecond, Queue: time.Millisecond, Service: time.Millisecond, Split: true, Measured: true, Finished: true})
	rec.Shard(0).Record(metrics.Sample{Op: 1, Outcome: metrics.Error, At: 1500 * time.Millisecond, Latency: 9 * time.Millisecond, Service: 9 * time.Millisecond, Measured: true, Finished: true})
	cfg := config.New("demo", config.Defaults{Clients: 4, ServerThreads: 2, Iterations: 1})
	return Build(Inputs{
		Version:     "test",
		Config:      cfg,
		Info:        fixtureInfo(),
		Environment: Environment{DB: "sqlite 3.54.1", Isolation: "serializable"},
		Started:     time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		Elapsed:     2 * time.Second,
		Window:      2 * time.Second,
		Snapshot:    rec.Snapshot(),
		Queued:      true,
		Database:    store.Stats{Statements: 205, Transactions: 3, Commits: 1, Rollbacks: 2},
		Entities: []workload.EntityStats{{
			Name:     "Thing",
			Settings: container.Settings{CommitOption: container.OptionA, Cache: container.Size{N: 100}, Pool: container.Size{Percent: 20, Relative: true}, Persistence: container.CMP, Concurrency: container.Exclusive},
			Stats:    container.Stats{Finds: 200, CacheHits: 150, TxHits: 10, Loads: 35, NotFound: 5, Stores: 10, Activations: 40, Passivations: 5, PeakReady: 60, PeakPooled: 5, ReadyAtEnd: 55, PooledAtEnd: 5, LockWaits: 3, CacheSize: 100, PoolSize: 20, Rows: 100},
		}},
		Checks: []workload.Check{
			{Name: "rows-match", Passed: true, Detail: "102 rows"},
			{Name: "no-negatives", Passed: false, Detail: "1 negative amount"},
		},
	})
}

func TestSummaryGolden(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	WriteSummary(&buf, r)
	golden(t, "summary.golden", buf.Bytes())
}

func TestResultFileGolden(t *testing.T) {
	r := fixture()
	b, err := r.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("the file is not JSON: %v", err)
	}
	golden(t, "result.golden.json", b)
}

func TestBuildFigures(t *testing.T) {
	r := fixture()
	s := r.Summary
	if s.Operations != 102 || s.Errors != 1 || s.BusinessExceptions != 1 || s.Retries != 1 {
		t.Errorf("summary counts %+v", s)
	}
	if s.ThroughputPerS != 51 || s.Metric.Value != 51 || s.Passed {
		t.Errorf("throughput %v, metric %+v, passed %v; want 51, 51, false (a check failed)", s.ThroughputPerS, s.Metric, s.Passed)
	}
	if w := r.Operations["Write"]; w.Queue == nil || w.ErrorLatency == nil || w.Latency.Max < 4 || w.Latency.Max > 4.004 {
		t.Errorf("Write = %+v", w)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/result -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// A run that fell behind its schedule says so under its metric: the
// transactions due in the steady state and those that finished in it.
func TestSummaryNamesARunBehindSchedule(t *testing.T) {
	for _, tc := range []struct {
		completed int64
		behind    bool
	}{{102, false}, {101, false}, {60, true}} {
		r := fixture()
		r.Summary.Completed = tc.completed
		var buf bytes.Buffer
		WriteSummary(&buf, r)
		want := fmt.Sprintf("behind schedule: 102 transactions were due in the steady state, %d finished in it", tc.completed)
		if got := strings.Contains(buf.String(), want); got != tc.behind {
			t.Errorf("%d of 102 finished: summary says %q: %v, want %v\n%s", tc.completed, want, got, tc.behind, buf.String())
		}
	}
}

func TestSummaryNamesTheTerminals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups []workload.Group
		setup  func(config.Run) string
		want   string
	}{
		{"one group", []workload.Group{{Name: "clients", Clients: 4}}, nil, "· 4 clients, 2 server threads,"},
		{"groups and a setup", []workload.Group{{Name: "order-entry", Clients: 25}, {Name: "planned-lines", Clients: 15}, {Name: "large-order-line", Clients: 1}},
			func(c config.Run) string { return fmt.Sprintf("Ir %d", c.Scale) },
			"· Ir 1: 25 order-entry, 15 planned-lines, 1 large-order-line terminals, 2 server threads,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.New("demo", config.Defaults{Clients: 4, ServerThreads: 2, Iterations: 1})
			if tc.setup != nil {
				cfg.Options = setupOptions{setup: tc.setup}
			}
			r := Build(Inputs{Config: cfg, Info: workload.Info{Name: "demo"}, Groups: tc.groups})
			var buf bytes.Buffer
			WriteSummary(&buf, r)
			if first := strings.SplitN(buf.String(), "\n", 2)[0]; !strings.Contains(first, tc.want) {
				t.Errorf("first line %q lacks %q", first, tc.want)
			}
			if len(r.Terminals) != len(tc.groups) {
				t.Errorf("result has %d terminal groups, want %d", len(r.Terminals), len(tc.groups))
			}
		})
	}
}

// TestTiers: the remote calls of each kind of page add up in the total,
// per page figures divide by the pages, and the summary shows them.
func TestTiers(t *testing.T) {
	in := &workload.Tiers{Style: "session", Protocol: "grpc", Processes: 1, Calls: []workload.RemoteCalls{
		{Name: "/PHP/ViewItem.php", Pages: 4, Counts: remote.Counts{Calls: 4, BytesOut: 80, BytesIn: 4000, Call: 4 * time.Millisecond, Bean: 3 * time.Millisecond}},
		{Name: "/PHP/index.html", Pages: 4},
	}}
	tiers := buildTiers(in)
	want := TierCalls{Pages: 8, Calls: 4, BytesOut: 80, BytesIn: 4000, CallMs: 4, BeanMs: 3, LayerMs: 1,
		CallsPerPage: 0.5, BytesOutPerPage: 10, BytesInPerPage: 500, LayerMsPerPage: 0.125}
	if tiers.Total != want || len(tiers.Pages) != 2 || tiers.Pages[0].CallsPerPage != 1 {
		t.Errorf("tiers %+v\nwant total %+v", tiers, want)
	}
	r := fixture()
	r.Tiers = tiers
	var buf bytes.Buffer
	WriteSummary(&buf, r)
	line := "tiers: style session, 1 process, calls over grpc: 0.50 per interaction, 10 B out and 500 B in per interaction, 0.125 ms per interaction in the layer (4 calls, 0 answered with an error)\n"
	if !strings.Contains(buf.String(), line) {
		t.Errorf("summary:\n%s\nwant the line %q", buf.String(), line)
	}
	if buildTiers(nil) != nil {
		t.Error("an in-process middle tier has a tiers section")
	}
}

// A placed run's summary says where the database and tierbench ran, on
// its first line; its result keeps the CPU sets, and a result without
// them reads as before.
func TestSummaryPlacement(t *testing.T) {
	r := fixture()
	r.Environment.DB = "postgres 15.20"
	r.Environment.Placement, r.Environment.AppCPUs, r.Environment.DBCPUs = "dual", "0-1", "2"
	var b bytes.Buffer
	WriteSummary(&b, r)
	first, _, _ := strings.Cut(b.String(), "\n")
	if !strings.Contains(first, "postgres 15.20 (placement dual: tierbench on CPUs 0-1, database on CPU 2)") {
		t.Errorf("first line %q does not say the placement", first)
	}
	data, err := json.Marshal(r.Environment)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"placement":"dual","app_cpus":"0-1","db_cpus":"2"`) {
		t.Errorf("environment %s", data)
	}
	data, _ = json.Marshal(fixture().Environment)
	if strings.Contains(string(data), "placement") || strings.Contains(string(data), "cpus\":\"") {
		t.Errorf("an unplaced run's environment %s mentions placement", data)
	}
}

// A rule a run was too short to judge is marked skip, not ok, and the
// verdict line counts it apart (the ECperf README example printed "ok"
// beside "not judged").
func TestSummaryMarksRulesNotJudged(t *testing.T) {
	var b strings.Builder
	writeVerdicts(&b, "validity", []workload.Check{
		{Name: "response times", Passed: true, Detail: "90th percentiles within limits"},
		{Name: "mix OrderStatus", Passed: true, Detail: "not judged: 21.28% of 343"},
	})
	want := "validity: all 2 passed (1 not judged)\n" +
		"  ok   response times   90th percentiles within limits\n" +
		"  skip mix OrderStatus  not judged: 21.28% of 343\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// setupOptions are a workload's options that describe the run's setup.
type setupOptions struct {
	workload.NoOptions
	setup func(config.Run) string
}

func (o setupOptions) Setup(c config.Run) string { return o.setup(c) }

// A cluster's certification failures and lost nodes are said in the
// summary; without them the lines stay as they were (the golden above).
func TestSummaryClusterLines(t *testing.T) {
	r := fixture()
	r.Summary.Aborts = metrics.Aborts{Deadlock: 1, Certification: 4}
	r.Database.CertificationFailures = 4
	r.Database.NodesLost = []store.NodeLoss{{Node: "127.0.0.1:4307", At: time.Date(2026, 12, 2, 6, 0, 1, 500e6, time.UTC), InDoubt: 1, Retried: 2, Failed: 3}}
	var buf bytes.Buffer
	WriteSummary(&buf, r)
	for _, want := range []string{
		"aborts: 1 deadlock, 0 lock timeout, 0 serialization, 4 certification (by operation, deadlock/timeout/serialization/certification:",
		", 4 certification failures",
		"database node 127.0.0.1:4307 lost at 06:00:01.500: its connections moved to the survivors; 2 transactions and reads retried, 1 commits in doubt, 3 statements failed",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
	b, err := r.MarshalFile()
	if err != nil || !strings.Contains(string(b), `"certification": 4`) || !strings.Contains(string(b), `"nodes_lost": [`) {
		t.Errorf("result file lacks the certification aborts or the lost node (%v)", err)
	}
}

// A replica lost and taken back is said with both times and the reads it
// had since; one still out, with its loss alone.
func TestSummaryReplicaOutages(t *testing.T) {
	r := fixture()
	at := func(s float64) time.Time {
		return time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
	}
	lost, back, lost2 := at(1.5), at(4.25), at(7)
	r.Database.Replicas = &store.ReplicaSummary{Reads: store.Eventual, Replicas: []store.ReplicaStats{
		{Replica: "postgres://postgres@127.0.0.1:5643/test", Reads: 90, Lost: &lost, Outages: []store.ReplicaOutage{
			{Lost: lost, Back: &back, ReadsAfter: 40}, {Lost: lost2}}},
		{Replica: "postgres://postgres@127.0.0.1:5644/test", Reads: 120},
	}}
	var buf bytes.Buffer
	WriteSummary(&buf, r)
	for _, want := range []string{
		"replica postgres://postgres@127.0.0.1:5643/test lost at 06:00:01.500: its reads moved to the other replicas and the primary; back at 06:00:04.250, 40 reads since\n",
		"replica postgres://postgres@127.0.0.1:5643/test lost at 06:00:07.000: its reads moved to the other replicas and the primary\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "5644/test lost") {
		t.Errorf("the replica never lost is said lost:\n%s", buf.String())
	}
	b, err := r.MarshalFile()
	if err != nil || !strings.Contains(string(b), `"reads_after_back": 40`) {
		t.Errorf("result file lacks the outage (%v)", err)
	}
}
