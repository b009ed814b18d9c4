package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// ECperf with the read-mostly pattern on Item, as a user runs it: Item
// read-only under option D, its prices changed through ItemRW in one
// NewOrder in 3, each change invalidating Item's cached price. The run
// passes its checks, Item's cache serves hits, each committed price
// change is one invalidation (ItemRW's stores), and no sampled read-back
// finds a stale price; on SQLite (and PostgreSQL in make test-all). A nonsensical
// declaration is refused with exit 2.
func TestEcperfReadMostlyItem(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	for _, b := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) {
			if b.name == "postgres" {
				// The mechanism's own tests run on PostgreSQL in make test.
				testsvc.SkipUnlessLong(t, "ECperf with the read-mostly pattern on PostgreSQL")
			} else {
				skipWhatMakeTestRan(t)
			}
			t.Parallel()
			out := filepath.Join(t.TempDir(), "r.json")
			run := testsvc.Start(t, bin, "run", "ecperf", "--db", b.dsn(t), "--duration", "4s", "--ramp-up", "1s",
				"--cycle-scale", "0.05", "--lead-time-unit", "10ms", "--price-change-every", "3",
				"--entity", "Item.read-mostly=ItemRW", "--out", out)
			if code, err := run.Wait(2 * time.Minute); err != nil || code != 0 {
				t.Fatalf("run exited %d (%v):\n%s\n%s", code, err, run.Stdout(), run.Stderr())
			}
			r, err := result.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			item, rw := r.Container["Item"], r.Container["ItemRW"]
			if item.Settings.ReadMostly != "ItemRW" || item.Settings.CommitOption != "D" || item.Settings.Concurrency != "readonly" {
				t.Fatalf("Item's settings %+v; want read-mostly of ItemRW, D, readonly", item.Settings)
			}
			if rw.Stores == 0 || item.WriterInvalidations != rw.Stores || item.CacheHits == 0 || item.StaleReads != 0 || item.Stores != 0 {
				t.Errorf("Item: %d hits, %d invalidations, %d stale of %d read back, %d stores; ItemRW %d stores: want hits, one invalidation a store, none stale, none stored",
					item.CacheHits, item.WriterInvalidations, item.StaleReads, item.ReadBacks, item.Stores, rw.Stores)
			}
			if !strings.Contains(run.Stdout(), "read-mostly: Item through ItemRW:") {
				t.Errorf("the summary lacks the read-mostly line:\n%s", run.Stdout())
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		skipWhatMakeTestRan(t)
		t.Parallel()
		run := testsvc.Start(t, bin, "run", "ecperf", "--entity", "Item.read-mostly=Customer", "--duration", "1s")
		code, err := run.Wait(time.Minute)
		if err != nil || code != 2 || !strings.Contains(run.Stderr(), "Item maps o_item and Customer maps c_customer") {
			t.Fatalf("exit %d (%v); want 2 with one message naming the two tables:\n%s", code, err, run.Stderr())
		}
	})
}
