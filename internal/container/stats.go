package container

import "sync/atomic"

// Stats are an entity type's exact counters.
type Stats struct {
	Finds          int64 `json:"finds"`
	CacheHits      int64 `json:"cache_hits"`
	Loads          int64 `json:"loads"`
	Stores         int64 `json:"stores"`
	Creates        int64 `json:"creates"`
	Removes        int64 `json:"removes"`
	Instantiations int64 `json:"instantiations"`
	Activations    int64 `json:"activations"`
	Passivations   int64 `json:"passivations"`
	Discards       int64 `json:"discards"`
	PeakReady      int64 `json:"peak_ready"`
	PeakPooled     int64 `json:"peak_pooled"`
	ReadyAtEnd     int64 `json:"ready_at_end"`
	PooledAtEnd    int64 `json:"pooled_at_end"`
	LockWaits      int64 `json:"lock_waits"`
	LockTimeouts   int64 `json:"lock_timeouts"`
	Deadlocks      int64 `json:"deadlocks"`
	Conflicts      int64 `json:"conflicts"`
	// FinderHits are finder calls answered from the finder cache (options
	// A and D), FinderMisses those it could have answered but did not
	// hold, FinderInvalidations its entries that writes removed.
	FinderHits          int64 `json:"finder_hits,omitempty"`
	FinderMisses        int64 `json:"finder_misses,omitempty"`
	FinderInvalidations int64 `json:"finder_invalidations,omitempty"`
	// CacheSize and PoolSize are the sizes at the end: a percentage
	// resolved against Rows, the type's rows as the container counted
	// them (counted only when a size is a percentage, 0 otherwise).
	CacheSize int   `json:"-"`
	PoolSize  int   `json:"-"`
	Rows      int64 `json:"rows,omitempty"`
}

// HitRate is the share of finds served from the ready cache without a
// read of the database.
func (s Stats) HitRate() float64 {
	if s.Finds == 0 {
		return 0
	}
	return float64(s.CacheHits) / float64(s.Finds)
}

type counters struct {
	finds, hits, loads, stores, creates, removes        atomic.Int64
	instantiations, activations, passivations, discards atomic.Int64
	lockWaits, lockTimeouts, deadlocks, conflicts       atomic.Int64
	finderHits, finderMisses, finderInvalidations       atomic.Int64
}

func (c *counters) reset() {
	for _, x := range []*atomic.Int64{&c.finds, &c.hits, &c.loads, &c.stores, &c.creates, &c.removes,
		&c.instantiations, &c.activations, &c.passivations, &c.discards, &c.lockWaits, &c.lockTimeouts, &c.deadlocks, &c.conflicts,
		&c.finderHits, &c.finderMisses, &c.finderInvalidations} {
		x.Store(0)
	}
}
