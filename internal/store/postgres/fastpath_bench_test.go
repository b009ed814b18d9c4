package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store/postgres"
)

// A server thread's round trips through the fast path (pgconn) and
// through pgx, on the thread's pinned connection, through the store's
// session as the workloads call it:
//
//	go test -run '^$' -bench 'ThreadPrimaryKeySelect|ThreadPipelinedCommit' -benchmem -count 3 ./internal/store/postgres/
//
// ns/op is mostly the round trip, and varies with the server's load;
// user-ns/op, the client process's CPU time in user space per operation,
// is what the fast path saves: on a machine the client shares with the
// database, CPU the database does not get.
func BenchmarkThreadPrimaryKeySelect(b *testing.B) {
	for _, path := range []string{"fast", "pgx"} {
		b.Run(path, func(b *testing.B) {
			ctx := context.Background()
			x := setup(b, 1, "CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT NOT NULL, n BIGINT NOT NULL)")
			x.q.Exec("INSERT INTO kv (k, v, n) SELECT g, 'value ' || g, g * 10 FROM generate_series(1, 1000) g")
			if path == "pgx" {
				postgres.UsePgx(x.be)
			}
			sel := x.q.Stmt("SELECT v, n FROM kv WHERE k = ?")
			th := x.db.Thread(0)
			var v string
			var n int64
			dest := []any{&v, &n}
			args := make([]any, 1)
			keys := make([]any, 1000)
			for i := range keys {
				keys[i] = int64(i + 1)
			}
			i := 0
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				args[0] = keys[i%len(keys)]
				i++
				if err := th.QueryRow(ctx, sel, args...).Scan(dest...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Two statements queued and sent with BEGIN and COMMIT in one round trip.
func BenchmarkThreadPipelinedCommit(b *testing.B) {
	for _, path := range []string{"fast", "pgx"} {
		b.Run(path, func(b *testing.B) {
			ctx := context.Background()
			x := setup(b, 1, "CREATE TABLE c (id BIGINT PRIMARY KEY, n BIGINT NOT NULL); CREATE TABLE log (id BIGSERIAL PRIMARY KEY, c BIGINT NOT NULL, amount BIGINT NOT NULL)")
			x.q.Exec("INSERT INTO c (id, n) SELECT g, 0 FROM generate_series(1, 100) g")
			if path == "pgx" {
				postgres.UsePgx(x.be)
			}
			inc := x.q.Stmt("UPDATE c SET n = n + ? WHERE id = ?")
			logged := x.q.Stmt("INSERT INTO log (c, amount) VALUES (?, ?)")
			th := x.db.Thread(0)
			keys := make([]any, 100)
			for i := range keys {
				keys[i] = int64(i + 1)
			}
			one := any(int64(1))
			i := 0
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				k := keys[i%len(keys)]
				i++
				tx, err := th.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				tx.Queue(inc, one, k)
				tx.Queue(logged, k, one)
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type cpu struct{ user, sys time.Duration }

// reportCPU reports the process's CPU time since start per operation, in
// user space (the client's code, pgx's or pgconn's) and in the kernel (the
// network, the scheduler).
func reportCPU(b *testing.B, start cpu) {
	end := cpuTime()
	if end.user == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64((end.user-start.user).Nanoseconds())/float64(b.N), "user-ns/op")
	b.ReportMetric(float64((end.sys-start.sys).Nanoseconds())/float64(b.N), "sys-ns/op")
}
