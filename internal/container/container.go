package container

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tierbench/tierbench/internal/store"
)

// Container runs a workload's entity types over one database.
type Container struct {
	db    *store.DB
	homes []*Home
	// threads holds each server thread's reusable transaction; shared
	// serves callers outside the server threads (warm-up).
	threads []*Tx
	shared  *Tx
	// autocommitReads: a read-only transaction's statements need no BEGIN
	// and COMMIT at READ COMMITTED, nor on SQLite, where each statement
	// reads a consistent snapshot and explicit transactions take the
	// single writer's lock.
	autocommitReads bool
	// replicas: the database routes read-only transactions to replicas.
	replicas bool
	// waits serialises the deadlock check of exclusive lock waits.
	waits sync.Mutex
	// writes numbers the committed transactions that wrote instances
	// whose homes keep data across transactions (commit options A and D)
	// or lock (exclusive); see Home.lastWrite.
	writes atomic.Int64
	// peers carry the commits of coherent types to the other app servers
	// (nil with one); outOfSync: they cannot vouch for this cache now.
	peers     Peers
	outOfSync atomic.Bool
	// sharedCache holds the state of the types whose coherence is shared
	// (UseSharedCache); skipSharedInvalidation switches its invalidation
	// off, for tests that show the checks fail without it.
	sharedCache            SharedCache
	skipSharedInvalidation bool
	// skipMirrors switches the read-mostly invalidation off, for tests
	// that show the checks fail without it.
	skipMirrors bool
	// mirrored: some type is read-mostly of another (linkReadMostly), so
	// a commit has writes to mirror; without one, commits skip the walk.
	mirrored bool
}

// New makes a container with a fresh (empty) cache and pool for each type,
// and prepares the types' statements.
func New(ctx context.Context, db *store.DB, types []*Type, settings map[string]Settings) (*Container, error) {
	c := &Container{db: db, autocommitReads: db.Isolation() == store.ReadCommitted || db.SingleWriter(), replicas: db.Replicas() > 0}
	if err := CheckReadMostly(types, settings); err != nil {
		return nil, fmt.Errorf("container: %w", err)
	}
	for _, t := range types {
		if err := t.check(); err != nil {
			return nil, err
		}
		s, ok := settings[t.Name]
		if !ok {
			return nil, fmt.Errorf("container: no settings for %s", t.Name)
		}
		h := newHome(c, len(c.homes), t, s)
		var err error
		if h.sql, err = prepareStatements(ctx, db, t, s); err != nil {
			return nil, fmt.Errorf("container: %s: %w", t.Name, err)
		}
		if err := h.initKeys(ctx, db); err != nil {
			return nil, fmt.Errorf("container: %s keys: %w", t.Name, err)
		}
		if h.relativeSizes() {
			if err := h.countRows(ctx, db); err != nil {
				return nil, fmt.Errorf("container: %s rows: %w", t.Name, err)
			}
		}
		h.newShards(shardCount(h.cacheCap))
		c.homes = append(c.homes, h)
	}
	c.linkReadMostly()
	for i := range db.Threads() {
		c.threads = append(c.threads, c.newTx(db.Thread(i)))
	}
	c.shared = c.newTx(db.Thread(-1))
	return c, nil
}

func (c *Container) newTx(sess *store.Session) *Tx {
	return &Tx{ctr: c, sess: sess, primary: sess, counts: make([]threadCounts, len(c.homes))}
}

func (c *Container) thread(i int) *Tx {
	if i < 0 || i >= len(c.threads) {
		return c.shared
	}
	return c.threads[i]
}

// Home of the named type; nil if there is none.
func (c *Container) Home(name string) *Home {
	for _, h := range c.homes {
		if h.t.Name == name {
			return h
		}
	}
	return nil
}

// Homes in declaration order.
func (c *Container) Homes() []*Home { return c.homes }

// Stats of every type, by name.
func (c *Container) Stats() map[string]Stats {
	out := make(map[string]Stats, len(c.homes))
	for _, h := range c.homes {
		out[h.t.Name] = h.Stats()
	}
	return out
}

// ResetStats zeroes every counter (after a warm-up).
func (c *Container) ResetStats() {
	for _, h := range c.homes {
		h.resetStats()
	}
	if c.peers != nil {
		c.peers.ResetLatency()
	}
}

// warmBatch is how many instances one warm-up transaction takes.
const warmBatch = 1000

// Warm reads every row of h's table through read-only transactions, as
// the paper's warm-up does with read-only operations: each instance is
// activated and loaded, then the commit option applies (A keeps it with its
// data, B keeps its identity, C passivates it into the pool).
func (c *Container) Warm(ctx context.Context, h *Home) error {
	tx, err := c.BeginReadOnly(ctx, -1)
	if err != nil {
		return err
	}
	tx.warming = true
	defer tx.Rollback()
	seen := h.lastWrite.Load()
	if err := tx.readRows(h, h.sql.all, nil, true); err != nil {
		return err
	}
	keys, rows := tx.keys, tx.rows
	width := h.width()
	for n, k := range keys {
		if _, err := tx.fromRow(h, k, rows[n*width:(n+1)*width], seen); err != nil {
			return err
		}
		if (n+1)%warmBatch == 0 || n == len(keys)-1 {
			if err := tx.Commit(); err != nil {
				return err
			}
			if tx, err = c.BeginReadOnly(ctx, -1); err != nil {
				return err
			}
			tx.warming = true
		}
	}
	return nil
}
