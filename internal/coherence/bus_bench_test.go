package coherence

import (
	"context"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// The round trip of a synchronous invalidation to one peer on loopback:
// published, applied by the peer's container, acknowledged. The target
// is a p99 of at most 1ms (issue 29). Run with the shared broker or
// TIERBENCH_TEST_NATS:
//
//	go test -run '^$' -bench BusRoundTrip -benchtime 20000x ./internal/coherence/
func BenchmarkBusRoundTrip(b *testing.B) {
	// On the machine's shared broker, and on one started in the
	// benchmark's process (no other session's traffic through it).
	b.Run("shared-broker", func(b *testing.B) { roundTrips(b, testNATS(b)) })
	b.Run("in-process-broker", func(b *testing.B) { roundTrips(b, "") })
}

// roundTrips measures a publisher's synchronous invalidations to one
// peer (the announce's round trip; each followed by its settle, as a
// commit sends them) over the broker at url ("": the publisher starts one, which the
// peer joins).
func roundTrips(b *testing.B, url string) {
	ctx := context.Background()
	dsn := storetest.SQLite(b)
	run := "bench-" + time.Now().Format("150405.000000")
	s := container.Settings{CommitOption: container.OptionA, Cache: container.Size{N: 100}, Pool: container.Size{N: 100}, Persistence: container.CMP,
		Concurrency: container.Exclusive, Refresh: time.Hour, LockTimeout: time.Second, Coherence: container.Invalidate}
	var buses []*Bus
	for n, name := range []string{"publisher", "peer"} {
		db := storetest.Open(b, dsn, store.Options{Threads: 1})
		if n == 0 {
			if err := db.ExecScript(ctx, schema); err != nil {
				b.Fatal(err)
			}
		}
		ctr, err := container.New(ctx, db, []*container.Type{account()}, map[string]container.Settings{"Account": s})
		if err != nil {
			b.Fatal(err)
		}
		bus, err := Open(ctx, Options{URL: url, Run: run, Name: name, Servers: 2})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { bus.Close() })
		bus.Attach(ctr)
		buses = append(buses, bus)
		url = bus.URL()
	}
	for end := time.Now().Add(10 * time.Second); !buses[0].synced() || !buses[1].synced(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			b.Fatal("the two servers did not hear each other within 10s")
		}
	}
	items := []container.Written{{Type: "Account", Sync: true, Keys: []container.Key{{A: 1}},
		Finders: []container.FinderEntry{{Finder: "richerThan", All: true}}}}
	h := hdrhistogram.New(1, int64(time.Second), 3)
	b.ResetTimer()
	for b.Loop() {
		// A commit's coherence: the announce, which waits for the peer's
		// ack (the round trip timed), then the settle, which does not.
		w := &container.Writes{Phase: container.Announce, Items: items}
		start := time.Now()
		if err := buses[0].Publish(ctx, w); err != nil {
			b.Fatal(err)
		}
		_ = h.RecordValue(int64(time.Since(start)))
		w.Phase = container.Settle
		if err := buses[0].Publish(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if c := buses[0].Counts(); c.PeersFenced > 0 {
		b.Fatalf("the peer was fenced %d times: a round trip passed the deadline", c.PeersFenced)
	}
	b.ReportMetric(float64(h.ValueAtQuantile(50))/1e3, "p50-µs")
	b.ReportMetric(float64(h.ValueAtQuantile(99))/1e3, "p99-µs")
	b.ReportMetric(float64(h.Max())/1e3, "max-µs")
}
