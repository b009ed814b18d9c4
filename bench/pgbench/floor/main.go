// Command floor is the least a Go client of PostgreSQL can do: each of
// -clients goroutines runs one statement of a pgbench script (Stock-Online's
// QueryById), prepared once on its own connection, through pgconn (the layer under pgx that tierbench's
// direct path uses), with nothing else: no driver, no histograms, no
// container. bench/pgbench/floor.sh runs it against pgbench issuing the same
// statement; their ratio is the part of the gap between tierbench and
// pgbench that a Go client pays whatever it does (docs/performance.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func main() {
	dsn := flag.String("dsn", "postgres://root@127.0.0.1:5432/test", "PostgreSQL to query (Stock-Online loaded)")
	clients := flag.Int("clients", 10, "goroutines, each with its own connection")
	duration := flag.Duration("duration", 20*time.Second, "how long to run")
	items := flag.Int("items", 3000, "stock items to choose from (3000 × the scale)")
	script := flag.String("script", "bench/pgbench/stockonline/query_by_id.sql", "the pgbench script whose statement to run")
	flag.Parse()
	if *clients < 1 || *duration <= 0 || *items < 1 {
		fmt.Fprintln(os.Stderr, "floor: -clients, -duration and -items must be positive")
		os.Exit(2)
	}
	sql, err := statementOf(*script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
	tps, err := run(*dsn, sql, *clients, *duration, *items)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(3)
	}
	fmt.Printf("%.1f\n", tps)
}

// statementOf reads the one SQL statement of a pgbench script whose only
// variable is :stock, as a statement with the parameter $1, so that the
// floor sends pgbench's text and the two cannot drift apart.
func statementOf(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var sql []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(line, `\`) {
			continue
		}
		sql = append(sql, line)
	}
	if len(sql) != 1 || strings.Count(sql[0], ":stock") != 1 || strings.Count(sql[0], ":") != 1 {
		return "", fmt.Errorf("%s: want one statement whose only variable is :stock once, like query_by_id.sql", path)
	}
	return strings.TrimSuffix(strings.Replace(sql[0], ":stock", "$1", 1), ";"), nil
}

func run(dsn, sql string, clients int, duration time.Duration, items int) (float64, error) {
	ctx := context.Background()
	conns := make([]*pgconn.PgConn, clients)
	for i := range conns {
		pc, err := pgconn.Connect(ctx, dsn)
		if err != nil {
			return 0, err
		}
		defer pc.Close(ctx)
		if _, err := pc.Prepare(ctx, "query_by_id", sql, nil); err != nil {
			return 0, err
		}
		conns[i] = pc
	}
	var done atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(duration)
	for i, pc := range conns {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(1, uint64(i)))
			id := make([]byte, 0, 20)
			args := [][]byte{nil}
			n := int64(0)
			for time.Now().Before(end) {
				id = strconv.AppendInt(id[:0], int64(rng.IntN(items)+1), 10)
				args[0] = id
				rr := pc.ExecPrepared(ctx, "query_by_id", args, nil, nil)
				for rr.NextRow() {
				}
				if _, err := rr.Close(); err != nil {
					failed.Store(&err)
					break
				}
				n++
			}
			done.Add(n)
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return 0, *err
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}
