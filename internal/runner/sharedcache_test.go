package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/sharedcache"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A run under --coherence shared reads through the shared cache, passes
// its checks and reports the shared-cache counters per type with each
// type's coherence.
func TestSharedCoherenceRun(t *testing.T) {
	redisURL, run := testsvc.Redis(t)
	r := newRunner(t)
	cfg := stockOnlineConfig(t, r, storetest.SQLite(t))
	cfg.Clients, cfg.ServerThreads, cfg.Iterations = 4, 4, 3
	cfg.CommitOption, cfg.Coherence = container.OptionA, container.Shared
	cfg.CacheURL = redisURL + "?run=" + run
	res, err := r.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Summary.Passed || res.Summary.Errors != 0 {
		t.Fatalf("passed %v, %d errors; checks %+v", res.Summary.Passed, res.Summary.Errors, res.Checks)
	}
	acc, item := res.Container["Account"], res.Container["Item"]
	if acc.Settings.Coherence != "shared" || acc.Settings.Concurrency != "optimistic" {
		t.Errorf("Account settings %+v; want coherence shared, its default concurrency optimistic", acc.Settings)
	}
	// QueryById finds an Item by key 15 times an iteration; the first
	// find of each fills the shared cache, later ones hit it.
	if item.SharedHits == 0 || item.SharedMisses == 0 || item.SharedPuts != item.SharedMisses {
		t.Errorf("Item: %d shared hits, %d misses, %d puts; want hits, and a fill for each miss", item.SharedHits, item.SharedMisses, item.SharedPuts)
	}
	if acc.Finds != acc.CacheHits+acc.TxHits+acc.SharedHits+acc.Loads+acc.NotFound {
		t.Errorf("Account: %d finds, not the sum of their outcomes %+v", acc.Finds, acc.Stats)
	}
	if acc.SharedInvalidations == 0 {
		t.Error("Account: no shared invalidation, though UpdateAccount stores accounts")
	}
	// The run named its keys itself (?run=): they are the caller's, and
	// stay; a cache opened on the name finds them, then clears them.
	c, err := sharedcache.Open(context.Background(), redisURL, sharedcache.Options{Run: run, ClearAtClose: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// An unreachable shared cache is an infrastructure error (not a usage
// error) that names the URL.
func TestUnreachableSharedCacheIsAnInfrastructureError(t *testing.T) {
	r := newRunner(t)
	cfg := stockOnlineConfig(t, r, storetest.SQLite(t))
	cfg.Clients, cfg.Iterations = 2, 1
	cfg.Coherence, cfg.CacheURL = container.Shared, "redis://127.0.0.1:1"
	_, err := r.Run(context.Background(), cfg)
	var ue *config.UsageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "redis://127.0.0.1:1 unreachable") {
		t.Errorf("error %v; want an infrastructure error naming redis://127.0.0.1:1", err)
	}
}
