package runner

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// A run with --coherence invalidate and no broker starts its own NATS
// server, attaches the bus to the container, and reports what its
// commits published: each commit that wrote a cached type published it
// once, naming at least the identities it stored, created or removed,
// or, with no other server to claim the type (decision 0044), is counted
// as publishing nothing (all of them once the bus is in sync, a
// heartbeat after it starts); with one app server nobody else published
// anything here.
func TestRunPublishesItsWritesUnderInvalidate(t *testing.T) {
	w, err := workload.NewRegistry(stockonline.New())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Backends: storetest.Backends(), Workloads: w, Version: "test"}
	cfg, _, err := r.Config("stockonline")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clients, cfg.ServerThreads, cfg.Iterations, cfg.Quiet = 4, 2, 1, true
	setContainer(t, &cfg, "cmp", "A", "100%", "exclusive")
	cfg.Coherence = container.Invalidate
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for _, name := range res.EntityOrder {
		e := res.Container[name]
		if e.Settings.CommitOption != "A" {
			if e.InvalidationCommits != 0 {
				t.Errorf("%s (option %s) published %d commits; only cached types publish", name, e.Settings.CommitOption, e.InvalidationCommits)
			}
			continue
		}
		if e.InvalidationsReceived != 0 || e.Fences != 0 || e.PeersFenced != 0 {
			t.Errorf("%s: %d received, %d fences, %d peers fenced with no peer", name, e.InvalidationsReceived, e.Fences, e.PeersFenced)
		}
		if e.InvalidationCommits > 0 && e.InvalidationsSent < e.InvalidationCommits {
			t.Errorf("%s: %d invalidations sent by %d commits; each names at least one identity", name, e.InvalidationsSent, e.InvalidationCommits)
		}
		commits := e.InvalidationCommits + e.CommitsUnclaimed
		if writes := e.Stores + e.Creates + e.Removes; (writes > 0) != (commits > 0) || commits > writes {
			t.Errorf("%s: %d commits published and %d unclaimed for %d writes", name, e.InvalidationCommits, e.CommitsUnclaimed, writes)
		}
		published += int(commits)
	}
	if published == 0 {
		t.Fatal("no commit published its writes or counted them unclaimed")
	}
	var out bytes.Buffer
	result.WriteSummary(&out, res)
	if !strings.Contains(out.String(), "coherence: ") {
		t.Errorf("the summary has no coherence line:\n%s", out.String())
	}
}
