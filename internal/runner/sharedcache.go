package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/sharedcache"
	"github.com/tierbench/tierbench/internal/workload"
)

// runParam is the query parameter of --cache-url that names the run whose
// keys a process reads and writes: the app servers of one run give the
// same (a run passes its own to its tiers); a server started without it
// takes a fresh name, its own alone.
const runParam = "run"

// sharedRun is a run's shared cache, open, and the URL its tier
// processes connect with (the server and the run's name).
type sharedRun struct {
	cache   *sharedcache.Cache
	tierURL string
}

// openShared opens the shared cache when any entity type's coherence is
// shared (nil otherwise), at --cache-url or config.DefaultCacheURL. An
// unreachable server is an infrastructure error naming the URL.
func openShared(ctx context.Context, cfg config.Run, entities map[string]container.Settings) (*sharedRun, error) {
	if !anyShared(entities) {
		return nil, nil
	}
	u, err := url.Parse(cmp.Or(cfg.CacheURL, config.DefaultCacheURL))
	if err != nil {
		return nil, config.Usage(fmt.Errorf("--cache-url: %w", err))
	}
	q := u.Query()
	name, owned := q.Get(runParam), false
	if name == "" {
		name, owned = newRunName(cfg.Workload), true
	}
	q.Del(runParam)
	u.RawQuery = q.Encode()
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A name made here is this process's alone: its keys go with it.
	c, err := sharedcache.Open(octx, u.String(), sharedcache.Options{Run: name, ClearAtClose: owned})
	if err != nil {
		return nil, fmt.Errorf("--coherence shared: %w", err)
	}
	q.Set(runParam, name)
	u.RawQuery = q.Encode()
	return &sharedRun{cache: c, tierURL: u.String()}, nil
}

// anyShared reports whether a type's coherence is shared.
func anyShared(entities map[string]container.Settings) bool {
	for _, s := range entities {
		if s.Coherence == container.Shared {
			return true
		}
	}
	return false
}

// newRunName names a run's keys: the workload, the time and random bits,
// so that runs on one Redis, at once or one after another, never read
// each other's state.
func newRunName(workloadName string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", workloadName, time.Now().Unix(), hex.EncodeToString(b))
}

// attach gives p the shared cache (a nil sr gives nothing).
func (sr *sharedRun) attach(p *workload.RunParams) {
	if sr != nil {
		p.SharedCache = sr.cache
	}
}

// close disconnects (removing the run's keys if they are this
// process's).
func (sr *sharedRun) close() {
	if sr != nil {
		sr.cache.Close()
	}
}

// tierArgs are the flags that give a tier process the run's shared cache.
func (sr *sharedRun) tierArgs() []string {
	if sr == nil {
		return nil
	}
	return []string{"--cache-url", sr.tierURL}
}
