package ecperf

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// bomOrder is one assembly's components in key order and in the BOM's
// line order.
type bomOrder struct {
	assembly      int64
	byKey, byLine []int64
}

// differingBOM finds an assembly whose last component in key order is not
// its last BOM line: holding that component's inventory row stops a
// ScheduleWorkOrder with different rows already locked in the two orders.
func differingBOM(t *testing.T, q storetest.Querier) bomOrder {
	t.Helper()
	s := q.Stmt("SELECT b_assembly_id, b_comp_id FROM m_bom ORDER BY b_assembly_id, b_line_no")
	rows, err := q.DB.Query(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	byAssembly := map[int64][]int64{}
	for rows.Next() {
		var a, c int64
		if err := rows.Scan(&a, &c); err != nil {
			t.Fatal(err)
		}
		byAssembly[a] = append(byAssembly[a], c)
	}
	for _, a := range slices.Sorted(maps.Keys(byAssembly)) {
		byLine := byAssembly[a]
		byKey := slices.Sorted(slices.Values(byLine))
		if byLine[len(byLine)-1] != byKey[len(byKey)-1] {
			return bomOrder{assembly: a, byKey: byKey, byLine: byLine}
		}
	}
	t.Fatal("every assembly's BOM lines are in key order at their end")
	return bomOrder{}
}

// lockedBefore is the components a transaction touching order holds when
// it waits for blocker: those before it.
func lockedBefore(order []int64, blocker int64) []int64 {
	return slices.Sorted(slices.Values(order[:slices.Index(order, blocker)]))
}

// The order in which ScheduleWorkOrder locks the BOM's inventory rows is
// key order, or, under --unsorted-access, the BOM's line order, on the
// locking databases. Observed directly: a transaction holds the inventory
// row of the assembly's last component in key order, ScheduleWorkOrder
// runs until it waits for that row, and the rows it holds at that moment
// (found by NOWAIT probes) are exactly those before the blocker in its
// order: every other component when sorted, the earlier BOM lines when
// not. (Those two sets differ for the assembly chosen, so the test tells
// the orders apart.) Then the blocker lets go and the work order commits.
// The ChangeOrder/CancelOrder side is the client's touchOrder, checked
// below it.
func TestUnsortedAccessChangesTheLockOrder(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
		// waiting counts this database's sessions waiting for the held
		// row; onHolder: it is asked over the holding transaction.
		waiting  string
		onHolder bool
	}{
		// The sessions the holder blocks: any lock wait in the database
		// would also count a transient wait elsewhere (seen under the
		// race detector: a wait before ScheduleWorkOrder reached the row).
		{"postgres", storetest.Postgres, "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pg_backend_pid() = ANY(pg_blocking_pids(pid))", true},
		// MariaDB shows a wait for a row read by primary key as the query
		// still in its "Statistics" phase, not as an InnoDB LOCK WAIT: a
		// locking read of one row by key that runs for 200 ms in the test's
		// own database is that wait.
		{"mysql", storetest.MySQL, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() " +
			"AND INFO LIKE 'SELECT % FROM m_inventory WHERE in_p_id = ? FOR UPDATE' AND TIME_MS > 200", false},
	} {
		t.Run(backend.name, func(t *testing.T) {
			for _, unsorted := range []bool{false, true} {
				name := "sorted"
				if unsorted {
					name = "unsorted"
				}
				t.Run(name, func(t *testing.T) {
					dsn := backend.dsn(t) // a fresh database for each copy of the population
					ctx := context.Background()
					cfg := testConfig()
					workload.SetOptions(&cfg, func(o *Options) { o.UnsortedAccess = unsorted })
					workload.SetOptions(&cfg, func(o *Options) { o.LeadTimeUnit = config.Duration(10 * time.Millisecond) })
					db := loadedDB(t, dsn, cfg)
					q := storetest.Querier{T: t, DB: db}
					bom := differingBOM(t, q)
					blocker := bom.byKey[len(bom.byKey)-1]
					want := lockedBefore(bom.byKey, blocker)
					if unsorted {
						want = lockedBefore(bom.byLine, blocker)
					}
					if slices.Equal(lockedBefore(bom.byKey, blocker), lockedBefore(bom.byLine, blocker)) {
						t.Fatalf("assembly %d: both orders lock %v first; the test cannot tell them apart", bom.assembly, want)
					}
					a := startApp(t, db, cfg)

					forUpdate := q.Stmt("SELECT in_qty FROM m_inventory WHERE in_p_id = ? FOR UPDATE")
					hold, err := db.Begin(ctx)
					if err != nil {
						t.Fatal(err)
					}
					defer hold.Rollback(ctx)
					var qty int64
					if err := hold.QueryRow(ctx, forUpdate, blocker).Scan(&qty); err != nil {
						t.Fatal(err)
					}
					scheduled := make(chan error, 1)
					go func() {
						_, err := a.beans[0].scheduleWorkOrder(ctx, workOrder{assembly: bom.assembly, qty: 1})
						scheduled <- err
					}()
					// The database is what knows the transaction waits: it is
					// asked until it says so (no sleep stands in for that).
					waiting := q.Stmt(backend.waiting)
					tick := time.NewTicker(5 * time.Millisecond)
					defer tick.Stop()
					blocked := func() int64 {
						if !backend.onHolder {
							return q.IntOf(waiting)
						}
						var n int64
						if err := hold.QueryRow(ctx, waiting).Scan(&n); err != nil {
							t.Fatal(err)
						}
						return n
					}
					for blocked() == 0 {
						select {
						case err := <-scheduled:
							t.Fatalf("ScheduleWorkOrder ended (%v) without waiting for the held row %d", err, blocker)
						case <-tick.C:
						}
					}
					nowait := q.Stmt("SELECT in_qty FROM m_inventory WHERE in_p_id = ? FOR UPDATE NOWAIT")
					var held []int64
					for _, c := range bom.byKey {
						if c == blocker {
							continue
						}
						probe, err := db.Begin(ctx)
						if err != nil {
							t.Fatal(err)
						}
						if err := probe.QueryRow(ctx, nowait, c).Scan(&qty); err != nil {
							if !store.Retryable(err) {
								t.Logf("probe of %d: %v (taken as locked)", c, err)
							}
							held = append(held, c)
						}
						probe.Rollback(ctx)
					}
					if !slices.Equal(held, want) {
						t.Errorf("assembly %d (components by key %v, by line %v): waiting for %d, ScheduleWorkOrder holds %v, want %v",
							bom.assembly, bom.byKey, bom.byLine, blocker, held, want)
					}
					if err := hold.Rollback(ctx); err != nil {
						t.Fatal(err)
					}
					if err := <-scheduled; err != nil {
						t.Errorf("ScheduleWorkOrder after the row was let go: %v", err)
					}
				})
			}
		})
	}

	// ChangeOrder and CancelOrder take an order's lines in the order the
	// client gives: key order, or under --unsorted-access a shuffle.
	rng := rand.New(rand.NewPCG(1, 2))
	sorted := &client{app: &app{}, rng: rng}
	shuffled := &client{app: &app{unsorted: true}, rng: rng}
	var unsortedSeen int
	for range 20 {
		if got := sorted.touchOrder(); !slices.Equal(got, allLines[:]) {
			t.Fatalf("sorted access touches lines %v", got)
		}
		got := shuffled.touchOrder()
		if !slices.Equal(slices.Sorted(slices.Values(got)), allLines[:]) {
			t.Fatalf("unsorted access touches lines %v, want a permutation of %v", got, allLines)
		}
		if !slices.IsSorted(got) {
			unsortedSeen++
		}
	}
	if unsortedSeen == 0 {
		t.Error("unsorted access touched lines in key order 20 times out of 20")
	}
}
