package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/metrics"
)

// agentSeconds records n seconds of a 7-operation workload at rate
// operations per second and returns them as an agent reports them.
func agentSeconds(seed uint64, n, rate int) []metrics.Second {
	ops := []string{"a", "b", "c", "d", "e", "f", "g"}
	rec := metrics.NewRecorder(ops, 1)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range n * rate {
		lat := time.Duration(math.Exp(rng.NormFloat64()*0.5) * float64(time.Millisecond))
		rec.Shard(0).Record(metrics.Sample{Op: rng.IntN(len(ops)), At: time.Duration(i) * time.Second / time.Duration(rate), Latency: lat, Measured: true, Finished: true})
	}
	return rec.Snapshot().Series
}

// The coordinator's cost per progress report, each carrying one second
// of an agent's histograms (7 operations, 2,000 operations/s each) and
// its counts of commits by operation: with 10 agents reporting once a
// second, ns/op × 10 / 1e9 is the share of one core it takes (the
// issue's bound: 1%, i.e. 1 ms per report).
func BenchmarkCoordinatorProgress(b *testing.B) {
	const agents, seconds = 10, 30
	c := &coordination{reports: map[string]*Report{}, latest: map[string]Progress{}, chunks: map[string]*assembly{}, progress: func(int64, int64) {}, live: &Live{}}
	var msgs []*nats.Msg
	for a := range agents {
		id := fmt.Sprintf("agent%d", a)
		c.reports[id] = &Report{LastHeard: time.Now()}
		for i, s := range agentSeconds(uint64(a), seconds, 2000) {
			succeeded := []int64{1234567, 234567, 34567, 4567, 567, 67, 7}
			data, _ := json.Marshal(Progress{Agent: id, Ops: 123456789, Errors: 12, Seconds: []metrics.Second{s},
				At: int64(i+1) * int64(time.Second), Succeeded: succeeded, InDoubt: make([]int64, len(succeeded))})
			msgs = append(msgs, &nats.Msg{Subject: progressSubject("run"), Data: data})
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.onProgress(msgs[i%len(msgs)])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*agents/1e9*100, "%core@10agents")
}

// Seconds reported by two agents merge into the seconds of both: counts
// and histograms.
func TestLiveMergesAgentsSeconds(t *testing.T) {
	a, b := agentSeconds(1, 5, 500), agentSeconds(2, 5, 300)
	var live Live
	live.add(a[:3])
	live.add(b)
	live.add(a[3:])
	ops := live.Ops([]string{"a", "b", "c", "d", "e", "f", "g"})
	var total int64
	for _, o := range ops {
		total += o.Completed
	}
	if total != 5*800 {
		t.Errorf("merged %d operations, want %d", total, 5*800)
	}
	var want int64
	for i := range a {
		want += a[i].PerOp[0].Ops + b[i].PerOp[0].Ops
	}
	if h := ops[0].Latency; h == nil || h.Count() != want || ops[0].Completed != want {
		t.Errorf("first operation: %d completed, merged latency %v; want %d samples", ops[0].Completed, h, want)
	}
}
