package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// run describes a fixture run: its seconds (ramps of rampS at each end
// included), its operations, how many of each finish per second, and
// each sample's latency.
type fixtureRun struct {
	seconds, rampS, perSecond int
	ops                       []string
	latency                   func(sec, op, i int) time.Duration
}

// build records the run's samples, evenly spread over each second, and
// builds its result as tierbench run would.
func (f fixtureRun) build() *result.Result {
	rec := metrics.NewRecorder(f.ops, 1)
	sh := rec.Shard(0)
	ramp := time.Duration(f.rampS) * time.Second
	end := time.Duration(f.seconds) * time.Second
	for sec := 0; sec < f.seconds; sec++ {
		// Seconds differ a little, as a real run's do.
		n := len(f.ops) * (f.perSecond + sec*7%5 - 2)
		for k := 0; k < n; k++ {
			op, i := k%len(f.ops), k/len(f.ops)
			at := time.Duration(sec)*time.Second + time.Duration(k)*time.Second/time.Duration(n)
			lat := f.latency(sec, op, i)
			steady := at-lat >= ramp && at < end-ramp
			sh.Record(metrics.Sample{Op: op, At: at, Latency: lat, Service: lat, Measured: steady, Finished: steady})
		}
	}
	cfg := config.New("demo", config.Defaults{Clients: 4, ServerThreads: 2, Duration: end, RampUp: ramp, RampDown: ramp})
	cfg.Seed = 7
	return result.Build(result.Inputs{
		Version:     "test",
		Config:      cfg,
		Info:        workload.Info{Name: "demo", Operations: f.ops, Metric: workload.Metric{Name: "TPS", Per: time.Second}},
		Environment: result.Environment{DB: "sqlite 3.54.1", Isolation: "serializable", Go: "go1.26", CPUs: 2, OS: "linux", Arch: "amd64", Host: "testhost"},
		Started:     time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		Elapsed:     end,
		Window:      end - 2*ramp,
		Snapshot:    rec.Snapshot(),
		Checks:      []workload.Check{{Name: "rows-match", Passed: true, Detail: "all rows"}},
	})
}

// twoOps is a 20-second run of Read (1 ms and up) and Write (3 ms and
// up), 50 of each per second; slower makes every latency that much longer.
func twoOps(slower time.Duration) fixtureRun {
	return fixtureRun{seconds: 20, rampS: 2, perSecond: 50, ops: []string{"Read", "Write"},
		latency: func(sec, op, i int) time.Duration {
			return time.Millisecond*time.Duration(1+2*op) + time.Duration(i*37%50)*100*time.Microsecond + slower
		}}
}

// writeRun writes r as a result file in dir and reads it back as a Run.
func writeRun(t testing.TB, dir, name string, r *result.Result) *Run {
	t.Helper()
	path := filepath.Join(dir, name+".json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(path)
	if err != nil {
		t.Fatal(err)
	}
	return run
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
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/report -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
