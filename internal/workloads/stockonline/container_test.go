package stockonline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// entitySettings resolves the same settings for every type, as a run does.
func entitySettings(t *testing.T, run container.Settings) map[string]container.Settings {
	t.Helper()
	out := make(map[string]container.Settings)
	for _, typ := range entityTypes {
		s, err := container.Resolve(run, typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[typ.Name] = s
	}
	return out
}

// raw is the run's settings, given as on the command line.
func raw(persistence, option, cache, concurrency string) container.Settings {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	s := container.Settings{Pool: container.Size{Percent: 20, Relative: true}, Refresh: time.Minute, LockTimeout: 2 * time.Second}
	must(s.Persistence.Set(persistence))
	must(s.CommitOption.Set(option))
	must(s.Cache.Set(cache))
	must(s.Concurrency.Set(concurrency))
	return s
}

// dump is the database's content that the business owns: every table but
// the dates and the container's version column, in key order.
func dump(t *testing.T, db *store.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT sub_accno, sub_name, sub_address, sub_credit FROM SubAccount ORDER BY sub_accno",
		"SELECT stock_id, stock_code, current_value FROM StockItem ORDER BY stock_id",
		"SELECT sub_accno, stock_id, amount FROM StockHolding ORDER BY sub_accno, stock_id",
		"SELECT trans_id, trans_type, sub_accno, stock_id, amount, price FROM StockTransaction ORDER BY trans_id",
	} {
		s, err := db.Prepare(context.Background(), store.Statement{Name: "dump", SQL: q})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		n := len(strings.Split(strings.Split(q, " FROM ")[0], ","))
		vals := make([]any, n)
		for i := range vals {
			vals[i] = new(string)
		}
		for rows.Next() {
			if err := rows.Scan(vals...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				b.WriteString(*v.(*string))
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
		rows.Close()
	}
	return b.String()
}

// One client, the same seed: every persistence strategy must leave the
// same database behind.
func TestPersistenceStrategiesGiveIdenticalDatabases(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		dumps := make(map[container.Persistence]string)
		for _, p := range []container.Persistence{container.Direct, container.CMP, container.BMP, container.BMPChecked} {
			db := storetest.Open(t, dsn, store.Options{Threads: 1})
			ctx := context.Background()
			if _, err := loadPopulation(ctx, db, 7, testPopulation); err != nil {
				t.Fatal(err)
			}
			params := workload.RunParams{Scale: 1, Persistence: p}
			if p.Container() {
				params.Entities = entitySettings(t, raw(string(p), "B", "10%", "database"))
			}
			r, err := New().Start(ctx, db, params)
			if err != nil {
				t.Fatal(err)
			}
			r.(*run).pop = testPopulation
			c := r.NewClient(0, 0, rand.New(rand.NewPCG(7, 1)))
			succeeded := make([]int64, numOps)
			deck := rand.New(rand.NewPCG(7, 2))
			for iter := 0; iter < 4; iter++ {
				for _, s := range dealForTest(deck) {
					err := c.Do(ctx, s)
					if err == nil {
						succeeded[s.Op]++
					} else if !workload.IsBusiness(err) {
						t.Fatalf("%s: %s: %v", p, opNames[s.Op], err)
					}
				}
			}
			checks, err := r.Check(ctx, workload.Outcomes{Succeeded: succeeded})
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range checks {
				if !ch.Passed {
					t.Errorf("%s: check %s failed: %s", p, ch.Name, ch.Detail)
				}
			}
			dumps[p] = dump(t, db)
		}
		for _, p := range []container.Persistence{container.CMP, container.BMP, container.BMPChecked} {
			if dumps[p] != dumps[container.Direct] {
				t.Errorf("%s left a different database than direct SQL:\n%s", p, firstDifference(dumps[p], dumps[container.Direct]))
			}
		}
	})
}

// dealForTest is Table 2's deck in a seeded order, each sell after its
// buy (the driver's shuffle is tested in the driver package).
func dealForTest(rng *rand.Rand) []workload.Step {
	var steps []workload.Step
	for _, c := range Mix().Cards {
		for k := 0; k < c.Count; k++ {
			s := workload.Step{Op: c.Op, Pair: -1}
			if c.Op == BuyStock || c.Op == SellStock {
				s.Pair = k
			}
			steps = append(steps, s)
		}
	}
	rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	sort.SliceStable(steps, func(i, j int) bool {
		// Sells after all buys keeps pairs ordered; the mix within is kept.
		return steps[i].Op == BuyStock && steps[j].Op == SellStock
	})
	return steps
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: %q vs %q", i, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d vs %d lines", len(al), len(bl))
}

// Many concurrent buys and sells on a few hot accounts and stocks, under
// every accepted strategy: the consistency checks find no lost update.
func TestHotSetKeepsHoldingsConsistent(t *testing.T) {
	t.Parallel()
	strategies := []container.Settings{
		raw("cmp", "C", "0", "database"),
		raw("cmp", "B", "100%", "database"),
		raw("bmp", "C", "0", "database"),
		raw("cmp", "A", "100%", "exclusive"),
		raw("cmp", "B", "100%", "exclusive"),
		raw("cmp", "A", "100%", "optimistic"),
		raw("bmp-checked", "C", "0", "optimistic"),
		raw("cmp", "D", "100%", "exclusive"),
	}
	storetest.Each(t, func(t *testing.T, dsn string) {
		for si, s := range strategies {
			t.Run(fmt.Sprintf("%s-%s-%s", s.Persistence, s.CommitOption, s.Concurrency), func(t *testing.T) {
				storetest.ShareCell(t, dsn, si)
				const threads = 4
				// Exclusive locks taken in opposite orders (Buy: Item, then
				// Holding; Sell: Holding, then Item) wait out the timeout
				// and are retried: keep it short.
				s.LockTimeout = 200 * time.Millisecond
				db := storetest.Open(t, dsn, store.Options{Threads: threads})
				ctx := context.Background()
				if _, err := loadPopulation(ctx, db, 3, testPopulation); err != nil {
					t.Fatal(err)
				}
				r, err := New().Start(ctx, db, workload.RunParams{Scale: 1, Persistence: s.Persistence, Entities: entitySettings(t, s), Options: Options{Warmup: true}})
				if err != nil {
					t.Fatal(err)
				}
				run := r.(*run)
				run.pop = population{accounts: 3, items: 2} // the hot set
				var mu sync.Mutex
				succeeded := make([]int64, numOps)
				var wg sync.WaitGroup
				for th := range threads {
					wg.Go(func() {
						c := run.NewClient(0, th, rand.New(rand.NewPCG(3, uint64(th))))
						jitter := rand.New(rand.NewPCG(4, uint64(th)))
						for i := 0; i < 15; i++ {
							for _, op := range []int{BuyStock, SellStock} {
								step := workload.Step{Op: op, Pair: 0, Thread: th}
								var err error
								for attempt := 1; attempt <= 50; attempt++ {
									if err = c.Do(ctx, step); err == nil || !store.Retryable(err) {
										break
									}
									// Back off as the driver does, so victims
									// of one deadlock do not collide again.
									time.Sleep(time.Duration(jitter.Int64N(int64(attempt) * int64(time.Millisecond))))
								}
								if err == nil {
									mu.Lock()
									succeeded[op]++
									mu.Unlock()
								} else if !workload.IsBusiness(err) {
									t.Error(err)
									return
								}
							}
						}
					})
				}
				wg.Wait()
				checks, err := run.Check(ctx, workload.Outcomes{Succeeded: succeeded})
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range checks {
					if !ch.Passed {
						t.Errorf("check %s failed: %s", ch.Name, ch.Detail)
					}
				}
				if succeeded[BuyStock] == 0 || succeeded[SellStock] == 0 {
					t.Errorf("%d buys and %d sells succeeded: the hot set was not exercised", succeeded[BuyStock], succeeded[SellStock])
				}
			})
		}
	})
}
