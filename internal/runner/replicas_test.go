package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// TestReplicaKilledMidRun: Stock-Online on the entity container over a
// private primary and two streaming standbys, its queries (read-only
// transactions) on the standbys; one standby killed by PID once 500
// operations have finished. Its reads move to the other; every operation
// of the plan succeeds (the cut reads retried), the checks pass, and the
// result records the replica lost.
func TestReplicaKilledMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a fault test on a private three-server PostgreSQL cluster")
	c := testsvc.PGReplicas(t, 2)
	r := newRunner(t)
	cfg := stockOnlineConfig(t, r, c.Primary.DSNOf("test"))
	for _, s := range c.Standbys {
		cfg.Replicas = append(cfg.Replicas, store.MustParseDSN(s.DSNOf("test")))
	}
	cfg.Clients, cfg.ServerThreads, cfg.Iterations = 8, 4, 8
	var killed sync.WaitGroup
	killed.Add(1)
	r.Started = func(p Progress) {
		go func() {
			defer killed.Done()
			for {
				if ops, _ := p.Completed(); ops >= 500 {
					c.Standbys[0].Kill()
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
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
