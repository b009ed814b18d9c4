package container_test

import (
	"context"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// BenchmarkSharedCacheReads compares what a read-only transaction that
// finds the fixture's five accounts costs when each find is served by the
// database (a load per account, option C), by Redis (coherence shared
// without a near cache: a round trip per account), by the near cache
// (one round trip, the transaction's Sync, then memory), and by the
// container's own ready cache (option A on one server, no coherence).
//
//	go test -run XXX -bench SharedCacheReads -benchtime 2000x ./internal/container/
func BenchmarkSharedCacheReads(b *testing.B) {
	cases := []struct {
		name   string
		dsn    func(testing.TB) string
		s      container.Settings
		shared bool
		near   bool
	}{
		{"database-sqlite", storetest.SQLite, settings(container.OptionC, 10, 10), false, false},
		{"database-postgres", storetest.Postgres, settings(container.OptionC, 10, 10), false, false},
		{"redis", storetest.SQLite, sharedSettings(b, container.OptionA, container.CMP, ""), true, false},
		{"near-cache", storetest.SQLite, sharedSettings(b, container.OptionA, container.CMP, ""), true, true},
		{"ready-cache", storetest.SQLite, settings(container.OptionA, 10, 10), false, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var f fixture
			if c.shared {
				f = appServers(b, c.dsn(b), 1, 1, c.s, c.near)[0].fixture
			} else {
				f = newFixture(b, c.dsn(b), 1, c.s)
			}
			ctx := context.Background()
			readAll := func() {
				tx, err := f.ctr.BeginReadOnly(ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				for k := int64(1); k <= 5; k++ {
					if _, err := tx.Find(f.h, container.Key{A: k}); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			readAll() // warm: the caches filled
			f.ctr.ResetStats()
			for b.Loop() {
				readAll()
			}
			st := f.h.Stats()
			b.ReportMetric(float64(st.Loads)/float64(b.N), "db-loads/op")
			b.ReportMetric(float64(st.SharedHits-st.NearHits)/float64(b.N), "redis-hits/op")
			b.ReportMetric(float64(st.NearHits)/float64(b.N), "near-hits/op")
		})
	}
}

// BenchmarkSharedCacheCommit compares a read-write transaction that adds
// to one account's credit without coherence (option C, optimistic) with
// the same under coherence shared: optimistic (the state written through:
// the next find is a hit) and database concurrency (the writer reads the
// database, the commit invalidates).
//
//	go test -run XXX -bench SharedCacheCommit -benchtime 2000x ./internal/container/
func BenchmarkSharedCacheCommit(b *testing.B) {
	optimistic := settings(container.OptionC, 10, 10)
	optimistic.Concurrency = container.Optimistic
	cases := []struct {
		name   string
		s      container.Settings
		shared bool
	}{
		{"no-coherence-optimistic", optimistic, false},
		{"shared-optimistic", sharedSettings(b, container.OptionA, container.CMP, container.Optimistic), true},
		{"shared-database", sharedSettings(b, container.OptionA, container.CMP, container.Database), true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var srv appServer
			if c.shared {
				srv = appServers(b, storetest.SQLite(b), 1, 1, c.s, true)[0]
			} else {
				srv = appServer{fixture: newFixture(b, storetest.SQLite(b), 1, c.s)}
			}
			ctx := context.Background()
			srv.ctr.ResetStats()
			for b.Loop() {
				tx, err := srv.ctr.Begin(ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				a, err := tx.Find(srv.h, container.Key{A: 1})
				if err != nil {
					b.Fatal(err)
				}
				a.SetInt(fCredit, a.Int(fCredit)+1)
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			st := srv.h.Stats()
			b.ReportMetric(float64(st.Loads)/float64(b.N), "db-loads/op")
			b.ReportMetric(float64(st.SharedHits)/float64(b.N), "shared-hits/op")
		})
	}
}
