package postgres_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

func cpuMicros() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec)*1e6 + float64(ru.Utime.Usec+ru.Stime.Usec)
}

// BenchmarkPointSelectLayers reports the client CPU of one primary-key
// SELECT through each layer: the store seam (pgxpool underneath), pgxpool
// directly, and one pgx.Conn. It measures what tierbench adds per round trip.
func BenchmarkPointSelectLayers(b *testing.B) {
	dsn := storetest.Postgres(b) + "&sslmode=disable"
	ctx := context.Background()
	db := storetest.Open(b, dsn, store.Options{Threads: 1})
	if err := db.ExecScript(ctx, "CREATE TABLE t (id BIGINT PRIMARY KEY, a BIGINT, c BIGINT, d BIGINT); INSERT INTO t SELECT g, g, g, g FROM generate_series(1, 1000) g"); err != nil {
		b.Fatal(err)
	}
	const q = "SELECT a, c, d FROM t WHERE id = $1"
	report := func(b *testing.B, start float64) {
		b.ReportMetric((cpuMicros()-start)/float64(b.N), "cpu-us/op")
	}
	b.Run("store", func(b *testing.B) {
		s, err := db.Prepare(ctx, store.Statement{Name: "q", SQL: "SELECT a, c, d FROM t WHERE id = ?"})
		if err != nil {
			b.Fatal(err)
		}
		var x, y, z int64
		b.ResetTimer()
		start := cpuMicros()
		for i := 0; i < b.N; i++ {
			if err := db.QueryRow(ctx, s, int64(i%1000+1)).Scan(&x, &y, &z); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("pgxpool", func(b *testing.B) {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		var x, y, z int64
		b.ResetTimer()
		start := cpuMicros()
		for i := 0; i < b.N; i++ {
			if err := pool.QueryRow(ctx, q, int64(i%1000+1)).Scan(&x, &y, &z); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("pgx.Conn", func(b *testing.B) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		var x, y, z int64
		b.ResetTimer()
		start := cpuMicros()
		for i := 0; i < b.N; i++ {
			if err := conn.QueryRow(ctx, q, int64(i%1000+1)).Scan(&x, &y, &z); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
}
