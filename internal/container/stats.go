package container

import "sync/atomic"

// Stats are an entity type's exact counters.
//
// A find is one identity resolved to an instance: a Find by key, or one
// row (BMP: one key) a finder returned, so a finder call that returns N
// rows is N finds, and one that returns none is none. Each find is exactly
// one of its outcomes, which are what is counted; Finds is their sum:
//
//	Finds = CacheHits + TxHits + SharedHits + Loads + NotFound
//
// A find an error cuts short (a lock timeout, a deadlock, a failed query,
// a cancelled context) is no find: its transaction rolls back, its error
// is counted as such (LockTimeouts, Deadlocks, the run's errors), and the
// operation's retry finds again.
type Stats struct {
	Finds int64 `json:"finds"`
	// CacheHits are finds served from the ready cache: the cached
	// instance's data was fresh, no read of the database.
	CacheHits int64 `json:"cache_hits"`
	// TxHits are finds served from the transaction's own instance: an
	// identity it had already found or created.
	TxHits int64 `json:"tx_hits"`
	// Loads are finds that read the instance's row from the database (a
	// load, or the finder's row under CMP).
	Loads int64 `json:"loads"`
	// NotFound are finds of an identity that has no row: a Find of a
	// missing key, or a key a finder returned whose row was gone when it
	// was loaded.
	NotFound       int64 `json:"not_found"`
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
	// Coherence across app servers (see docs/coherence.md):
	// InvalidationCommits are this server's commits that published the
	// type's writes to its peers, InvalidationsSent the identities and
	// finder entries they named, InvalidationsReceived those the peers'
	// commits named here; per commit is Sent / Commits. Fences count
	// the times the type's cache was cleared because this server was
	// fenced or missed a peer's message; PeersFenced the peers this
	// server stopped waiting for. The latencies are the invalidations'
	// (a synchronous round trip to every peer, an asynchronous message's
	// delivery), in microseconds.
	InvalidationCommits int64 `json:"invalidation_commits,omitempty"`
	InvalidationsSent   int64 `json:"invalidations_sent,omitempty"`
	// Under invalidate, what this server's published commits left out of
	// their announcements (decision 0044): CreatesUnannounced are created
	// identities (no peer can hold a row that does not exist yet; they
	// are named in the settle only, and counted in InvalidationsSent),
	// CommitsUnannounced the commits whose writes of the type were all
	// creations changing no cached finder entry, so that the type had
	// nothing to announce (a commit with nothing to announce of any type
	// waits for no peer).
	CreatesUnannounced int64 `json:"creates_unannounced,omitempty"`
	CommitsUnannounced int64 `json:"commits_unannounced,omitempty"`
	// CommitsUnclaimed are this server's commits whose writes of the
	// type were published neither announced nor settled, as no other
	// server had claimed the type (none serves it from memory; decision
	// 0044); they are not in InvalidationCommits.
	CommitsUnclaimed      int64 `json:"commits_unclaimed,omitempty"`
	InvalidationsReceived int64 `json:"invalidations_received,omitempty"`
	Fences                int64 `json:"fences,omitempty"`
	PeersFenced           int64 `json:"peers_fenced,omitempty"`
	InvalidationP50Micros int64 `json:"invalidation_p50_us,omitempty"`
	InvalidationP99Micros int64 `json:"invalidation_p99_us,omitempty"`
	InvalidationMaxMicros int64 `json:"invalidation_max_us,omitempty"`
	// ReadBacks are sampled cache hits (one in 16, under
	// invalidate-async and option D across servers) read again from the
	// database; StaleReads those whose cached data differed from it.
	ReadBacks  int64 `json:"read_backs,omitempty"`
	StaleReads int64 `json:"stale_reads,omitempty"`
	// SharedHits are finds served from the shared cache (coherence
	// shared), without a read of the database; NearHits are those of them
	// this server's near cache served without a round trip. SharedMisses
	// are loads the shared cache could not serve, SharedPuts the states
	// loaded from the database that filled it, SharedInvalidations the
	// identities commits dropped from it or wrote through to it.
	SharedHits          int64 `json:"shared_hits,omitempty"`
	NearHits            int64 `json:"near_hits,omitempty"`
	SharedMisses        int64 `json:"shared_misses,omitempty"`
	SharedPuts          int64 `json:"shared_puts,omitempty"`
	SharedInvalidations int64 `json:"shared_invalidations,omitempty"`
	// Refreshes are the loads (under option D) of cached instances whose
	// data was valid but older than the refresh interval. A read-mostly
	// type's WriterInvalidations are the identities its writer's commits
	// in this process invalidated in its cache (the other servers' arrive
	// as InvalidationsReceived); see readmostly.go.
	Refreshes           int64 `json:"refreshes,omitempty"`
	WriterInvalidations int64 `json:"writer_invalidations,omitempty"`
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

// counter names one of the counts a transaction keeps per type.
type counter uint8

const (
	hits counter = iota
	txHits
	loads
	missing
	stores
	creates
	removes
	activations
	lockWaits
	lockTimeouts
	deadlocks
	conflicts
	finderHits
	finderMisses
	finderInvalidations
	invalidationCommits
	invalidationsSent
	createsUnannounced
	commitsUnannounced
	readBacks
	staleReads
	sharedHits
	sharedMisses
	sharedPuts
	sharedInvalidations
	nearHits
	refreshes
	writerInvalidations
	numCounters
)

// threadCounts are one server thread's counts of one type. Only the
// thread's goroutine writes them, so an increment is a load and a store,
// with no locked instruction and no cache line shared with the other
// threads; they are atomic only so that Stats may read them meanwhile.
// Stats sums the threads.
type threadCounts [numCounters]atomic.Int64

// tally is a sum of threadCounts.
type tally [numCounters]int64

func (t *tally) add(c *threadCounts) {
	for n := range c {
		t[n] += c[n].Load()
	}
}

// count adds n to counter c of h, on the transaction's thread.
func (tx *Tx) count(h *Home, c counter, n int64) {
	x := &tx.counts[h.index][c]
	x.Store(x.Load() + n)
}

// homeCounts are counted under the home's mutex.
type homeCounts struct {
	instantiations, passivations, discards int64
}
