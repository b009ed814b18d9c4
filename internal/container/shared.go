package container

import (
	"context"
	"errors"
	"fmt"

	"github.com/tierbench/tierbench/internal/store"
)

// SharedCache holds the entity state that every app server of a run
// shares (coherence shared): read before the database by a load the
// server's own cache cannot serve, filled from the database after a miss,
// invalidated under each commit that writes. internal/sharedcache is its
// Redis implementation; the container sees only this.
//
// An implementation may keep a near cache in each server on top of the
// shared one; Sync is what keeps it honest (see Tx.readShared).
type SharedCache interface {
	// Read reads the state of t's identity key into vals (len(t.Fields))
	// and version. A miss reports Hit false and the identity's epoch,
	// which the Fill after the database load hands back.
	Read(ctx context.Context, t *Type, key Key, vals []Value, version *int64) (SharedRead, error)
	// Sync returns once this server's near cache no longer holds state
	// that a write had invalidated before the call: one round trip.
	Sync(ctx context.Context) error
	// Fill stores state read from the database unless the identity has
	// been invalidated since the Read that returned epoch (a write may
	// have committed after the database read); it reports whether it
	// stored it.
	Fill(ctx context.Context, t *Type, key Key, epoch int64, vals []Value, version int64) (bool, error)
	// Invalidate moves the identities' epochs on and drops their state,
	// or, for one written at a version (SharedID.Written), replaces it
	// unless a later version has been written or removed; in one round
	// trip.
	Invalidate(ctx context.Context, ids []SharedID) error
}

// SharedRead is what SharedCache.Read found.
type SharedRead struct {
	// Hit: the state was there. Near: this server's near cache served
	// it, without a round trip.
	Hit, Near bool
	// Epoch is the identity's invalidation count at the read.
	Epoch int64
}

// SharedID names an identity a commit wrote, for the shared cache.
//
// Under optimistic concurrency the database orders the writes of an
// identity by its version, so the shared cache can be written through:
// Written is the state the commit stored at Version, kept unless a later
// version is there. A remove's Version is then the row's version plus
// one, below which no state is written again. Without a version (nil
// Written, Version 0) the identity's state is dropped.
type SharedID struct {
	Type    *Type
	Key     Key
	Written []Value
	Version int64
}

// ErrSharedInvalidation: a commit reached the database but the shared
// cache could not be told, so other servers may read state older than
// it. Not retryable: the write is stored; the run cannot vouch for its
// reads any more.
var ErrSharedInvalidation = errors.New("container: the commit is stored, but the shared cache could not be invalidated")

// UseSharedCache gives the container the shared cache of the types whose
// coherence is shared. Call it after New, before the first transaction.
func (c *Container) UseSharedCache(sc SharedCache) { c.sharedCache = sc }

// sharesState reports whether tx reads h's instances through the shared
// cache. Under database concurrency a read-write transaction reads an
// updated type from the database, as its locking read is what keeps two
// servers' writers from losing an update (on SQLite, the writer's lock
// taken at BEGIN makes its reads current; the shared cache may still hold
// the state a commit just replaced). Under optimistic concurrency a
// writer may read cached state: the version check at store refuses it if
// it was not the latest. Exclusive concurrency is refused for updated
// shared types (Settings.safe): its lock is one process's.
func (tx *Tx) sharesState(h *Home) bool {
	if !h.shared {
		return false
	}
	return tx.readOnly || h.s.Concurrency != Database || !h.t.Updated
}

// readShared serves a load of i from the shared cache. On a hit i's data
// is set and counted; on a miss it returns the epoch for fillShared.
//
// The near cache is invalidated by messages the shared cache pushes on
// the connection the state was read on, which may still be on their way
// when a transaction begins after a write's commit returned. So the first
// near-cache hit of a transaction waits for one round trip on that
// connection (Sync), which brings every invalidation sent before it, and
// reads again; a read that went to the shared cache is such a round trip
// itself. From then on, near-cache hits in the transaction are current
// as of its start.
func (tx *Tx) readShared(i *Instance) (hit bool, epoch int64, err error) {
	h, sc := i.home, tx.ctr.sharedCache
	if sc == nil {
		return false, 0, fmt.Errorf("container: %s's coherence is shared, but the run opened no shared cache", h.t.Name)
	}
	r, err := sc.Read(tx.ctx, h.t, i.key, i.vals, &i.version)
	if err == nil && r.Near && !tx.synced {
		if err = sc.Sync(tx.ctx); err == nil {
			r, err = sc.Read(tx.ctx, h.t, i.key, i.vals, &i.version)
		}
	}
	if err != nil {
		return false, 0, fmt.Errorf("container: shared cache: read of %s %v: %w", h.t.Name, i.key, err)
	}
	tx.synced = true
	if !r.Hit {
		tx.count(h, sharedMisses, 1)
		return false, r.Epoch, nil
	}
	if r.Near {
		tx.count(h, nearHits, 1)
	}
	tx.count(h, sharedHits, 1)
	i.valid, i.loaded, i.loadedAt = true, true, h.stamp()
	return true, 0, nil
}

// fillShared stores i's state, just loaded from the database by q, in
// the shared cache. Only a statement that saw every commit made before it
// started may fill: one that ran alone or at READ COMMITTED, or under
// SQLite's single writer; a transaction's snapshot at a stricter level
// may predate a write whose invalidation came before the shared cache's
// read, and filling from it would outlive that write.
func (tx *Tx) fillShared(i *Instance, q querier, epoch int64) error {
	db := tx.ctr.db
	if q != querier(tx.sess) && db.Isolation() != store.ReadCommitted && !db.SingleWriter() {
		return nil
	}
	h := i.home
	stored, err := tx.ctr.sharedCache.Fill(tx.ctx, h.t, i.key, epoch, i.vals, i.version)
	if err != nil {
		return fmt.Errorf("container: shared cache: fill of %s %v: %w", h.t.Name, i.key, err)
	}
	if stored {
		tx.count(h, sharedPuts, 1)
	}
	return nil
}

// invalidateShared drops or replaces, after the database commit, the
// shared state of every identity the transaction stored or removed, in
// one round trip. A reader that filled the shared cache from the database before
// the commit either filled before this (and its state is dropped now) or
// after (and its fill is refused: the epoch it read has moved on), so no
// transaction that begins after Commit returns reads older state.
func (tx *Tx) invalidateShared() error {
	ids := tx.sharedIDs[:0]
	for _, i := range tx.enlisted {
		h := i.home
		// A create needs none: no state of a new identity can be in the
		// shared cache, as a fill follows a load that found the row, and
		// the remove of an earlier row of that identity invalidated it.
		if !h.shared || !(i.stored || i.removed && !i.created) {
			continue
		}
		id := SharedID{Type: h.t, Key: i.key}
		if h.sql.optimistic {
			// The version the store moved the row to (Commit has moved
			// the instance's), or past the removed row's.
			id.Version, id.Written = i.version, i.vals
			if i.removed {
				id.Version, id.Written = i.version+1, nil
			}
		}
		ids = append(ids, id)
	}
	tx.sharedIDs = ids
	if len(ids) == 0 || tx.ctr.skipSharedInvalidation {
		return nil
	}
	if tx.ctr.sharedCache == nil {
		return fmt.Errorf("%w: the run opened no shared cache", ErrSharedInvalidation)
	}
	if err := tx.ctr.sharedCache.Invalidate(tx.ctx, ids); err != nil {
		return fmt.Errorf("%w: %w", ErrSharedInvalidation, err)
	}
	for _, id := range ids {
		tx.count(tx.ctr.Home(id.Type.Name), sharedInvalidations, 1)
	}
	return nil
}
