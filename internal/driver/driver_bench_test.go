package driver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

type noopTarget struct{}

func (noopTarget) NewClient(int, int, *rand.Rand) workload.Client { return noopClient{} }

type noopClient struct{}

func (noopClient) Do(context.Context, workload.Step) error { return nil }

// BenchmarkNoopOperation drives a no-op operation through the whole driver
// path: dealing, admission (when threads < clients), three clock reads and
// recording into the sharded HDR histograms. The target is at least
// 1,000,000 operations per second on the 2-core development machine.
func BenchmarkNoopOperation(b *testing.B) {
	for _, c := range []struct{ clients, threads int }{{4, 2}, {100, 10}, {4, 4}} {
		b.Run(fmt.Sprintf("clients=%d/threads=%d", c.clients, c.threads), func(b *testing.B) {
			ops := []string{"noop"}
			mix := workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 1}}}
			iterations := max(b.N/c.clients, 1)
			rec := metrics.NewRecorder(ops, metrics.Shards(c.clients, len(ops), c.threads < c.clients))
			b.ReportAllocs()
			b.ResetTimer()
			rep, err := Run(context.Background(), Config{ServerThreads: c.threads, Iterations: iterations, Seed: 1}, []workload.Group{{Clients: c.clients, Mix: mix}}, noopTarget{}, rec)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			total := float64(iterations * c.clients)
			b.ReportMetric(total/rep.Elapsed.Seconds(), "ops/s")
		})
	}
}
