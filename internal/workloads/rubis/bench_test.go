package rubis

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// benchScale is the scale the load benchmarks use: TIERBENCH_RUBIS_SCALE,
// or 1. Scale 100 (the paper's database, about 2.5 million rows and 2.7 GB
// of values) takes minutes: run it with -benchtime=1x.
func benchScale(b *testing.B) int {
	s := os.Getenv("TIERBENCH_RUBIS_SCALE")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("TIERBENCH_RUBIS_SCALE=%q: %v", s, err)
	}
	return n
}

// BenchmarkLoad loads the population into each reachable backend and
// reports the loading rate in rows and bytes of values per second (DDL,
// index builds and statistics included, as a user waits for them).
func BenchmarkLoad(b *testing.B) {
	scale := benchScale(b)
	pop := mustPopulation(b, scale)
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}, {"mysql", storetest.MySQL}} {
		b.Run(backend.name+"/scale="+strconv.Itoa(scale), func(b *testing.B) {
			db := storetest.Open(b, backend.dsn(b), store.Options{Threads: 1})
			ctx := context.Background()
			var rows, bytes int64
			var took time.Duration
			for i := 0; b.Loop(); i++ {
				base := timeBase(time.Now())
				r, err := loadAt(ctx, db, workload.LoadParams{Scale: scale, Seed: uint64(i)}, base)
				if err != nil {
					b.Fatal(err)
				}
				rows += r.Rows
				took += r.Duration
				b.StopTimer()
				bytes += populationBytes(uint64(i), pop, base)
				b.StartTimer()
			}
			b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
			b.ReportMetric(float64(bytes)/took.Seconds()/1e6, "MB/s")
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
		})
	}
}

// BenchmarkGenerate is the generators alone: the loader's ceiling.
func BenchmarkGenerate(b *testing.B) {
	pop := mustPopulation(b, benchScale(b))
	var rows, bytes int64
	for b.Loop() {
		for _, t := range popTables(1, pop, testBase) {
			for t.rows.Next() {
				bytes += valuesBytes(t.rows.Values())
				rows++
			}
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e6, "MB/s")
}

// populationBytes is the size of the population's values: text at its
// length, every number and date at 8 bytes.
func populationBytes(seed uint64, pop population, now time.Time) int64 {
	var n int64
	for _, t := range popTables(seed, pop, now) {
		for t.rows.Next() {
			n += valuesBytes(t.rows.Values())
		}
	}
	return n
}

func valuesBytes(values []any) int64 {
	var n int64
	for _, v := range values {
		if s, ok := v.(string); ok {
			n += int64(len(s))
		} else {
			n += 8
		}
	}
	return n
}
