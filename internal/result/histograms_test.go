package result

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tierbench/tierbench/internal/metrics"
)

// A result written to a file and read back gives back the snapshot it was
// built from: every count, every steady-state histogram, every second's.
func TestResultHistogramsRoundTrip(t *testing.T) {
	r := fixture()
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Histograms == nil || back.Histograms.Encoding != Encoding || back.Histograms.Unit != "ns" {
		t.Fatalf("histograms section = %+v", back.Histograms)
	}
	snap, err := back.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	read := snap.Ops[0]
	if read.Name != "Read" || read.Latency.Count() != 100 || read.Queue.Count() != 100 || read.Service.Count() != 100 {
		t.Errorf("Read: %s with %d latencies, %d queue, %d service; want Read, 100 each", read.Name, read.Latency.Count(), read.Queue.Count(), read.Service.Count())
	}
	if got, want := read.Latency.Summary(), (metrics.Latency{Mean: back.Operations["Read"].Latency.Mean}); roundLatency(got).P99 != back.Operations["Read"].Latency.P99 || roundLatency(got).Mean != want.Mean {
		t.Errorf("Read latency from its histogram %+v, the result says %+v", roundLatency(got), back.Operations["Read"].Latency)
	}
	write := snap.Ops[1]
	if write.Successes != 1 || write.Business != 1 || write.Errors != 1 || write.ErrorLatency.Count() != 1 || write.Retries != 1 || write.Aborts.Deadlock != 1 {
		t.Errorf("Write rebuilt as %+v", write)
	}
	if !slices.Equal(snap.Succeeded, []int64{100, 1}) || !slices.Equal(snap.InDoubt, []int64{0, 0}) {
		t.Errorf("whole-run outcomes rebuilt as %v succeeded, %v in doubt; want [100 1], [0 0]", snap.Succeeded, snap.InDoubt)
	}
	// Rebuilding the result from the rebuilt snapshot reproduces it.
	again := Build(Inputs{Version: "test", Config: r.Config, Info: fixtureInfo(), Environment: r.Environment, Started: r.StartedAt,
		Elapsed: 2e9, Window: 2e9, Snapshot: snap, Queued: true})
	for _, name := range r.OperationOrder {
		if again.Operations[name].Latency != r.Operations[name].Latency || again.Operations[name].Count != r.Operations[name].Count {
			t.Errorf("%s rebuilt: %+v, want %+v", name, again.Operations[name], r.Operations[name])
		}
	}
	if len(again.Timeseries) != len(r.Timeseries) {
		t.Fatalf("rebuilt timeseries has %d points, want %d", len(again.Timeseries), len(r.Timeseries))
	}
	for i := range r.Timeseries {
		if again.Timeseries[i] != r.Timeseries[i] {
			t.Errorf("second %d rebuilt as %+v, want %+v", i+1, again.Timeseries[i], r.Timeseries[i])
		}
	}

	old := *back
	old.Histograms = nil
	if _, err := old.Snapshot(); err == nil {
		t.Error("a result without histograms gave a snapshot")
	}
}
