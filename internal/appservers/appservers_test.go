package appservers

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

func stats(name string, s container.Stats) workload.EntityStats {
	return workload.EntityStats{Name: name, Stats: s}
}

// Since differences the counters and keeps the levels and sizes as at the
// end; Merge sums every counter and level exactly and keeps the sizes.
func TestSinceAndMerge(t *testing.T) {
	start := []workload.EntityStats{stats("Item", container.Stats{Finds: 10, Loads: 10, PeakReady: 7, ReadyAtEnd: 7, Rows: 100, CacheSize: 50})}
	end := []workload.EntityStats{
		stats("Item", container.Stats{Finds: 25, Loads: 12, CacheHits: 13, PeakReady: 9, ReadyAtEnd: 8, Rows: 100, CacheSize: 50, FinderHits: 4}),
		stats("Bid", container.Stats{Creates: 3}),
	}
	got := Since(end, start)
	want := container.Stats{Finds: 15, Loads: 2, CacheHits: 13, PeakReady: 9, ReadyAtEnd: 8, Rows: 100, CacheSize: 50, FinderHits: 4}
	if got[0].Stats != want || got[1].Stats != (container.Stats{Creates: 3}) {
		t.Fatalf("Since = %+v; want %+v and Bid's as it is", got, want)
	}
	other := []workload.EntityStats{stats("Bid", container.Stats{Creates: 2, Conflicts: 1}), stats("Item", container.Stats{Finds: 5, TxHits: 5, PeakReady: 1, Rows: 90, CacheSize: 45})}
	merged := Merge(got, other)
	if len(merged) != 2 || merged[0].Name != "Item" || merged[1].Name != "Bid" {
		t.Fatalf("Merge's types = %+v; want Item, Bid in first appearance", merged)
	}
	wantItem := container.Stats{Finds: 20, Loads: 2, CacheHits: 13, TxHits: 5, PeakReady: 10, ReadyAtEnd: 8, Rows: 100, CacheSize: 50, FinderHits: 4}
	if merged[0].Stats != wantItem || merged[1].Stats != (container.Stats{Creates: 5, Conflicts: 1}) {
		t.Errorf("Merge = %+v; want Item %+v, Bid creates 5 conflicts 1", merged, wantItem)
	}
	// Invalidation latencies are percentiles: since a start the end's,
	// across servers the largest, never a sum.
	a := Since([]workload.EntityStats{stats("Item", container.Stats{InvalidationsSent: 9, InvalidationP99Micros: 800, InvalidationMaxMicros: 900})},
		[]workload.EntityStats{stats("Item", container.Stats{InvalidationsSent: 4, InvalidationP99Micros: 950})})
	b := []workload.EntityStats{stats("Item", container.Stats{InvalidationsSent: 3, InvalidationP99Micros: 600, InvalidationMaxMicros: 1200})}
	lat := Merge(a, b)[0].Stats
	if lat != (container.Stats{InvalidationsSent: 8, InvalidationP99Micros: 800, InvalidationMaxMicros: 1200}) {
		t.Errorf("latencies merged to %+v; want 8 sent, p99 800 µs (the end's, the larger), max 1200 µs", lat)
	}
	// Counters travel with their sizes (json:"-" in container.Stats).
	back := Encode(merged, store.Stats{}).Decode()
	if back[0].Stats != merged[0].Stats {
		t.Errorf("Decode(Encode) = %+v, want %+v", back[0].Stats, merged[0].Stats)
	}
}

// server is a workload.Run whose clients say which server they are on.
type server struct {
	id     int
	served *[]int
}

func (s server) NewClient(_, _ int, _ *rand.Rand) workload.Client { return serverClient(s) }
func (s server) Check(context.Context, workload.Outcomes) ([]workload.Check, error) {
	return nil, nil
}

type serverClient server

func (c serverClient) Do(context.Context, workload.Step) error {
	(*c.served)[c.id]++
	return nil
}

// Terminals go round-robin, stay on their server, and move to the next
// live one when theirs goes down.
func TestSpreadRoundRobinAndMoves(t *testing.T) {
	served := make([]int, 3)
	run := NewSpread([]workload.Run{server{0, &served}, server{1, &served}, server{2, &served}})
	sp := Of(run)
	var clients []workload.Client
	for id := range 6 {
		clients = append(clients, run.NewClient(0, id, rand.New(rand.NewPCG(1, uint64(id)))))
	}
	for _, c := range clients {
		c.Do(context.Background(), workload.Step{})
	}
	if served[0] != 2 || served[1] != 2 || served[2] != 2 {
		t.Fatalf("served %v; want 2 each", served)
	}
	sp.Down(1)
	for _, c := range clients {
		c.Do(context.Background(), workload.Step{})
	}
	if served[0] != 4 || served[1] != 2 || served[2] != 6 || sp.Moved() != 2 {
		t.Errorf("served %v, moved %d after server 1 went down; want [4 2 6], 2 moved (to server 2, the next)", served, sp.Moved())
	}
	if got := sp.Served(); got[0] != 4 || got[1] != 2 || got[2] != 6 {
		t.Errorf("Served = %v; want [4 2 6]", got)
	}
}

// The servers' database counters add up field by field.
func TestSumDatabase(t *testing.T) {
	lost := store.NodeLoss{Node: "127.0.0.1:4307", InDoubt: 1}
	got := SumDatabase(store.Stats{Statements: 10, Commits: 3, InDoubt: 1}, store.Stats{Statements: 5, Deadlocks: 2, NodesLost: []store.NodeLoss{lost}})
	if !reflect.DeepEqual(got, store.Stats{Statements: 15, Commits: 3, Deadlocks: 2, InDoubt: 1, NodesLost: []store.NodeLoss{lost}}) {
		t.Errorf("SumDatabase = %+v", got)
	}
}

// The replicas' counters of a run's processes add up replica by
// replica; the lag, sampled by the run's own process alone, is kept; a
// loss is the earliest, the outages every process's in order.
func TestSumDatabaseReplicas(t *testing.T) {
	at := func(s int) *time.Time { x := time.Date(2026, 12, 2, 18, 0, s, 0, time.UTC); return &x }
	process := func(reads1, reads2, missed int64, lost *time.Time) store.Stats {
		rs := &store.ReplicaSummary{Reads: store.Causal, PrimaryReads: 1, Positions: 3, Replicas: []store.ReplicaStats{
			{Replica: "r1", Reads: reads1, Statements: 2 * reads1, Probes: 1, ReadYourWritesViolations: missed, CausalWaits: 1, CausalWaitMs: 1.5, CausalFallbacks: 1},
			{Replica: "r2", Reads: reads2, Statements: 2 * reads2},
		}}
		if lost != nil {
			rs.Replicas[1].Lost = lost
			rs.Replicas[1].Outages = []store.ReplicaOutage{{Lost: *lost}}
		}
		return store.Stats{Statements: 1, Replicas: rs}
	}
	lag := []store.ReplicationLag{{Standby: "standby1", Samples: 9}}
	own := store.Stats{Replicas: &store.ReplicaSummary{Reads: store.Causal, Replicas: []store.ReplicaStats{{Replica: "r1"}, {Replica: "r2"}}, Lag: lag}}
	got := SumDatabase(SumDatabase(process(5, 7, 1, at(9)), process(6, 8, 2, at(4))), own).Replicas
	want := &store.ReplicaSummary{Reads: store.Causal, PrimaryReads: 2, Positions: 6, Lag: lag, Replicas: []store.ReplicaStats{
		{Replica: "r1", Reads: 11, Statements: 22, Probes: 2, ReadYourWritesViolations: 3, CausalWaits: 2, CausalWaitMs: 3, CausalFallbacks: 2},
		{Replica: "r2", Reads: 15, Statements: 30, Lost: at(4), Outages: []store.ReplicaOutage{{Lost: *at(4)}, {Lost: *at(9)}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SumDatabase's replicas =\n%+v\nwant\n%+v", got, want)
	}
	if SumDatabase(store.Stats{Statements: 1}).Replicas != nil {
		t.Error("replicas summed from servers without any")
	}
}

// What the spread adds to an operation: a terminal's Do through it
// against the member's client directly (make bench reads it).
func BenchmarkSpreadDo(b *testing.B) {
	served := make([]int, 2)
	runs := []workload.Run{server{0, &served}, server{1, &served}}
	ctx := context.Background()
	b.Run("direct", func(b *testing.B) {
		c := runs[0].NewClient(0, 0, rand.New(rand.NewPCG(1, 0)))
		for b.Loop() {
			c.Do(ctx, workload.Step{})
		}
	})
	b.Run("spread", func(b *testing.B) {
		c := NewSpread(runs).NewClient(0, 0, rand.New(rand.NewPCG(1, 0)))
		b.ReportAllocs()
		for b.Loop() {
			c.Do(ctx, workload.Step{})
		}
	})
}
