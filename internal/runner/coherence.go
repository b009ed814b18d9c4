package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/tierbench/tierbench/internal/coherence"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
)

// clusterMember is what one app server's containers need of the cluster:
// the coherence bus of the types whose caches invalidate across servers,
// and, with several servers, the locking reads that keep other servers'
// transactions out (container.AcrossServers).
type clusterMember struct {
	bus     *coherence.Bus
	servers int
}

// joinCluster readies this process as one of cfg's app servers: it opens
// the coherence bus when a caching type's mode is invalidate or
// invalidate-async (on --coherence-broker, or a NATS server started in
// the process), and nothing more with one server and no such type. Each
// app server of a run must be given the run's --app-servers, so that it
// takes the locking reads and waits to hear all its peers.
func joinCluster(ctx context.Context, cfg config.Run, entities map[string]container.Settings) (*clusterMember, error) {
	a := &clusterMember{servers: cfg.Servers()}
	if !anyInvalidates(entities) {
		return a, nil
	}
	bus, err := coherence.Open(ctx, coherence.Options{URL: cfg.CoherenceBroker, Run: clusterName(cfg.DB), Servers: a.servers})
	if err != nil {
		return nil, fmt.Errorf("--coherence: %w", err)
	}
	a.bus = bus
	return a, nil
}

// clusterName is the name of the app servers of a database on the
// broker, which keeps their subjects apart from other runs': the
// database's, hashed (its DSN may hold a password). One run at a time
// uses a database (decision 0017), and every app server of a run is
// given the same DSN, so the name is the run's and nobody else's.
func clusterName(db store.DSN) string {
	sum := sha256.Sum256([]byte(db.String()))
	return hex.EncodeToString(sum[:8])
}

// attach readies a container of this app server (RunParams.Attach).
func (a *clusterMember) attach(c *container.Container) {
	switch {
	case a.bus != nil:
		a.bus.Attach(c)
	case a.servers > 1:
		c.AcrossServers()
	}
}

// Close leaves the cluster.
func (a *clusterMember) Close() error {
	if a == nil || a.bus == nil {
		return nil
	}
	return a.bus.Close()
}

// anyInvalidates reports whether a type of the run sends invalidations
// across app servers (container.Settings.Invalidates).
func anyInvalidates(entities map[string]container.Settings) bool {
	for _, s := range entities {
		if s.Invalidates() {
			return true
		}
	}
	return false
}
