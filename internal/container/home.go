package container

import (
	"context"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// Home is the runtime of one entity type: its ready cache, pool, locks,
// statements and counters.
//
// What a find touches, the cached instances, the idle list and the lock
// table, is split by key into shards, each under its own mutex, so that
// finds of different identities on different server threads do not queue
// on one lock (shardCount says when a home shards); what all identities
// share, the pool, the sizes and the counts, is under mu, which only
// activation, passivation and a claim of a place in the cache take, never
// a cache hit. A shard's mutex is taken before mu, never after.
type Home struct {
	t   *Type
	s   Settings
	sql *statements
	// numbersWrites: the type keeps data across transactions (A, D) or
	// locks (exclusive), so its writes move lastWrite.
	numbersWrites bool
	// coherent: the type's writes travel to and from the other app
	// servers (AttachPeers); readBack: sampled cache hits are checked
	// against the database; clusterLocks: read-write transactions read
	// it with locking reads (AcrossServers).
	coherent, readBack, clusterLocks bool
	// shared: the type's coherence is shared (a flag, not a string
	// comparison, on the find's path).
	shared bool
	// mirrors are the read-mostly types this type writes for (their
	// Settings.ReadMostly names it), and mirrorFinders, on a read-mostly
	// type, every one of its finders' entries, which its writer's commits
	// invalidate (see readmostly.go).
	mirrors       []*Home
	mirrorFinders []FinderEntry
	// reflect: fields are reached by reflection (Settings.Dispatch).
	reflect bool
	// ctr and index find the type's counts in each thread's transaction
	// (Tx.counts[index]).
	ctr   *Container
	index int
	// finders is the finder cache; nil when the type's settings keep none.
	finders *finderCache
	shards  []shard
	// shardShift selects a key's shard from the top bits of its hash.
	shardShift uint8
	// idleLocksPerShard is a shard's share of idleLocks.
	idleLocksPerShard int

	_ cacheLinePad // the fields above are read on every find; mu's are written

	mu   sync.Mutex
	pool []*Instance
	// cached counts the instances in the shards' caches.
	cached int
	// ready counts instances with identity, cached or private to a
	// transaction.
	ready, peakReady, peakPooled int64
	// rows is the type's row count as the container knows it (counted at
	// start when a size is a percentage, then moved by the creates and
	// removes it commits); cacheCap and poolCap are the sizes resolved
	// against it.
	rows              int64
	cacheCap, poolCap int
	// st are the counts kept under mu, and base the thread counts' sums
	// at the last reset.
	st   homeCounts
	base tally
	// keys hands out sequence keys, under a mutex of its own.
	keys keySource

	_ cacheLinePad

	// lastWrite is the number (Container.writes) of the newest committed
	// write of an instance of the type, set before its transaction
	// releases its instances and locks. Data read from the database by a
	// transaction is current only if no write committed since the
	// transaction began (a finder's rows are read before their instances
	// are taken; a snapshot may be older than the statement): under a
	// caching commit option, such data stays in the cache only if
	// lastWrite has not moved past the transaction's start; under
	// exclusive concurrency, a finder's rows read before the lock are
	// loaded again if it has moved since the query. Strategies that need
	// neither do not pay for the shared counter.
	lastWrite atomic.Int64
	coherenceState
}

// cacheLinePad keeps fields that different cores write off one another's
// cache lines (128 bytes: adjacent-line prefetch pairs 64-byte lines).
type cacheLinePad [128]byte

// shard is the state of the identities whose keys hash to it.
type shard struct {
	mu    sync.Mutex
	cache map[Key]*Instance
	idle  lru
	// locks is the lock table of exclusive concurrency: held locks, and
	// up to the home's idleLocksPerShard free ones (see unlock).
	locks     map[Key]*lock
	freeLocks []*lock
	// writing counts, per identity, the private instances whose writes
	// are being committed: from just before the database commit until
	// they are released. While any is, the cached instance of that
	// identity serves no find from memory, and whatever data it holds
	// is dropped when its transaction ends (it may predate the write).
	writing map[Key]int32
	_       cacheLinePad
}

// Type of the home.
func (h *Home) Type() *Type { return h.t }

// Settings the home runs with.
func (h *Home) Settings() Settings { return h.s }

func newHome(c *Container, index int, t *Type, s Settings) *Home {
	h := &Home{ctr: c, index: index, t: t, s: s,
		numbersWrites: s.CommitOption.caches() || s.Concurrency == Exclusive, shared: s.Coherence == Shared,
		reflect: s.Dispatch == Reflect, finders: newFinderCache(t, s)}
	h.setRows(0)
	return h
}

// Sharding the cache changes which instance is evicted when it is full:
// the least recently used idle instance of the finding key's shard rather
// than of the whole home (Guava's segmented caches make the same trade).
// So a home shards only when its cache is large enough for the difference
// not to matter, at least minShardEntries instances per shard, and a small
// cache, the kind a test counts evictions in exactly, keeps one exact LRU.
const (
	minShardEntries = 256
	maxShards       = 64
)

// shardCount is how many shards a home with the cache capacity
// cacheCap gets on this machine: enough that the server threads'
// finds seldom meet (four per processor), as few as keep
// minShardEntries in each.
func shardCount(cacheCap int) int {
	n := 1
	for n < maxShards && n < 4*runtime.GOMAXPROCS(0) && cacheCap/(2*n) >= minShardEntries {
		n *= 2
	}
	return n
}

// newShards splits the home into n shards (a power of two). New calls it
// once, when the cache's size is known and before the home is shared.
func (h *Home) newShards(n int) {
	h.shards = make([]shard, n)
	for i := range h.shards {
		h.shards[i] = shard{cache: make(map[Key]*Instance), locks: make(map[Key]*lock), writing: make(map[Key]int32)}
	}
	h.shardShift = uint8(64 - bits.TrailingZeros(uint(n)))
	h.idleLocksPerShard = max(idleLocks/n, 1)
}

// shardOf is the shard of key: the top bits of a multiplicative hash.
func (h *Home) shardOf(key Key) *shard {
	if len(h.shards) == 1 {
		return &h.shards[0]
	}
	x := uint64(key.A)*0x9e3779b97f4a7c15 ^ uint64(key.B)*0xc2b2ae3d27d4eb4f
	for i := 0; i < len(key.S); i++ {
		x = (x ^ uint64(key.S[i])) * 0x100000001b3
	}
	x ^= x >> 31
	x *= 0x9e3779b97f4a7c15
	return &h.shards[x>>h.shardShift]
}

// noteWrite records write number n of an instance of the type. Writers
// committing at once may note out of order; lastWrite only moves forward.
func (h *Home) noteWrite(n int64) {
	for {
		last := h.lastWrite.Load()
		if n <= last || h.lastWrite.CompareAndSwap(last, n) {
			return
		}
	}
}

// relativeSizes reports whether a size follows the type's rows, which
// must then be counted.
func (h *Home) relativeSizes() bool { return h.s.Cache.Relative || h.s.Pool.Relative }

// countRows reads the type's row count, which sizes in percent resolve
// against.
func (h *Home) countRows(ctx context.Context, db *store.DB) error {
	s, err := db.Prepare(ctx, store.Statement{Name: h.t.Name + "-rows", SQL: "SELECT COUNT(*) FROM " + h.t.Table})
	if err != nil {
		return err
	}
	rows, err := db.Query(ctx, s)
	if err != nil {
		return err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	h.setRows(n)
	h.mu.Unlock()
	return nil
}

// setRows moves the row count and the sizes that follow it. A smaller
// size takes effect as instances leave: nothing is evicted for it. Called
// with h.mu held (or before the home is shared).
func (h *Home) setRows(n int64) {
	h.rows = n
	h.cacheCap, h.poolCap = h.s.Cache.Of(n), h.s.Pool.Of(n)
}

// fresh reports whether a cached instance's data can serve a find without
// reading the database. Called with its shard's mutex held.
func (h *Home) fresh(i *Instance, now func() time.Time) bool {
	if !i.valid || i.shard.beingWritten(i.key) || !h.servesFromMemory() || h.shared {
		// A shared type's data is kept across transactions by the shared
		// cache (and its near cache), which other servers' commits
		// invalidate; the instance's own copy knows only this server's.
		return false
	}
	switch h.s.CommitOption {
	case OptionA:
		return true
	case OptionD:
		return now().Sub(i.loadedAt) < h.s.Refresh
	}
	return false
}

// stamp is when data read or created now was loaded: only option D,
// which refreshes by age, needs the clock (a call of tens of
// nanoseconds on some machines, the cost of a whole cache hit).
func (h *Home) stamp() time.Time {
	if h.s.CommitOption == OptionD {
		return time.Now()
	}
	return time.Time{}
}

// activate gives an instance the identity key, of shard s: from the pool,
// or a new one. Called with s.mu held.
func (h *Home) activate(s *shard, key Key) *Instance {
	var i *Instance
	h.mu.Lock()
	if n := len(h.pool); n > 0 {
		i = h.pool[n-1]
		h.pool[n-1] = nil
		h.pool = h.pool[:n-1]
	} else {
		h.st.instantiations++
		i = &Instance{home: h, vals: make([]Value, len(h.t.Fields))}
	}
	h.ready++
	h.peakReady = max(h.peakReady, h.ready)
	h.mu.Unlock()
	i.key, i.shard = key, s
	return i
}

// passivate takes an instance's identity away and returns it to the pool,
// or discards it when the pool is full. Called with its shard's mutex
// held.
func (h *Home) passivate(i *Instance) {
	wasCached := i.cached
	if i.cached {
		delete(i.shard.cache, i.key)
		i.cached = false
	}
	if i.lock != nil {
		i.lock.pinned, i.lock = false, nil
	}
	i.owner, i.valid, i.dirty, i.created, i.removed = nil, false, 0, false, false
	i.version, i.stored, i.stale = 0, false, false
	clear(i.vals)
	h.mu.Lock()
	defer h.mu.Unlock()
	if wasCached {
		h.cached--
	}
	h.ready--
	h.st.passivations++
	if len(h.pool) < h.poolCap {
		h.pool = append(h.pool, i)
		h.peakPooled = max(h.peakPooled, int64(len(h.pool)))
		return
	}
	h.st.discards++
}

// makeRoom reports whether one more instance fits in the cache, evicting
// the least recently used idle one of shard s if need be; if so, the
// place is the caller's, who puts an instance of s there. Called with
// s.mu held.
func (h *Home) makeRoom(s *shard) bool {
	if h.claimPlace() {
		return true
	}
	victim := s.idle.tail
	if victim == nil {
		return false // every cached instance of the shard is in a transaction
	}
	s.idle.remove(victim)
	h.passivate(victim)
	return h.claimPlace()
}

// claimPlace takes a place in the cache if one is free.
func (h *Home) claimPlace() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cached < h.cacheCap {
		h.cached++
		return true
	}
	return false
}

// release ends a transaction's ownership of i and applies the commit
// option (committed) or forgets its data (rolled back). Called with its
// shard's mutex held.
//
// outdated: the owner read i's data from the database, and a write of the
// type committed after the owner began: the data may predate it.
func (h *Home) release(i *Instance, committed, outdated bool) {
	s := i.shard
	i.owner = nil
	if committed && i.created != i.removed && h.relativeSizes() {
		h.mu.Lock()
		if i.created {
			h.setRows(h.rows + 1)
		} else {
			h.setRows(h.rows - 1)
		}
		h.mu.Unlock()
	}
	if i.writing {
		h.endWrite(i)
	}
	if i.removed || (!committed && i.created) || h.s.CommitOption == OptionC {
		h.passivate(i)
		return
	}
	i.dirty, i.created, i.stored, i.loaded = 0, false, false, false
	if !committed || h.s.CommitOption == OptionB || i.stale || outdated || s.beingWritten(i.key) {
		i.valid = false
	}
	i.stale = false
	if !i.cached {
		// A private instance joins the cache if its identity is free and
		// there is room; otherwise it goes back to the pool. It joins with
		// its identity only: a write committed since it read its data may
		// have come and gone without marking it, as it was not the cached
		// instance.
		if s.cache[i.key] != nil || !h.makeRoom(s) {
			h.passivate(i)
			return
		}
		s.cache[i.key] = i
		i.cached, i.valid = true, false
	}
	s.idle.pushFront(i)
}

// beingWritten reports whether a private instance's write of key is being
// committed. The length test spares the common case, no such write, a
// hash of the key on every find and release. Called with s.mu held.
func (s *shard) beingWritten(key Key) bool {
	return len(s.writing) > 0 && s.writing[key] > 0
}

// beginWrite records that private instance i is about to commit a write
// (under a caching commit option), so the cached instance of its identity
// stops serving finds from memory until the write is settled. Called
// with its shard's mutex held.
func (h *Home) beginWrite(i *Instance) {
	i.writing = true
	i.shard.writing[i.key]++
	i.shard.invalidateCached(i)
}

// endWrite settles i's write: committed or not, the cached instance's data
// may be older than the database's. Called with its shard's mutex held.
func (h *Home) endWrite(i *Instance) {
	s := i.shard
	i.writing = false
	if n := s.writing[i.key] - 1; n > 0 {
		s.writing[i.key] = n
	} else {
		delete(s.writing, i.key)
	}
	s.invalidateCached(i)
}

// invalidateCached drops the data of the cached instance of private's
// identity: at once if it is idle, at the end of its transaction
// otherwise. Called with s.mu held.
func (s *shard) invalidateCached(private *Instance) {
	s.invalidateKey(private.key, private)
}

// invalidateKey drops the data of key's cached instance unless it is
// except: at once if it is idle, at the end of its transaction
// otherwise. Called with s.mu held.
func (s *shard) invalidateKey(key Key, except *Instance) {
	c := s.cache[key]
	switch {
	case c == nil || c == except:
	case c.owner == nil:
		c.valid = false
	default:
		c.stale = true
	}
}

// Stats is a snapshot of the home's counters: the threads' counts summed,
// and those kept under the home's mutex.
func (h *Home) Stats() Stats {
	var l Latency
	if h.coherent && h.ctr.peers != nil {
		l = h.ctr.peers.Latency(h.t.Name)
	}
	t := h.threadTally()
	h.mu.Lock()
	defer h.mu.Unlock()
	for n := range t {
		t[n] -= h.base[n]
	}
	st := Stats{
		Finds: t[hits] + t[txHits] + t[sharedHits] + t[loads] + t[missing], CacheHits: t[hits], TxHits: t[txHits], Loads: t[loads], NotFound: t[missing], Stores: t[stores],
		Creates: t[creates], Removes: t[removes], Instantiations: h.st.instantiations,
		Activations: t[activations], Passivations: h.st.passivations, Discards: h.st.discards,
		PeakReady: h.peakReady, PeakPooled: h.peakPooled, ReadyAtEnd: h.ready, PooledAtEnd: int64(len(h.pool)),
		CacheSize: h.cacheCap, PoolSize: h.poolCap, Rows: h.rows,
		LockWaits: t[lockWaits], LockTimeouts: t[lockTimeouts], Deadlocks: t[deadlocks], Conflicts: t[conflicts],
		FinderHits: t[finderHits], FinderMisses: t[finderMisses], FinderInvalidations: t[finderInvalidations],
		InvalidationCommits: t[invalidationCommits], InvalidationsSent: t[invalidationsSent],
		CreatesUnannounced: t[createsUnannounced], CommitsUnannounced: t[commitsUnannounced],
		InvalidationsReceived: h.received.Load(), Fences: h.fences.Load(), ReadBacks: t[readBacks], StaleReads: t[staleReads],
		SharedHits: t[sharedHits], SharedMisses: t[sharedMisses], SharedPuts: t[sharedPuts],
		SharedInvalidations: t[sharedInvalidations], NearHits: t[nearHits],
		Refreshes: t[refreshes], WriterInvalidations: t[writerInvalidations],
	}
	if h.coherent && h.ctr.peers != nil {
		st.InvalidationP50Micros, st.InvalidationP99Micros, st.InvalidationMaxMicros = l.P50.Microseconds(), l.P99.Microseconds(), l.Max.Microseconds()
		st.PeersFenced, st.CommitsUnclaimed = l.PeersFenced, l.Unclaimed
	}
	return st
}

// threadTally sums the type's counts over the threads' transactions.
func (h *Home) threadTally() tally {
	var t tally
	for _, tx := range h.ctr.threads {
		t.add(&tx.counts[h.index])
	}
	t.add(&h.ctr.shared.counts[h.index])
	return t
}

// resetStats zeroes the counters and restarts the peaks from now, so that
// a warm-up does not count in the run. The threads' counts are not
// written here (each has one writer, its thread): what they hold now
// becomes the base that Stats subtracts.
func (h *Home) resetStats() {
	t := h.threadTally()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base = t
	h.st = homeCounts{}
	h.received.Store(0)
	h.fences.Store(0)
	h.peakReady, h.peakPooled = h.ready, int64(len(h.pool))
}

// lock is an exclusive lock on one identity.
type lock struct {
	// owner is read by other homes' deadlock checks, hence atomic.
	owner atomic.Pointer[Tx]
	// wake is closed when the lock is released; made only when someone
	// waits.
	wake chan struct{}
	// pinned: the cached instance of the identity points to the lock
	// (Instance.lock), which therefore stays in the table.
	pinned bool
}

// tryLock takes the exclusive lock on key for tx if it is free or tx's
// already, and returns the lock. cached is the shard's cached instance of
// key, or nil. Called with s.mu held.
func (s *shard) tryLock(tx *Tx, key Key, cached *Instance) (*lock, bool) {
	l := s.lockOf(key, cached)
	switch l.owner.Load() {
	case nil:
		l.owner.Store(tx)
		return l, true
	case tx:
		return l, true
	}
	return l, false
}

// lockOf is key's lock in the table, put there if need be. A cached
// instance of key keeps a pointer to it, so that a find of a cached
// identity reaches its lock and its instance with one lookup, not one in
// each map. Called with s.mu held.
func (s *shard) lockOf(key Key, cached *Instance) *lock {
	if cached != nil && cached.lock != nil {
		return cached.lock
	}
	l := s.locks[key]
	if l == nil {
		if n := len(s.freeLocks); n > 0 {
			l = s.freeLocks[n-1]
			s.freeLocks = s.freeLocks[:n-1]
		} else {
			l = &lock{}
		}
		s.locks[key] = l
	}
	if cached != nil {
		cached.lock, l.pinned = l, true
	}
	return l
}

// acquire takes the exclusive lock on key for tx, waiting up to the lock
// timeout.
func (h *Home) acquire(ctx context.Context, tx *Tx, key Key) (*lock, error) {
	var timer *time.Timer
	s := h.shardOf(key)
	s.mu.Lock()
	for {
		l, ok := s.tryLock(tx, key, s.cache[key])
		if ok {
			s.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return l, nil
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		s.mu.Unlock()
		if tx.wouldDeadlock(l) {
			tx.count(h, deadlocks, 1)
			return nil, errDeadlock
		}
		if timer == nil {
			tx.count(h, lockWaits, 1)
			timer = time.NewTimer(h.s.LockTimeout)
		}
		select {
		case <-wake:
		case <-timer.C:
			tx.waitingFor.Store(nil)
			tx.count(h, lockTimeouts, 1)
			return nil, errLockTimeout
		case <-ctx.Done():
			tx.waitingFor.Store(nil)
			timer.Stop()
			return nil, ctx.Err()
		}
		tx.waitingFor.Store(nil)
		s.mu.Lock()
	}
}

// idleLocks is how many free locks a home keeps in its lock tables, so
// that locking a key again costs no insertion and unlocking no deletion
// (a Go map reseeds itself, drawing random bits, when its last entry
// goes); beyond it, unlocked locks leave the table, but for those a
// cached instance points to (so the table holds at most the cache's
// size, the idle locks and the held ones). Each shard keeps its share.
const idleLocks = 4096

// unlock releases l, tx's lock on key, and wakes its waiters, which look
// for the lock again in the table. Called with s.mu held.
func (h *Home) unlock(s *shard, l *lock, key Key) {
	l.owner.Store(nil)
	if l.wake != nil {
		close(l.wake) // each waiter holds the channel it waits on
		l.wake = nil
		return // its waiters will take it: it stays in the table
	}
	if len(s.locks) > h.idleLocksPerShard && !l.pinned {
		delete(s.locks, key)
		s.freeLocks = append(s.freeLocks, l)
	}
}

// keySource hands out keys for KeySequence types: blocks from the table's
// own sequence on PostgreSQL, elsewhere counting up from the largest key
// (MySQL's AUTO_INCREMENT and SQLite's rowid follow explicit keys).
type keySource struct {
	mu        sync.Mutex
	next, end int64
	block     func(ctx context.Context) (first, n int64, err error)
}

func (k *keySource) take(ctx context.Context) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.next == k.end {
		first, n, err := k.block(ctx)
		if err != nil {
			return 0, err
		}
		k.next, k.end = first, first+n
	}
	k.next++
	return k.next - 1, nil
}

// keyBlock is how many sequence values one round trip reserves.
const keyBlock = 64

func (h *Home) initKeys(ctx context.Context, db *store.DB) error {
	if h.t.KeyGen != KeySequence {
		return nil
	}
	col := h.t.Key[0].Name
	if db.Dialect() == store.Postgres {
		s, err := db.Prepare(ctx, store.Statement{Name: h.t.Name + "-keys",
			SQL: "SELECT nextval(pg_get_serial_sequence('" + lowerIdent(h.t.Table) + "', '" + col + "')) FROM generate_series(1, " + itoa(keyBlock) + ")"})
		if err != nil {
			return err
		}
		h.keys.block = func(ctx context.Context) (int64, int64, error) {
			rows, err := db.Query(ctx, s)
			if err != nil {
				return 0, 0, err
			}
			defer rows.Close()
			var first, last, v int64
			n := int64(0)
			for rows.Next() {
				if err := rows.Scan(&v); err != nil {
					return 0, 0, err
				}
				if n == 0 {
					first = v
				}
				last = v
				n++
			}
			if err := rows.Err(); err != nil {
				return 0, 0, err
			}
			// The block is contiguous unless another session drew from
			// the sequence meanwhile; then use the contiguous tail only.
			if last-first+1 != n {
				return last, 1, nil
			}
			return first, n, nil
		}
		return nil
	}
	s, err := db.Prepare(ctx, store.Statement{Name: h.t.Name + "-max-key", SQL: "SELECT COALESCE(MAX(" + col + "), 0) FROM " + h.t.Table})
	if err != nil {
		return err
	}
	var maxKey int64
	if err := db.QueryRow(ctx, s).Scan(&maxKey); err != nil {
		return err
	}
	server, servers := int64(h.s.Server), int64(max(h.s.Servers, 1))
	h.keys.block = func(context.Context) (int64, int64, error) {
		first := maxKey + 1 + server*keyBlock
		maxKey += servers * keyBlock
		return first, keyBlock, nil
	}
	return nil
}
