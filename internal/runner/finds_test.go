package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp"
)

// Each workload's own deck, short, on the container under the paper's
// option C (CMP, no cache, database locking) and under option A (BMP,
// everything cached, exclusive locks, the finder cache): in the run's
// result every entity type's finds are exactly its cache hits, tx hits,
// loads and not-founds. Before, a finder call counted a find more than its
// rows (Stock-Online's QueryByCode, RUBiS's bids, ECperf's BOM, TPC-App's
// order lines) and a missing key no outcome (Stock-Online's first BuyStock
// of a holding).
func TestEveryWorkloadsFindsUnderOptionCHitNoCache(t *testing.T) {
	w, err := workload.NewRegistry(stockonline.New(), ecperf.New(), rubis.New(), tpcapp.New())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Backends: storetest.Backends(), Workloads: w, Version: "test"}
	short := map[string]func(*config.Run){
		"stockonline": func(c *config.Run) { c.Clients, c.ServerThreads, c.Iterations = 6, 3, 1 }, // table 2's 43 each
		"ecperf": func(c *config.Run) {
			c.Duration, c.RampUp, c.RampDown = config.Duration(1500*time.Millisecond), 0, 0
			workload.SetOptions(c, func(o *ecperf.Options) {
				o.IR, o.CycleScale, o.LeadTimeUnit = 1, 0.05, config.Duration(10*time.Millisecond)
			})
		},
		"rubis": func(c *config.Run) { // the bidding mix, without think time
			c.Clients, c.Iterations, c.Duration, c.RampUp, c.RampDown = 4, 15, 0, 0, 0
			workload.SetOptions(c, func(o *rubis.Options) { o.ThinkScale = 0 })
		},
		"tpcapp": func(c *config.Run) { // 100 operations, not as many as 1.5 s at full speed allow
			c.Clients, c.Iterations, c.Duration, c.RampUp, c.RampDown = 4, 25, 0, 0, 0
			workload.SetOptions(c, func(o *tpcapp.Options) { o.PartnerDelay, o.ImageKB = "none", 1 })
		},
	}
	settings := []struct{ name, option, cache, concurrency, persistence string }{
		{"C-cmp", "C", "0", "database", "cmp"},
		{"A-bmp", "A", "100%", "exclusive", "bmp"},
	}
	storetest.Each(t, func(t *testing.T, dsn string) {
		for wi, name := range []string{"stockonline", "ecperf", "rubis", "tpcapp"} {
			for i, s := range settings {
				t.Run(name+"/"+s.name, func(t *testing.T) {
					// A workload's two settings run together: the second
					// runs on the population the first loaded.
					storetest.ShareCell(t, dsn, wi)
					cfg, _, err := r.Config(name)
					if err != nil {
						t.Fatal(err)
					}
					// The first setting loads the workload's population,
					// the second runs on what the first left.
					cfg.DB, cfg.Quiet, cfg.NoLoad = store.MustParseDSN(dsn), true, i > 0
					short[name](&cfg)
					setContainer(t, &cfg, s.persistence, s.option, s.cache, s.concurrency)
					res, err := r.Run(context.Background(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					if len(res.EntityOrder) == 0 || res.Summary.Operations == 0 {
						t.Fatalf("%d entity types, %d operations: the run used no container", len(res.EntityOrder), res.Summary.Operations)
					}
					checkFinds(t, res, s.option)
				})
			}
		}
	})
}

// checkFinds fails t when the run found nothing through the container,
// or, under option C, which keeps no data between transactions, when a
// find is counted as served from the ready cache (a find served from the
// transaction's own instance was, before tx hits were counted apart).
// That every find has one outcome holds by construction: Finds is their
// sum (container.Stats).
func checkFinds(t *testing.T, res *result.Result, option string) {
	t.Helper()
	var all int64
	for _, name := range res.EntityOrder {
		e := res.Container[name]
		all += e.Finds
		if option == "C" && e.CacheHits != 0 {
			t.Errorf("%s: %d cache hits under option C, which keeps no data (tx hits %d, loads %d)", name, e.CacheHits, e.TxHits, e.Loads)
		}
	}
	if all == 0 {
		t.Errorf("no finds in the run: %s", fmt.Sprint(res.Container))
	}
}
