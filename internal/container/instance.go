package container

import "time"

// Instance is an entity bean instance: pooled (no identity) or ready (an
// identity, with data when valid). While a transaction owns it, only that
// transaction's goroutine touches its data; its shard's mutex guards the
// rest.
type Instance struct {
	home *Home
	// shard is the part of home that key hashes to.
	shard   *shard
	key     Key
	vals    []Value
	version int64
	// dirty has a bit per field changed in the current transaction.
	dirty uint64
	// valid: vals hold the row's data (as of loadedAt).
	valid    bool
	loadedAt time.Time
	owner    *Tx
	// cached: the shard's cache maps key to this instance.
	cached bool
	// lock is the exclusive lock of key while the instance is cached and
	// has met it (see shard.lockOf).
	lock *lock
	// prev and next link the shard's idle ready instances, most recently
	// used first.
	prev, next *Instance
	created    bool
	removed    bool
	// stored: queueStores wrote the row back this transaction (which, under
	// optimistic concurrency, moves its version on).
	stored bool
	// writing: a private instance (not the cached one for its key) whose
	// write is being committed; see Home.writing.
	writing bool
	// stale: a private instance of the same identity committed a write
	// while this cached one was in a transaction, so its data must not
	// outlive that transaction.
	stale bool
	// loaded: its owner read its data from the database (a load or a
	// finder's row), which may be older than a write committed since the
	// owner began; see Home.lastWrite.
	loaded bool
}

// Key of the instance.
func (i *Instance) Key() Key { return i.key }

// Type is the instance's entity type.
func (i *Instance) Type() *Type { return i.home.t }

// Int, Float, String, Time and Bytes read field f (its index in
// Type.Fields), by the home's dispatch. Bytes are the instance's own: the
// caller must not change them.
func (i *Instance) Int(f int) int64 {
	if i.home.reflect {
		return reflectInt(&i.vals[f])
	}
	return i.vals[f].I
}

func (i *Instance) Float(f int) float64 {
	if i.home.reflect {
		return reflectFloat(&i.vals[f])
	}
	return i.vals[f].F
}

func (i *Instance) String(f int) string {
	if i.home.reflect {
		return reflectString(&i.vals[f])
	}
	return i.vals[f].S
}

func (i *Instance) Time(f int) time.Time {
	if i.home.reflect {
		return reflectTime(&i.vals[f])
	}
	return i.vals[f].T
}

func (i *Instance) Bytes(f int) []byte {
	if i.home.reflect {
		return reflectBytes(&i.vals[f])
	}
	return i.vals[f].B
}

// SetInt, SetFloat, SetString, SetTime and SetBytes change field f, by the
// home's dispatch; the change is stored at commit.
func (i *Instance) SetInt(f int, v int64) {
	if i.home.reflect {
		reflected(Int, &i.vals[f]).SetInt(v)
	} else {
		i.vals[f].I = v
	}
	i.dirty |= 1 << f
}

func (i *Instance) SetFloat(f int, v float64) {
	if i.home.reflect {
		reflected(Float, &i.vals[f]).SetFloat(v)
	} else {
		i.vals[f].F = v
	}
	i.dirty |= 1 << f
}

func (i *Instance) SetString(f int, v string) {
	if i.home.reflect {
		reflected(String, &i.vals[f]).SetString(v)
	} else {
		i.vals[f].S = v
	}
	i.dirty |= 1 << f
}

func (i *Instance) SetTime(f int, v time.Time) {
	if i.home.reflect {
		reflectSetTime(&i.vals[f], v)
	} else {
		i.vals[f].T = v
	}
	i.dirty |= 1 << f
}

func (i *Instance) SetBytes(f int, v []byte) {
	if i.home.reflect {
		reflected(Bytes, &i.vals[f]).SetBytes(v)
	} else {
		i.vals[f].B = v
	}
	i.dirty |= 1 << f
}

// lru is a shard's list of idle ready instances; the tail is evicted first.
type lru struct{ head, tail *Instance }

func (l *lru) pushFront(i *Instance) {
	i.prev, i.next = nil, l.head
	if l.head != nil {
		l.head.prev = i
	} else {
		l.tail = i
	}
	l.head = i
}

func (l *lru) remove(i *Instance) {
	if i.prev != nil {
		i.prev.next = i.next
	} else if l.head == i {
		l.head = i.next
	}
	if i.next != nil {
		i.next.prev = i.prev
	} else if l.tail == i {
		l.tail = i.prev
	}
	i.prev, i.next = nil, nil
}
