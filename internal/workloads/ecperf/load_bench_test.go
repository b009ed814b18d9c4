package ecperf

import (
	"context"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// BenchmarkLoad loads Ir = 10 into each reachable backend and reports the
// loading rate (DDL and statistics included).
func BenchmarkLoad(b *testing.B) {
	const ir = 10
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}, {"mysql", storetest.MySQL}} {
		b.Run(backend.name, func(b *testing.B) {
			db := storetest.Open(b, backend.dsn(b), store.Options{Threads: 1})
			ctx := context.Background()
			var rows int64
			var took time.Duration
			for i := 0; b.Loop(); i++ {
				r, err := load(ctx, db, workload.LoadParams{Scale: ir, Seed: uint64(i)})
				if err != nil {
					b.Fatal(err)
				}
				rows += r.Rows
				took += r.Duration
			}
			b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
		})
	}
}

// BenchmarkLoadGenerate is the generators alone: the loader's ceiling.
func BenchmarkLoadGenerate(b *testing.B) {
	pop := populationAt(10)
	var rows int64
	for b.Loop() {
		for _, t := range popTables(1, pop) {
			if t.rows == nil {
				continue
			}
			for t.rows.Next() {
				t.rows.Values()
				rows++
			}
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
