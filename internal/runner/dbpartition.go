package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
)

// dbCut is --partition-db-node's cut of one Galera node from the others:
// what the result records of it.
type dbCut struct {
	mu  sync.Mutex
	cut *result.Partition
}

// environment adds the cut, once made, to the result's partitions.
func (c *dbCut) environment(env *result.Environment) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut != nil {
		env.Partitions = append(env.Partitions, *c.cut)
	}
}

// partitionDBNode, under --partition-db-node, makes the driver's start
// (dcfg.Began) start the cut of one database node from the others; the
// function it returns ends a cut still under way (the run ended first)
// and waits until it is healed (decision 0036).
func (s *state) partitionDBNode(ctx context.Context, dcfg *driver.Config, db *store.DB) (healed func()) {
	if s.cfg.PartitionDBNode == "" {
		return func() {}
	}
	node, at, dur, _ := config.ParsePartitionDBNode(s.cfg.PartitionDBNode, s.cfg.DB) // validated
	if db == nil {
		if s.r.Notes != nil {
			fmt.Fprintln(s.r.Notes, "partition: this process holds no connection to the database: no node is cut")
		}
		return func() {}
	}
	s.dbCut = &dbCut{}
	return s.cutWhenBegun(ctx, dcfg, func(ctx context.Context, began time.Time, note func(string)) error {
		return s.dbCut.run(ctx, db, node, s.cfg.DB.Hosts(), began, at, dur, note)
	})
}

// run cuts node from the others at after began, for dur, unless ctx ends
// first; it heals on every path once cut, and returns once healed.
func (c *dbCut) run(ctx context.Context, db *store.DB, node int, hosts []string, began time.Time, at, dur time.Duration, notes func(string)) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(time.Until(began.Add(at))):
	}
	bg := context.WithoutCancel(ctx)
	cutCtx, cancel := context.WithTimeout(bg, 10*time.Second)
	addr, err := db.CutNode(cutCtx, node, true)
	cancel()
	if err != nil {
		return fmt.Errorf("cutting database node %d (%s): %w", node, addr, err)
	}
	from := time.Since(began)
	others := append(append([]string(nil), hosts[:node]...), hosts[node+1:]...)
	notes(fmt.Sprintf("partition: database node %s cut from %s at %.1fs", addr, strings.Join(others, ", "), from.Seconds()))
	select {
	case <-ctx.Done():
	case <-time.After(dur):
	}
	// The heal is retried: a node just cut may be busy reconfiguring.
	deadline := time.Now().Add(30 * time.Second)
	for {
		healCtx, cancel := context.WithTimeout(bg, 5*time.Second)
		_, err = db.CutNode(healCtx, node, false)
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	to := time.Since(began)
	notes(fmt.Sprintf("partition: healed at %.1fs", to.Seconds()))
	c.mu.Lock()
	c.cut = &result.Partition{Between: [2]string{"database node " + addr, "database nodes " + strings.Join(others, ", ")}, FromS: from.Seconds(), ToS: to.Seconds()}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("healing database node %s: %w (heal it by hand: SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0' on it)", addr, err)
	}
	return nil
}
