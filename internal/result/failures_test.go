package result

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/metrics"
)

// failing records n failures of class on operation op.
func failing(rec *metrics.Recorder, op, n int, class, msg string) {
	for i := range n {
		rec.Shard(i).Record(metrics.Sample{Op: op, Outcome: metrics.Error, At: time.Second, Latency: time.Millisecond, Measured: true, Finished: true})
		rec.Shard(i).RecordFailure(op, class, func() string { return msg })
	}
}

func failuresResult(rec *metrics.Recorder) *Result {
	return Build(Inputs{Version: "test", Config: config.New("demo", config.Defaults{Clients: 2, Iterations: 1}), Info: fixtureInfo(),
		Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Elapsed: 2 * time.Second, Window: 2 * time.Second, Snapshot: rec.Snapshot()})
}

// The result keeps each operation's failures by class, through its file,
// and the merge of agents' results adds them exactly; the summary names
// them.
func TestResultKeepsFailuresByClass(t *testing.T) {
	ops := []string{"Read", "Write"}
	one, two, all := metrics.NewRecorder(ops, 2), metrics.NewRecorder(ops, 2), metrics.NewRecorder(ops, 2)
	for _, rec := range []*metrics.Recorder{one, all} {
		failing(rec, 1, 3, "disk_full", "database or disk is full (13)")
		failing(rec, 0, 1, "timeout", "context deadline exceeded")
	}
	for _, rec := range []*metrics.Recorder{two, all} {
		failing(rec, 1, 4, "disk_full", "database or disk is full (13)")
		failing(rec, 1, 2, "constraint", "NOT NULL constraint failed:\n t.n")
	}
	r := failuresResult(one)
	want := metrics.Failures{"disk_full": {Count: 3, Sample: "database or disk is full (13)"}}
	if got := r.Operations["Write"].Failures; !reflect.DeepEqual(got, want) {
		t.Errorf("Write's failures %v, want %v", got, want)
	}

	// Through the file and the agents' merge.
	var merged *metrics.Snapshot
	for i, rec := range []*metrics.Recorder{one, two} {
		path := filepath.Join(t.TempDir(), "r.json")
		if err := failuresResult(rec).WriteFile(path); err != nil {
			t.Fatal(err)
		}
		back, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := back.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			merged = &s
		} else if err := merged.Merge(s); err != nil {
			t.Fatal(err)
		}
	}
	exact := failuresResult(all)
	got := Build(Inputs{Config: exact.Config, Info: fixtureInfo(), Window: 2 * time.Second, Snapshot: *merged})
	for _, op := range ops {
		if g, w := got.Operations[op].Failures, exact.Operations[op].Failures; !reflect.DeepEqual(g, w) {
			t.Errorf("%s: merged failures %v, want %v", op, g, w)
		}
		if g := got.Operations[op]; g.Failures.Total() != g.Errors+g.InDoubt {
			t.Errorf("%s: %d failures by class, %d errors and in doubt", op, g.Failures.Total(), g.Errors+g.InDoubt)
		}
	}

	var out bytes.Buffer
	WriteSummary(&out, exact)
	for _, line := range []string{
		"failures by class (count, first message):",
		"  Read                   timeout                    1  context deadline exceeded",
		"  Write                  disk_full                  7  database or disk is full (13)",
		"  Write                  constraint                 2  NOT NULL constraint failed: t.n",
	} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("summary lacks %q:\n%s", line, out.String())
		}
	}
}
