package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
)

// TestReplicaKilledMidRun: Stock-Online on the entity container over a
// private primary and two streaming standbys, its queries (read-only
// transactions) on the standbys; one standby killed by PID once 500
// operations have finished. Its reads move to the other; every operation
// of the plan succeeds (the cut reads retried), the checks pass, and the
// result records the replica lost.
func TestReplicaKilledMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a fault test on a private three-server PostgreSQL cluster")
	c, r, cfg := stockOnlineOnReplicas(t)
	cfg.Clients, cfg.ServerThreads, cfg.Iterations = 8, 4, 8
	var killed sync.WaitGroup
	r.Started = atOperations(500, &killed, c.Standbys[0].Kill)
	res, err := r.Run(context.Background(), cfg)
	killed.Wait()
	if err != nil {
		t.Fatal(err)
	}
	const want = 8 * 8 * 43
	if got := res.Summary.Operations + res.Summary.Errors; got != want || res.Summary.Errors != 0 {
		t.Errorf("%d operations, %d errors; want exactly %d, none failed", got, res.Summary.Errors, want)
	}
	for _, ck := range res.Checks {
		if !ck.Passed {
			t.Errorf("check %s failed: %s", ck.Name, ck.Detail)
		}
	}
	rs := res.Database.Replicas
	if rs == nil || len(rs.Replicas) != 2 {
		t.Fatalf("replicas in the result: %+v", rs)
	}
	if rs.Replicas[0].Lost == nil || rs.Replicas[1].Lost != nil {
		t.Errorf("lost: %v, %v; want the first alone", rs.Replicas[0].Lost, rs.Replicas[1].Lost)
	}
	// The queries: 15 + 15 by id and code, and 5 holding statements per
	// iteration, read-only transactions all; before the kill on either
	// replica, after it on the second (cut ones run again count twice).
	queries := int64(8 * 8 * 35)
	// Each query routed once, and once more for each cut one, which the
	// driver retried (measured: 2,240 + 1 of 1 retry).
	routed := rs.Replicas[0].Reads + rs.Replicas[1].Reads + rs.PrimaryReads
	if routed < queries || routed-queries > res.Summary.Retries || rs.Replicas[1].Reads < queries/2 {
		t.Errorf("read-only transactions: %d and %d on the replicas, %d on the primary, %d retries; want %d, plus at most one per retry, most on the survivor",
			rs.Replicas[0].Reads, rs.Replicas[1].Reads, rs.PrimaryReads, res.Summary.Retries, queries)
	}
	t.Logf("reads %d and %d on the replicas, %d on the primary; %d retries; first lost at %v",
		rs.Replicas[0].Reads, rs.Replicas[1].Reads, rs.PrimaryReads, res.Summary.Retries, rs.Replicas[0].Lost)
	if !res.Summary.Passed {
		t.Errorf("run did not pass: %+v", res.Summary)
	}
}

// TestRubisReplicaReads: RUBiS (servlets, the bidding mix without think
// time) over a private primary and two standbys that apply each commit
// 300 ms late (recovery_min_apply_delay): the browsers carry their
// position in the site's cookie, so a page read on a standby after the
// session's own write is a read-your-writes violation under eventual
// reads, and waits for the standby under causal ones: then none.
func TestRubisReplicaReads(t *testing.T) {
	testsvc.SkipUnlessLong(t, "two RUBiS runs on a private three-server PostgreSQL cluster")
	c := testsvc.PGReplicas(t, 2)
	for _, s := range c.Standbys {
		s.Exec(t, "ALTER SYSTEM SET recovery_min_apply_delay = '300ms'")
		s.Exec(t, "SELECT pg_reload_conf()")
	}
	w, err := workload.NewRegistry(rubis.New())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Backends: storetest.Backends(), Workloads: w, Version: "test"}
	for i, mode := range []store.ReplicaReads{store.Eventual, store.Causal} {
		t.Run(string(mode), func(t *testing.T) {
			cfg, _, err := r.Config("rubis")
			if err != nil {
				t.Fatal(err)
			}
			cfg.DB, cfg.Quiet, cfg.NoLoad = store.MustParseDSN(c.Primary.DSNOf("test")), true, i > 0
			for _, s := range c.Standbys {
				cfg.Replicas = append(cfg.Replicas, store.MustParseDSN(s.DSNOf("test")))
			}
			cfg.ReplicaReads = mode
			cfg.Clients, cfg.ServerThreads, cfg.Iterations, cfg.Duration, cfg.RampUp, cfg.RampDown = 4, 4, 40, 0, 0, 0
			workload.SetOptions(&cfg, func(o *rubis.Options) { o.ThinkScale, o.SkipImages = 0, true })
			res, err := r.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary.Errors != 0 || !res.Summary.Passed {
				t.Errorf("%d errors, passed %v", res.Summary.Errors, res.Summary.Passed)
			}
			rs := res.Database.Replicas
			var reads, missed, waits, fellBack int64
			for _, st := range rs.Replicas {
				reads += st.Reads
				missed += st.ReadYourWritesViolations
				waits += st.CausalWaits
				fellBack += st.CausalFallbacks
			}
			t.Logf("%s: %d reads on the replicas, %d on the primary, %d positions; %d violations, %d causal waits, %d gave up",
				mode, reads, rs.PrimaryReads, rs.Positions, missed, waits, fellBack)
			if reads == 0 || rs.Positions == 0 {
				t.Fatalf("%d replica reads, %d positions read: the run did not write and read over the replicas", reads, rs.Positions)
			}
			switch mode {
			case store.Eventual:
				if missed == 0 {
					t.Errorf("no read-your-writes violation with the standbys 300 ms behind")
				}
			case store.Causal:
				if missed != 0 || waits == 0 {
					t.Errorf("causal: %d violations, %d waits; want 0 and some", missed, waits)
				}
			}
		})
	}
}

// TestReplicaBackMidRun: Stock-Online over two standbys for 12 s; one is
// killed by PID once 300 operations have finished and started again on
// its port at once. The primary's probes take it back: the result records
// its outage with both times and the reads it had after it came back; no
// operation fails, the checks pass.
func TestReplicaBackMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a fault test on a private three-server PostgreSQL cluster")
	c, r, cfg := stockOnlineOnReplicas(t)
	cfg.Clients, cfg.ServerThreads, cfg.Duration, cfg.RampUp, cfg.RampDown = 8, 4, config.Duration(12*time.Second), 0, 0
	var restarted sync.WaitGroup
	var back time.Time
	r.Started = atOperations(300, &restarted, func() {
		c.Standbys[0].Kill()
		c.Standbys[0].Start() // returns once it streams again
		back = time.Now()
	})
	res, err := r.Run(context.Background(), cfg)
	restarted.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Errors != 0 || !res.Summary.Passed {
		t.Errorf("%d errors, passed %v; want none failed", res.Summary.Errors, res.Summary.Passed)
	}
	rs := res.Database.Replicas
	o := rs.Replicas[0].Outages
	t.Logf("reads %d and %d on the replicas, %d on the primary; outages %+v; restarted at %v", rs.Replicas[0].Reads, rs.Replicas[1].Reads, rs.PrimaryReads, o, back.UTC())
	if len(o) != 1 || o[0].Back == nil || o[0].ReadsAfter == 0 {
		t.Fatalf("first replica's outages %+v; want one, taken back, with reads after", o)
	}
	if !o[0].Back.After(o[0].Lost) {
		t.Errorf("taken back at %v, not after it was lost (%v)", o[0].Back, o[0].Lost)
	}
	if rs.Replicas[1].Outages != nil {
		t.Errorf("second replica's outages %+v; want none", rs.Replicas[1].Outages)
	}
}

// atOperations is a Runner.Started that runs fn once n operations have
// finished, done held until fn returns.
func atOperations(n int64, done *sync.WaitGroup, fn func()) func(Progress) {
	done.Add(1)
	return func(p Progress) {
		go func() {
			defer done.Done()
			for {
				if ops, _ := p.Completed(); ops >= n {
					fn()
					return
				}
				time.Sleep(5 * time.Millisecond) // polling the run's progress
			}
		}()
	}
}

// stockOnlineOnReplicas is a private primary with two standbys and a
// Stock-Online run on it, reading on the standbys.
func stockOnlineOnReplicas(t *testing.T) (*testsvc.PGCluster, *Runner, config.Run) {
	t.Helper()
	c := testsvc.PGReplicas(t, 2)
	r := newRunner(t)
	cfg := stockOnlineConfig(t, r, c.Primary.DSNOf("test"))
	for _, s := range c.Standbys {
		cfg.Replicas = append(cfg.Replicas, store.MustParseDSN(s.DSNOf("test")))
	}
	return c, r, cfg
}
