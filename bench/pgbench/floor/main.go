// Command floor is the least a Go client of PostgreSQL can do: each of
// -clients goroutines runs the one statement of a pgbench script (by default
// Stock-Online's QueryById), prepared once on its own connection, through pgconn (the layer under pgx that tierbench's
// direct path uses), with nothing else: no driver, no histograms, no
// container. bench/pgbench/floor.sh runs it against pgbench issuing the same
// statement; their ratio is the part of the gap between tierbench and
// pgbench that a Go client pays whatever it does (docs/performance.md).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime/pprof"
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
	accounts := flag.Int("accounts", 3000, "subscriber accounts to choose from (3000 × the scale)")
	scriptPath := flag.String("script", "bench/pgbench/stockonline/query_by_id.sql", "the pgbench script to run: \\set NAME random(LO, HI) lines and one statement")
	cpuProfile := flag.String("cpuprofile", "", "write a Go CPU profile of the run to this file (where a Go client's time goes)")
	flag.Parse()
	if *clients < 1 || *duration <= 0 || *items < 1 || *accounts < 1 {
		fmt.Fprintln(os.Stderr, "floor: -clients, -duration, -items and -accounts must be positive")
		os.Exit(2)
	}
	sc, err := parseScript(*scriptPath, map[string]int64{"items": int64(*items), "accounts": int64(*accounts)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
	stopProfile := func() {}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor: -cpuprofile:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "floor: -cpuprofile:", err)
			os.Exit(2)
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}
	tps, err := run(*dsn, sc, *clients, *duration)
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(3)
	}
	fmt.Printf("%.1f\n", tps)
}

// script is a pgbench script the floor can run: \set NAME random(LO, HI)
// lines and one SQL statement, whose :NAME references become the
// parameters $1, $2, … (one per variable, in order of first use), so that
// the floor sends pgbench's own text and the two cannot drift apart.
type script struct {
	sql  string
	vars []randomVar // vars[i] is $(i+1)
}

// randomVar is a \set NAME random(LO, HI): a uniform integer in [LO, HI].
type randomVar struct {
	name   string
	lo, hi int64
}

// parseScript reads a script; defs are pgbench's -D variables (items,
// accounts) that random bounds may name as :NAME.
func parseScript(path string, defs map[string]int64) (script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return script{}, err
	}
	refuse := func(format string, a ...any) (script, error) {
		return script{}, fmt.Errorf("%s: %s; the floor runs scripts of \\set NAME random(LO, HI) lines and one statement, like query_by_id.sql or update_account.sql", path, fmt.Sprintf(format, a...))
	}
	declared := map[string]randomVar{}
	var sql []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "--"):
		case strings.HasPrefix(line, `\set `):
			v, ok := parseRandom(strings.TrimPrefix(line, `\set `), defs)
			if !ok {
				return refuse("\"%s\" is not \\set NAME random(LO, HI) with integer or -D bounds", line)
			}
			declared[v.name] = v
		case strings.HasPrefix(line, `\`):
			return refuse("\"%s\" is a meta-command the floor does not run", line)
		default:
			sql = append(sql, line)
		}
	}
	if len(sql) != 1 {
		return refuse("%d statements, want one statement", len(sql))
	}
	out := script{}
	index := map[string]int{}
	var undeclared string
	out.sql = reference.ReplaceAllStringFunc(strings.TrimSuffix(sql[0], ";"), func(ref string) string {
		if strings.HasPrefix(ref, "::") { // a ::type cast, not a variable
			return ref
		}
		name := ref[1:]
		v, ok := declared[name]
		if !ok {
			undeclared = cmp.Or(undeclared, name)
			return ref
		}
		n, seen := index[name]
		if !seen {
			out.vars = append(out.vars, v)
			n = len(out.vars)
			index[name] = n
		}
		return "$" + strconv.Itoa(n)
	})
	if undeclared != "" {
		return refuse("the statement uses :%s, which no \\set random declares", undeclared)
	}
	return out, nil
}

// reference is a :NAME variable in a statement, or a ::type cast that
// looks like one.
var reference = regexp.MustCompile(`::?[A-Za-z_][A-Za-z0-9_]*`)

// parseRandom reads NAME random(LO, HI).
func parseRandom(s string, defs map[string]int64) (randomVar, bool) {
	name, expr, ok := strings.Cut(strings.TrimSpace(s), " ")
	expr = strings.TrimSpace(expr)
	if !ok || !strings.HasPrefix(expr, "random(") || !strings.HasSuffix(expr, ")") {
		return randomVar{}, false
	}
	lo, hi, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(expr, "random("), ")"), ",")
	if !ok {
		return randomVar{}, false
	}
	bound := func(b string) (int64, bool) {
		b = strings.TrimSpace(b)
		if d, ok := strings.CutPrefix(b, ":"); ok {
			v, ok := defs[d]
			return v, ok
		}
		v, err := strconv.ParseInt(b, 10, 64)
		return v, err == nil
	}
	v := randomVar{name: name}
	var okLo, okHi bool
	v.lo, okLo = bound(lo)
	v.hi, okHi = bound(hi)
	return v, okLo && okHi && v.lo <= v.hi
}

func run(dsn string, sc script, clients int, duration time.Duration) (float64, error) {
	ctx := context.Background()
	conns := make([]*pgconn.PgConn, clients)
	for i := range conns {
		pc, err := pgconn.Connect(ctx, dsn)
		if err != nil {
			return 0, err
		}
		defer pc.Close(ctx)
		if _, err := pc.Prepare(ctx, "floor", sc.sql, nil); err != nil {
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
			args := make([][]byte, len(sc.vars))
			for k := range args {
				args[k] = make([]byte, 0, 20)
			}
			n := int64(0)
			for time.Now().Before(end) {
				for k, v := range sc.vars {
					args[k] = strconv.AppendInt(args[k][:0], v.lo+rng.Int64N(v.hi-v.lo+1), 10)
				}
				rr := pc.ExecPrepared(ctx, "floor", args, nil, nil)
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
