package tpcapp

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/messaging/messagingtest"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workload"
)

// A run on a three-node NATS cluster with the shipping and inventory
// queues on all three (--stream-replicas 3) loses the leader of the
// shipping queue's stream, or a follower, mid-run: every order that
// committed is shipped exactly once and every reorder received once, the
// checks pass.
func TestShippingSurvivesANodeKilled(t *testing.T) {
	for _, victim := range []string{messagingtest.Leader, messagingtest.Follower} {
		t.Run(victim, func(t *testing.T) {
			testsvc.SkipUnlessLong(t, "a NATS cluster node killed mid-run")
			cluster := testsvc.NATSClusterOf3(t)
			reg, err := workload.NewRegistry(New())
			if err != nil {
				t.Fatal(err)
			}
			r := &runner.Runner{Backends: storetest.Backends(), Workloads: reg, Version: "test"}
			cfg, _, err := r.Config("tpcapp")
			if err != nil {
				t.Fatal(err)
			}
			cfg.DB, cfg.Quiet = store.MustParseDSN(storetest.SQLite(t)), true
			cfg.Clients, cfg.Duration, cfg.RampUp, cfg.RampDown = 4, config.Duration(5*time.Second), 0, 0
			workload.SetOptions(&cfg, func(o *Options) {
				o.PartnerDelay, o.ItemImages = "none", ImagesNone
				o.Broker, o.StreamReplicas = cluster.URLs(), 3
			})
			res := messagingtest.KillDuringRun(t, cluster, "TPCAPP_SHIP_", victim, 10, func() (*result.Result, error) {
				return r.Run(context.Background(), cfg)
			})
			var shipped string
			for _, c := range res.Checks {
				if !c.Passed {
					t.Errorf("check %s failed: %s", c.Name, c.Detail)
				}
				if c.Name == "orders-shipped-once" {
					shipped = c.Detail
				}
			}
			// Exact: as many first shipments as CreateOrders succeeded
			// (the database was loaded fresh, with nothing to ship), give
			// or take those in doubt.
			op := res.Operations["CreateOrder"]
			orders := op.Count - op.Errors - op.BusinessExceptions - op.InDoubt
			m := shippedThisRun.FindStringSubmatch(shipped)
			if m == nil {
				t.Fatalf("orders-shipped-once: %q does not say how many shipped this run", shipped)
			}
			if n, _ := strconv.ParseInt(m[1], 10, 64); n < orders || n > orders+op.InDoubt || orders == 0 {
				t.Errorf("%d orders shipped this run; want the %d CreateOrders that succeeded (%d more in doubt): %s", n, orders, op.InDoubt, shipped)
			}
			t.Logf("%s killed: %s", victim, shipped)
		})
	}
}

var shippedThisRun = regexp.MustCompile(`(\d+) shipped this run`)
