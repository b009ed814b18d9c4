package container

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// Errors of container transactions. The lock timeout and the conflict are
// retryable (errors.Is store.ErrLockTimeout / store.ErrSerialization), so
// the driver runs the operation again.
var (
	// ErrNotFound: no instance has that identity (the EJB ObjectNotFoundException).
	ErrNotFound = errors.New("container: no such entity")
	// ErrLockTimeout: an exclusive lock wait passed the lock timeout.
	ErrLockTimeout = errLockTimeout
	// ErrConflict: an optimistic version check failed, or two
	// transactions created the same identity.
	ErrConflict = errConflict
	// ErrDeadlock: waiting for an exclusive lock would close a cycle of
	// transactions each waiting for the next.
	ErrDeadlock = errDeadlock

	errLockTimeout = store.Classified(store.ErrLockTimeout, errors.New("container: exclusive lock wait timed out"))
	errDeadlock    = store.Classified(store.ErrDeadlock, errors.New("container: exclusive locks taken in conflicting orders"))
	errConflict    = store.Classified(store.ErrSerialization, errors.New("container: concurrent update of the same entity"))
)

// querier is what a transaction's statements run on: the store
// transaction, or the session for autocommit reads.
type querier interface {
	QueryRow(ctx context.Context, s *store.Stmt, args ...any) store.Row
	QueryInto(ctx context.Context, rows *store.Rows, s *store.Stmt, args ...any) error
}

// Tx is a container-managed transaction on one server thread. A thread's
// Tx is reused: Begin it, use it, Commit or Rollback it.
type Tx struct {
	ctr  *Container
	sess *store.Session
	ctx  context.Context
	// primary is the thread's session on the primary database; sess is
	// it, or, for a read-only transaction, the session the store routed
	// it to (a read replica's: store.DB.ReadOnly).
	primary *store.Session
	// readOnly: the transaction only reads (see BeginReadOnly).
	readOnly bool
	stx      *store.Tx
	// stxBuf is the storage stx points to while the transaction has a
	// store transaction, reused from one to the next.
	stxBuf store.Tx
	active bool
	// seen is Container.writes when the transaction began: a write
	// numbered above it committed while the transaction ran.
	seen int64

	enlisted []*Instance
	held     []heldLock
	// waitingFor is the exclusive lock the transaction waits for.
	waitingFor atomic.Pointer[lock]
	// checked lists the homes whose stores check a version this commit.
	checked []*Home
	// wrote: the commit stores, creates or removes an instance (set by
	// queueStores); a commit without writes skips what only writes need.
	wrote bool

	args []any
	dest []any
	// queuedArgs holds the arguments of the statements queued for the
	// commit, which point into the enlisted instances.
	queuedArgs []any
	key        Key
	rows       []Value // finder rows, scratch
	// rowsBuf is the result of the finder query being read.
	rowsBuf store.Rows
	keys    []Key
	// finderKey is the finder cache's name of a finder call's arguments,
	// and found FindOne's instances, scratch.
	finderKey []byte
	found     []*Instance
	// counts are the thread's counts per type (Home.index).
	counts []threadCounts
	// published is the commit's writes for the peers, reused; announced:
	// its synchronous part was announced (see coherence.go).
	published Writes
	announced bool
	// awaiting: the announcement is published and its replies are to be
	// awaited after the database commit (settleWithPeers).
	awaiting bool
	// warming: the transaction is the warm-up's (Container.Warm), which
	// claims no type (see claimFor).
	warming bool
	// hitsSinceCheck and backVals serve the sampled read-backs.
	hitsSinceCheck int
	backVals       []Value
	// synced: the transaction has made a round trip to the shared cache,
	// so its near-cache hits are current (see readShared); sharedIDs is
	// invalidateShared's scratch.
	synced    bool
	sharedIDs []SharedID
}

type heldLock struct {
	h   *Home
	key Key
	l   *lock
	// released: finish has unlocked it with its instance.
	released bool
}

// Begin starts a read-write transaction on server thread thread (see
// store.DB.Thread).
func (c *Container) Begin(ctx context.Context, thread int) (*Tx, error) {
	return c.begin(ctx, thread, false)
}

// BeginReadOnly starts a transaction that only reads: it takes no locking
// reads, at READ COMMITTED its statements run without BEGIN and COMMIT,
// and the store may run it on a read replica (store.DB.ReadOnly).
func (c *Container) BeginReadOnly(ctx context.Context, thread int) (*Tx, error) {
	return c.begin(ctx, thread, true)
}

func (c *Container) begin(ctx context.Context, thread int, readOnly bool) (*Tx, error) {
	tx := c.thread(thread)
	if tx.active {
		return nil, fmt.Errorf("container: thread %d began a transaction inside another", thread)
	}
	tx.ctx, tx.readOnly, tx.active, tx.seen = ctx, readOnly, true, c.writes.Load()
	tx.sess = tx.primary
	if readOnly && c.replicas {
		tx.sess = c.db.ReadOnly(ctx, thread)
	}
	if !readOnly && (c.db.SingleWriter() || c.db.TableLocks()) {
		// Take the database's writer lock (or its tables' locks) before
		// any of the container's: the other order lets two transactions
		// deadlock across the two.
		err := tx.storeTx()
		if err == nil {
			err = tx.stx.Start(ctx)
		}
		if err != nil {
			// Rolled back, not just finished: a store transaction left
			// open would keep the writer lock for ever.
			tx.Rollback()
			return nil, err
		}
	}
	return tx, nil
}

// reader is what a read of h runs on: the store transaction, begun on
// first need, or the session itself (autocommit) when the read needs no
// database transaction: at READ COMMITTED (or on SQLite), before the
// transaction has begun, for a read that takes no database lock. Under
// exclusive and optimistic concurrency the container isolates its
// transactions itself, so their reads go out alone and the database
// transaction carries only the writes, sent with the COMMIT.
func (tx *Tx) reader(h *Home) (querier, error) {
	if tx.stx == nil && tx.ctr.autocommitReads && !tx.lockingReads(h) {
		return tx.sess, nil
	}
	if err := tx.storeTx(); err != nil {
		return nil, err
	}
	return tx.stx, nil
}

func (tx *Tx) storeTx() error {
	if tx.stx != nil {
		return nil
	}
	if err := tx.sess.BeginReusing(tx.ctx, &tx.stxBuf); err != nil {
		return err
	}
	tx.stx = &tx.stxBuf
	return nil
}

// lockingReads: under database concurrency a read-write transaction loads
// instances of updated types with a locking read (SELECT … FOR UPDATE), so
// the database, not the container, keeps two transactions from both
// changing what they read. Types the workload never updates cannot lose
// an update and are read without locks (fewer waits and deadlocks).
func (tx *Tx) lockingReads(h *Home) bool {
	return !tx.readOnly && (h.s.Concurrency == Database || h.clusterLocks) && h.t.Updated && tx.ctr.db.Dialect() != store.SQLite
}

func (tx *Tx) enlistedOf(h *Home, key Key) *Instance {
	for _, i := range tx.enlisted {
		if i.home == h && i.key == key && !i.removed {
			return i
		}
	}
	return nil
}

// wouldDeadlock records that tx waits for l and reports whether that
// closes a cycle: l's owner waits for a lock whose owner waits … for a lock
// tx holds. Checks run one at a time, so of the transactions forming a
// cycle the last to wait sees it (owners change only by release, which
// cannot create one).
func (tx *Tx) wouldDeadlock(l *lock) bool {
	c := tx.ctr
	c.waits.Lock()
	defer c.waits.Unlock()
	tx.waitingFor.Store(l)
	for next, hops := l, 0; next != nil && hops <= len(c.threads)+1; hops++ {
		owner := next.owner.Load()
		if owner == nil {
			return false
		}
		if owner == tx {
			tx.waitingFor.Store(nil)
			return true
		}
		next = owner.waitingFor.Load()
	}
	return false
}

// holds reports whether tx holds the exclusive lock on key.
func (tx *Tx) holds(h *Home, key Key) bool {
	for _, l := range tx.held {
		if l.h == h && l.key == key {
			return true
		}
	}
	return false
}

// lock takes the exclusive lock on key, once per transaction.
func (tx *Tx) lock(h *Home, key Key) error {
	if tx.holds(h, key) {
		return nil
	}
	l, err := h.acquire(tx.ctx, tx, key)
	if err != nil {
		return err
	}
	tx.held = append(tx.held, heldLock{h: h, key: key, l: l})
	return nil
}

// take gets a ready instance for key, owned by tx and enlisted: the cached
// one if it is idle, else a new one (cached if there is room, private
// otherwise). fresh: its data can be used without a load.
func (tx *Tx) take(h *Home, key Key) (i *Instance, fresh bool) {
	s := h.shardOf(key)
	s.mu.Lock()
	return tx.takeHeld(h, s, key, s.cache[key])
}

// takeHeld is take, called with s.mu, key's shard's, held, and i the
// shard's cached instance of key or nil; it releases s.mu.
func (tx *Tx) takeHeld(h *Home, s *shard, key Key, i *Instance) (_ *Instance, fresh bool) {
	// A find that could be served from memory (the first, without an
	// instance cached, too) claims the type, so that the peers' answers
	// are in by the next (decision 0044).
	tx.claimFor(h)
	switch {
	case i != nil && i.owner == nil:
		s.idle.remove(i)
		// The bypass first: a read-write transaction across servers
		// must not make the type claim its peers' commits (fresh would).
		fresh = !tx.bypassesCache(h) && h.fresh(i, time.Now)
		if !fresh && h.expired(i) {
			tx.count(h, refreshes, 1)
		}
	case i != nil:
		// Another transaction owns it: this one gets its own instance and
		// the database arbitrates (database, optimistic).
		i = h.activate(s, key)
		tx.count(h, activations, 1)
	default:
		i = h.activate(s, key)
		tx.count(h, activations, 1)
		if h.makeRoom(s) {
			s.cache[key] = i
			i.cached = true
		}
	}
	i.owner = tx
	s.mu.Unlock()
	tx.enlisted = append(tx.enlisted, i)
	return i, fresh
}

// drop undoes take for an instance that could not be loaded.
func (tx *Tx) drop(i *Instance) {
	tx.enlisted = tx.enlisted[:len(tx.enlisted)-1]
	s := i.shard
	s.mu.Lock()
	i.home.passivate(i)
	s.mu.Unlock()
}

// Find returns the instance with the key, ErrNotFound if there is none.
// It counts the outcome of its find (see Stats).
func (tx *Tx) Find(h *Home, key Key) (*Instance, error) {
	if i := tx.enlistedOf(h, key); i != nil {
		tx.count(h, txHits, 1)
		return i, nil
	}
	if h.s.Concurrency == Exclusive && !tx.holds(h, key) {
		// The common case, a free lock, takes the lock and the instance
		// under one hold of the shard's mutex.
		s := h.shardOf(key)
		s.mu.Lock()
		cached := s.cache[key]
		if l, ok := s.tryLock(tx, key, cached); ok {
			tx.held = append(tx.held, heldLock{h: h, key: key, l: l})
			i, fresh := tx.takeHeld(h, s, key, cached)
			return tx.loadUnlessFresh(h, i, fresh, true)
		}
		s.mu.Unlock()
		if err := tx.lock(h, key); err != nil {
			return nil, err
		}
	}
	return tx.takeAndLoad(h, key, true)
}

// takeAndLoad takes the instance for key and loads it unless its cached
// data is fresh. find: under BMP, run the find (key) query first.
func (tx *Tx) takeAndLoad(h *Home, key Key, find bool) (*Instance, error) {
	i, fresh := tx.take(h, key)
	return tx.loadUnlessFresh(h, i, fresh, find)
}

// loadUnlessFresh loads i, just taken, unless its data is fresh, and
// counts the outcome of its find: a cache hit, a load or not found (any
// other error is no find).
func (tx *Tx) loadUnlessFresh(h *Home, i *Instance, fresh, find bool) (*Instance, error) {
	if fresh {
		tx.count(h, hits, 1)
		if h.readBack {
			if err := tx.readBack(i); err != nil {
				tx.drop(i)
				return nil, err
			}
		}
		return i, nil
	}
	if err := tx.load(i, find); err != nil {
		tx.drop(i)
		if errors.Is(err, ErrNotFound) {
			tx.count(h, missing, 1)
		}
		return nil, err
	}
	return i, nil
}

// load reads i's row: under BMP a find (the key) and a load (the fields)
// are two queries, under CMP one. find false skips the BMP find, for keys
// a finder has just returned.
func (tx *Tx) load(i *Instance, find bool) error {
	h, sql := i.home, i.home.sql
	shared, epoch := tx.sharesState(h), int64(0)
	if shared {
		hit, e, err := tx.readShared(i)
		if hit || err != nil {
			return err
		}
		epoch = e
	}
	q, err := tx.reader(h)
	if err != nil {
		return err
	}
	locking := tx.lockingReads(h)
	tx.args = h.t.keyArgs(&i.key, tx.args[:0])
	if h.s.Persistence != CMP && find {
		find := sql.exists
		if locking {
			find, locking = sql.existsLocking, false
		}
		tx.dest = h.t.keyDest(&tx.key, tx.dest[:0])
		if err := q.QueryRow(tx.ctx, find, tx.args...).Scan(tx.dest...); err != nil {
			return notFound(err)
		}
	}
	load := sql.load
	if locking {
		load = sql.loadLocking
	}
	tx.dest = tx.dest[:0]
	for f, c := range h.t.Fields {
		tx.dest = append(tx.dest, h.dest(c.Kind, &i.vals[f]))
	}
	if h.t.Version != "" {
		tx.dest = append(tx.dest, &i.version)
	}
	if err := q.QueryRow(tx.ctx, load, tx.args...).Scan(tx.dest...); err != nil {
		return notFound(err)
	}
	i.valid, i.loaded, i.loadedAt = true, true, h.stamp()
	tx.count(h, loads, 1)
	if shared {
		return tx.fillShared(i, q, epoch)
	}
	return nil
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

// FindOne runs a single-instance finder; ErrNotFound when no row matches.
// An argument may be a value or a pointer to one (*int64, *string, …):
// a caller on a hot path keeps its arguments in a reused []any of
// pointers, as boxing an int64 or a string into an interface allocates.
func (tx *Tx) FindOne(h *Home, finder string, args ...any) (*Instance, error) {
	found, err := tx.find(h, finder, tx.found[:0], args)
	tx.found = found
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, ErrNotFound
	}
	return found[0], nil
}

// FindMany runs a collection finder, appending the instances to buf.
func (tx *Tx) FindMany(h *Home, finder string, buf []*Instance, args ...any) ([]*Instance, error) {
	return tx.find(h, finder, buf, args)
}

func (tx *Tx) find(h *Home, name string, buf []*Instance, args []any) ([]*Instance, error) {
	f := h.sql.finders[name]
	if f == nil {
		return buf, fmt.Errorf("container: %s has no finder %q", h.t.Name, name)
	}
	cached, gen := false, uint64(0)
	tx.claimFor(h)
	if h.finders != nil && h.finders.finders[name] != nil && !tx.writes(h) && !tx.bypassesCache(h) && h.servesFromMemory() {
		// The transaction's own writes of the type are not in any cached
		// result (nor in the database's until it commits): it asks the
		// database, as without the cache.
		tx.finderKey, cached = appendArgsKey(tx.finderKey[:0], args)
	}
	if cached {
		refresh := time.Duration(0)
		if h.s.CommitOption == OptionD {
			refresh = h.s.Refresh
		}
		if keys, ok := h.finders.lookup(name, tx.finderKey, refresh, h.stamp()); ok {
			tx.count(h, finderHits, 1)
			return tx.resolveKeys(h, keys, buf)
		}
		tx.count(h, finderMisses, 1)
		gen = h.finders.generation()
	}
	// Across servers, an exclusive type's finder reads its rows without
	// the database's locks: its instances are then locked (the
	// container's lock first, as everywhere under exclusive) and loaded
	// with a locking read; a locking finder would take the database's
	// lock before the container's, and two transactions of one server
	// would wait for each other across the two until the lock timeout.
	locking := tx.lockingReads(h) && !h.clusterLocks
	if h.s.Persistence != CMP {
		// BMP: the finder returns keys; each instance is then loaded on
		// its own: N+1 queries (none for instances cached with fresh data).
		keys := f.keys
		if locking {
			keys = f.keysLocking
		}
		if err := tx.readRows(h, keys, args, false); err != nil {
			return buf, err
		}
		if cached {
			h.finders.store(name, string(tx.finderKey), gen, tx.keys, h.stamp())
		}
		return tx.resolveKeys(h, tx.keys, buf)
	}
	rows := f.rows
	if locking {
		rows = f.rowsLocking
	}
	seen := h.lastWrite.Load()
	if err := tx.readRows(h, rows, args, true); err != nil {
		return buf, err
	}
	if cached {
		h.finders.store(name, string(tx.finderKey), gen, tx.keys, h.stamp())
	}
	width := h.width()
	// Each row is a find of its instance, as BMP's keys are, and the call
	// itself none: fromRow counts each row's outcome (see Stats).
	for n, k := range tx.keys {
		i, err := tx.fromRow(h, k, tx.rows[n*width:(n+1)*width], seen)
		if err != nil {
			return buf, err
		}
		if i != nil {
			buf = append(buf, i)
		}
	}
	return buf, nil
}

// resolveKeys finds the instances of keys a finder returned (BMP's key
// query, or the finder cache), each on its own, appending them to buf; a
// key whose row is gone since is passed over.
func (tx *Tx) resolveKeys(h *Home, keys []Key, buf []*Instance) ([]*Instance, error) {
	// Each key is found on its own, its outcome counted as Find counts it.
	for _, k := range keys {
		i := tx.enlistedOf(h, k)
		if i != nil {
			tx.count(h, txHits, 1) // as Find counts it
		} else {
			var err error
			if h.s.Concurrency == Exclusive {
				err = tx.lock(h, k)
			}
			if err == nil {
				i, err = tx.takeAndLoad(h, k, false)
			}
			if errors.Is(err, ErrNotFound) {
				continue // removed since the finder ran
			}
			if err != nil {
				return buf, err
			}
		}
		buf = append(buf, i)
	}
	return buf, nil
}

// writes reports whether the transaction creates, removes or changes an
// instance of h.
func (tx *Tx) writes(h *Home) bool {
	for _, i := range tx.enlisted {
		if i.home == h && (i.created || i.removed || i.dirty != 0) {
			return true
		}
	}
	return false
}

// width is the number of values a row of the type carries: its fields and
// the version.
func (h *Home) width() int {
	if h.t.Version != "" {
		return len(h.t.Fields) + 1
	}
	return len(h.t.Fields)
}

// readRows reads a finder's result into tx.keys (and, with fields, tx.rows)
// before any instance is resolved, so no lock is awaited with rows open.
func (tx *Tx) readRows(h *Home, s *store.Stmt, args []any, fields bool) error {
	tx.keys, tx.rows = tx.keys[:0], tx.rows[:0]
	q, err := tx.reader(h)
	if err != nil {
		return err
	}
	rows := &tx.rowsBuf
	if err := q.QueryInto(tx.ctx, rows, s, args...); err != nil {
		return err
	}
	defer rows.Close()
	width := h.width()
	for rows.Next() {
		tx.keys = append(tx.keys, Key{})
		k := &tx.keys[len(tx.keys)-1]
		tx.dest = h.t.keyDest(k, tx.dest[:0])
		if fields {
			base := len(tx.rows)
			for range width {
				tx.rows = append(tx.rows, Value{})
			}
			row := tx.rows[base:]
			for f, c := range h.t.Fields {
				tx.dest = append(tx.dest, h.dest(c.Kind, &row[f]))
			}
			if h.t.Version != "" {
				tx.dest = append(tx.dest, &row[len(h.t.Fields)].I)
			}
		}
		if err := rows.Scan(tx.dest...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// fromRow resolves a finder row (CMP) to an instance: already enlisted,
// cached with valid data, or loaded from the row itself; nil if, loaded
// again, its row is gone since the finder ran. seen is h.lastWrite before
// the finder's query ran. It counts the outcome of the row's find.
func (tx *Tx) fromRow(h *Home, k Key, row []Value, seen int64) (*Instance, error) {
	if i := tx.enlistedOf(h, k); i != nil {
		tx.count(h, txHits, 1) // as Find counts it
		return i, nil
	}
	if h.s.Concurrency == Exclusive {
		if err := tx.lock(h, k); err != nil {
			return nil, err
		}
		// The row was read before the lock was held: if a write to the
		// type committed since, it may be older than the database, and
		// the instance is loaded again under the lock; across servers,
		// where another server's write leaves lastWrite alone until its
		// notice arrives, a read-write transaction always loads it again
		// (with a locking read).
		if h.lastWrite.Load() != seen || tx.bypassesCache(h) {
			i, err := tx.takeAndLoad(h, k, false)
			if errors.Is(err, ErrNotFound) {
				return nil, nil // removed since the finder ran, as resolveKeys passes it over
			}
			return i, err
		}
	}
	i, fresh := tx.take(h, k)
	if fresh {
		tx.count(h, hits, 1)
	} else {
		copy(i.vals, row[:len(h.t.Fields)])
		if h.t.Version != "" {
			i.version = row[len(h.t.Fields)].I
		}
		i.valid, i.loaded, i.loadedAt = true, true, h.stamp()
		tx.count(h, loads, 1)
	}
	return i, nil
}

// Create makes a new instance. Its key is given, or allocated for a
// sequence-keyed type (key is then ignored). Set its fields before Commit,
// which inserts it.
func (tx *Tx) Create(h *Home, key Key) (*Instance, error) {
	if tx.readOnly {
		return nil, fmt.Errorf("container: create of %s in a read-only transaction", h.t.Name)
	}
	if h.t.KeyGen == KeySequence {
		k, err := h.keys.take(tx.ctx)
		if err != nil {
			return nil, err
		}
		key = Key{A: k}
	} else if h.s.Concurrency == Exclusive {
		if err := tx.lock(h, key); err != nil {
			return nil, err
		}
	}
	s := h.shardOf(key)
	s.mu.Lock()
	i := h.activate(s, key)
	if s.cache[key] == nil && h.makeRoom(s) {
		s.cache[key] = i
		i.cached = true
	}
	// The row is inserted without its version column, which starts at the
	// column's default, 0.
	i.owner, i.valid, i.created, i.loadedAt, i.version = tx, true, true, h.stamp(), 0
	s.mu.Unlock()
	tx.count(h, creates, 1)
	tx.enlisted = append(tx.enlisted, i)
	return i, nil
}

// Remove deletes i at commit.
func (tx *Tx) Remove(i *Instance) {
	i.removed = true
	tx.count(i.home, removes, 1)
}

// Commit stores what the persistence strategies say, commits, and applies
// each type's commit option. On error the transaction is rolled back.
func (tx *Tx) Commit() error {
	if err := tx.queueStores(); err != nil {
		tx.Rollback()
		return err
	}
	var err error
	if tx.wrote {
		tx.announceWrites()
		tx.finderWrites(true)
		tx.mirrorWrites(true, false)
		err = tx.announceToPeers()
	}
	if tx.stx != nil {
		if err == nil {
			err = tx.stx.Commit(tx.ctx)
		} else {
			tx.stx.Rollback(tx.ctx)
		}
	}
	if tx.wrote {
		tx.finderWrites(false)
		tx.mirrorWrites(false, err == nil)
		tx.settleWithPeers(err == nil)
	}
	if err != nil {
		err = tx.conflict(err)
		tx.finish(false)
		return err
	}
	if !tx.wrote {
		tx.finish(true)
		return nil
	}
	var write int64 // the transaction's number among committed writes, taken once
	for _, i := range tx.enlisted {
		if i.stored && i.home.sql.optimistic {
			i.version++ // as the store's SET version = version + 1 did
		}
		if h := i.home; h.numbersWrites && (i.stored || i.created || i.removed) {
			if write == 0 {
				write = tx.ctr.writes.Add(1)
			}
			h.noteWrite(write) // before finish releases the instances and locks
		}
	}
	err = tx.invalidateShared() // the write is stored whatever it returns
	tx.finish(true)
	return err
}

// announceWrites tells the homes of caching types which private instances
// are about to commit a write, before the database commits it: from then
// on no find is served from the cached instance of that identity, so no
// transaction reads data older than what is being committed.
func (tx *Tx) announceWrites() {
	for _, i := range tx.enlisted {
		h := i.home
		if i.cached || !h.s.CommitOption.caches() || !(i.stored || i.removed || i.created) {
			continue
		}
		i.shard.mu.Lock()
		h.beginWrite(i)
		i.shard.mu.Unlock()
	}
}

// finderWrites invalidates the finder cache entries the transaction's
// writes can change: announcing them before the database commits (they
// are then in flight, and no result read meanwhile is kept), settling
// them after, whatever the commit's outcome.
func (tx *Tx) finderWrites(announce bool) {
	for _, i := range tx.enlisted {
		h := i.home
		if h.finders == nil || !(i.stored || i.created || i.removed) || (i.created && i.removed) {
			continue
		}
		if n := h.finders.write(i, announce); n > 0 {
			tx.count(h, finderInvalidations, int64(n))
		}
	}
}

// conflict turns a failed version check, or a duplicate of an identity
// this transaction created, into ErrConflict, counted on the homes
// involved.
func (tx *Tx) conflict(err error) error {
	switch {
	case errors.Is(err, store.ErrStale):
		for _, h := range tx.checked {
			tx.count(h, conflicts, 1)
		}
		return fmt.Errorf("%w (%v)", errConflict, err)
	case errors.Is(err, store.ErrUniqueViolation):
		for _, i := range tx.enlisted {
			if i.created {
				tx.count(i.home, conflicts, 1)
				return fmt.Errorf("%w (%v)", errConflict, err)
			}
		}
	}
	return err
}

// queueStores queues the inserts, stores and deletes of the enlisted
// instances, to go out with the COMMIT. Their arguments are cut from
// tx.queuedArgs, which the transaction reuses.
func (tx *Tx) queueStores() error {
	tx.checked = tx.checked[:0]
	tx.wrote = false
	for _, i := range tx.enlisted {
		h := i.home
		start := len(tx.queuedArgs)
		tx.wrote = tx.wrote || i.created || i.removed
		switch {
		case i.removed && i.created:
		case i.removed:
			tx.queuedArgs = h.t.keyArgs(&i.key, tx.queuedArgs)
			if err := tx.queue(h, h.sql.del, i, start); err != nil {
				return err
			}
		case i.created:
			tx.queuedArgs = h.t.keyArgs(&i.key, tx.queuedArgs)
			for f, c := range h.t.Fields {
				tx.queuedArgs = append(tx.queuedArgs, h.arg(c.Kind, &i.vals[f]))
			}
			if err := tx.storeTx(); err != nil {
				return err
			}
			tx.stx.Queue(h.sql.insert, tx.argsFrom(start)...)
		case i.dirty != 0 && (h.s.Concurrency == ReadOnly || tx.readOnly):
			return fmt.Errorf("container: %s %v changed, but it is read-only here", h.t.Name, i.key)
		case h.s.Concurrency == ReadOnly || tx.readOnly:
		case i.dirty != 0 || h.s.Persistence == BMP:
			mask := i.dirty
			s := h.sql.updateAll
			if h.s.Persistence != BMP {
				var err error
				if s, err = h.sql.update(tx.ctx, mask); err != nil {
					return err
				}
			} else {
				mask = ^uint64(0)
			}
			for f, c := range h.t.Fields {
				if mask&(1<<f) != 0 {
					tx.queuedArgs = append(tx.queuedArgs, h.arg(c.Kind, &i.vals[f]))
				}
			}
			tx.queuedArgs = h.t.keyArgs(&i.key, tx.queuedArgs)
			if err := tx.queue(h, s, i, start); err != nil {
				return err
			}
			i.stored, tx.wrote = true, true
			tx.count(h, stores, 1)
		}
	}
	return nil
}

// argsFrom is the arguments queued since start, capped so that appending
// to tx.queuedArgs never writes into them (a grown arena leaves them in the
// old array, which the queue still holds).
func (tx *Tx) argsFrom(start int) []any {
	n := len(tx.queuedArgs)
	return tx.queuedArgs[start:n:n]
}

// queue queues s with the arguments queued since start, plus the version
// check under optimistic concurrency.
func (tx *Tx) queue(h *Home, s *store.Stmt, i *Instance, start int) error {
	if err := tx.storeTx(); err != nil {
		return err
	}
	if h.sql.optimistic {
		// The version moves on only after the commit (Commit), so the
		// pointer reads the version the instance was read at.
		tx.queuedArgs = append(tx.queuedArgs, &i.version)
		tx.stx.QueueExpect(s, 1, tx.argsFrom(start)...)
		tx.checked = append(tx.checked, h)
	} else {
		tx.stx.Queue(s, tx.argsFrom(start)...)
	}
	return nil
}

// Rollback undoes the transaction: nothing it did is stored, and the data
// of its instances is forgotten.
func (tx *Tx) Rollback() {
	if !tx.active {
		return
	}
	if tx.stx != nil {
		tx.stx.Rollback(tx.ctx)
	}
	tx.finish(false)
}

// finish releases the instances and the locks and readies tx for reuse.
// An instance's lock is released with it, under the same hold of its
// shard's mutex (after it, so that the next owner of the lock finds the
// instance idle); locks without an instance (a find that failed) after.
func (tx *Tx) finish(committed bool) {
	for _, i := range tx.enlisted {
		h := i.home
		// The data this transaction read is kept only if no write of the
		// type committed after it began; what it wrote is the newest.
		outdated := i.loaded && !i.stored && !i.created && h.lastWrite.Load() > tx.seen
		// Once released, i may be passivated into the pool and taken from
		// there by another shard's thread at once: only its key and shard,
		// read before, are used after.
		s, key := i.shard, i.key // the shard of the lock on key too
		s.mu.Lock()
		h.release(i, committed, outdated)
		for n := range tx.held {
			if l := &tx.held[n]; l.h == h && l.key == key && !l.released {
				h.unlock(s, l.l, l.key)
				l.released = true
			}
		}
		s.mu.Unlock()
	}
	for _, l := range tx.held {
		if !l.released {
			s := l.h.shardOf(l.key)
			s.mu.Lock()
			l.h.unlock(s, l.l, l.key)
			s.mu.Unlock()
		}
	}
	clear(tx.enlisted)
	clear(tx.found)
	clear(tx.queuedArgs)
	tx.queuedArgs = tx.queuedArgs[:0]
	tx.enlisted, tx.held, tx.found = tx.enlisted[:0], tx.held[:0], tx.found[:0]
	tx.stx, tx.active, tx.synced, tx.warming = nil, false, false, false
}
