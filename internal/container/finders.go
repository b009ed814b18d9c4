package container

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The finder cache: under commit option A (or D within its refresh
// interval), for a type only the container writes (exclusive, optimistic
// or readonly concurrency), a finder's result, the keys it returned for
// its arguments, is kept and answered from memory, as Hibernate's query
// cache and JBoss's finder cache do. Every create, remove and store of a
// column the finder's condition or order reads invalidates the entries it
// can change: for a finder whose parameters all compare a column for
// equality ("sub_accno = ? AND amount > 0"), the entry of the written
// instance's values; for any other, all the finder's entries.
//
// A result read from the database joins the cache only if no write of the
// type was announced or committed while it was read: a write is announced
// (its entries invalidated and marked in flight) before the database
// commits it, and settled (invalidated again, unmarked) after, so a result
// read in between, which may predate the write, is never kept, and no
// entry is served while a write that can change it is in flight.

// finderPlan is what the cache knows of a finder's condition.
type finderPlan struct {
	name string
	// params are the columns its ? parameters compare for equality, in
	// order; nil when some parameter is not an equality (then a write
	// invalidates all the finder's entries).
	params []column
	// reads are the fields (bit per field) the condition and the order
	// read: a store that changes none of them changes no result (creates
	// and removes change every finder's).
	reads uint64
	// cacheable: the condition is one the cache can plan.
	cacheable bool
}

// column is a key column (key: index among the key columns) or a field.
type column struct {
	key   bool
	index int
	kind  Kind
}

var (
	identRE     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	conditionRE = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|<>|!=|<=|>=|<|>)\s*(\?|[-0-9.]+|'[^']*')\s*$`)
)

// planFinder reads a finder's condition: conjunctions of "column op ?" or
// "column op literal". Anything else is not cacheable.
func planFinder(t *Type, f Finder) finderPlan {
	p := finderPlan{name: f.Name}
	col := func(name string) (column, bool) {
		ints := 0 // integer key columns map to Key.A, then Key.B
		for _, c := range t.Key {
			if strings.EqualFold(c.Name, name) {
				return column{key: true, index: ints, kind: c.Kind}, true
			}
			if c.Kind != String {
				ints++
			}
		}
		for i, c := range t.Fields {
			if strings.EqualFold(c.Name, name) {
				return column{index: i, kind: c.Kind}, true
			}
		}
		return column{}, false
	}
	read := func(c column) {
		if !c.key {
			p.reads |= 1 << c.index
		}
	}
	equalities := true
	where := strings.TrimSpace(f.Where)
	if where != "1 = 1" {
		for _, cond := range splitAnd(where) {
			m := conditionRE.FindStringSubmatch(cond)
			if m == nil {
				return p
			}
			c, ok := col(m[1])
			if !ok {
				return p
			}
			read(c)
			if m[3] == "?" {
				if m[2] == "=" {
					p.params = append(p.params, c)
				} else {
					equalities = false
				}
			}
		}
	}
	for _, ident := range identRE.FindAllString(f.OrderBy, -1) {
		switch strings.ToUpper(ident) {
		case "ASC", "DESC":
			continue
		}
		c, ok := col(ident)
		if !ok {
			return p
		}
		read(c)
	}
	if !equalities {
		p.params = nil
	}
	p.cacheable = true
	return p
}

// splitAnd splits a condition on its top-level ANDs (the conditions the
// cache plans have no parentheses or ORs).
func splitAnd(where string) []string {
	upper := strings.ToUpper(where)
	if strings.Contains(upper, " OR ") || strings.ContainsAny(where, "()") {
		return []string{"("} // not plannable
	}
	var out []string
	for {
		i := strings.Index(strings.ToUpper(where), " AND ")
		if i < 0 {
			return append(out, where)
		}
		out = append(out, where[:i])
		where = where[i+5:]
	}
}

// finderEntries are one finder's cached results.
type finderEntries struct {
	plan    finderPlan
	entries map[string]finderEntry
	// inflight counts, per entry, the writes announced and not settled
	// that can change it; all those that can change every entry.
	inflight map[string]int
	all      int
}

type finderEntry struct {
	keys []Key
	at   time.Time
}

// finderCache is a home's finder cache; nil for a type it does not serve.
type finderCache struct {
	mu      sync.Mutex
	finders map[string]*finderEntries
	// gen moves on every announced or settled write of the type: a result
	// read from the database joins only if it has not moved since.
	gen uint64
	// capacity bounds each finder's entries.
	capacity int
}

// finderCacheCapacity bounds a finder's entries when the ready cache's
// size gives no bound (a percentage of rows).
const finderCacheCapacity = 100_000

func newFinderCache(t *Type, s Settings) *finderCache {
	// A shared type's finder results are not shared: each server's would
	// miss the others' writes, so its finders ask the database.
	if !s.CommitOption.caches() || s.Concurrency == Database || s.Coherence == Shared || s.Cache.Of(math.MaxInt32) == 0 {
		return nil
	}
	c := &finderCache{finders: make(map[string]*finderEntries), capacity: finderCacheCapacity}
	for _, f := range t.Finders {
		if p := planFinder(t, f); p.cacheable {
			c.finders[f.Name] = &finderEntries{plan: p, entries: make(map[string]finderEntry), inflight: make(map[string]int)}
		}
	}
	if len(c.finders) == 0 {
		return nil
	}
	return c
}

// appendArgsKey appends the finder's arguments to b as an entry's name;
// false when an argument is of a type the cache does not compare (the
// call is then not cached). Appending to a buffer the transaction keeps
// spares the finder path an allocation per call.
func appendArgsKey(b []byte, args []any) ([]byte, bool) {
	for _, a := range args {
		switch v := a.(type) {
		case int:
			b = appendKeyInt(b, int64(v))
		case int32:
			b = appendKeyInt(b, int64(v))
		case int64:
			b = appendKeyInt(b, v)
		case string:
			b = appendKeyString(b, v)
		case float64:
			b = appendKeyFloat(b, v)
		case time.Time:
			b = appendKeyTime(b, v)
		// Pointers, which a caller passes to spare the boxing of a value
		// (see FindOne), name the value they point to.
		case *int:
			b = appendKeyInt(b, int64(*v))
		case *int32:
			b = appendKeyInt(b, int64(*v))
		case *int64:
			b = appendKeyInt(b, *v)
		case *string:
			b = appendKeyString(b, *v)
		case *float64:
			b = appendKeyFloat(b, *v)
		case *time.Time:
			b = appendKeyTime(b, *v)
		default:
			return b, false
		}
	}
	return b, true
}

func appendKeyInt(b []byte, v int64) []byte {
	return append(strconv.AppendInt(append(b, 'i'), v, 10), 0)
}

func appendKeyString(b []byte, v string) []byte {
	return append(append(append(strconv.AppendInt(append(b, 's'), int64(len(v)), 10), ':'), v...), 0)
}

func appendKeyFloat(b []byte, v float64) []byte {
	return append(strconv.AppendUint(append(b, 'f'), math.Float64bits(v), 16), 0)
}

func appendKeyTime(b []byte, v time.Time) []byte {
	return append(strconv.AppendInt(append(b, 't'), v.UnixNano(), 10), 0)
}

// instanceArgs is the entry name an instance's values give a finder whose
// parameters are all equalities: the name its arguments would have.
func instanceArgs(p *finderPlan, key Key, vals []Value) (string, bool) {
	var b []byte
	for _, c := range p.params {
		if c.key {
			switch {
			case c.kind == String:
				b = appendKeyString(b, key.S)
			case c.index == 0:
				b = appendKeyInt(b, key.A)
			default:
				b = appendKeyInt(b, key.B)
			}
			continue
		}
		v := &vals[c.index]
		switch c.kind {
		case Int:
			b = appendKeyInt(b, v.I)
		case Float:
			b = appendKeyFloat(b, v.F)
		case String:
			b = appendKeyString(b, v.S)
		case Time:
			b = appendKeyTime(b, v.T)
		default:
			return "", false
		}
	}
	return string(b), true
}

// lookup returns finder name's cached keys for args, if an entry is there,
// no write that can change it is in flight, and (refresh > 0) it is not
// older than refresh.
func (c *finderCache) lookup(name string, args []byte, refresh time.Duration, now time.Time) ([]Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.finders[name]
	// Indexing with string(args) does not allocate.
	if f == nil || f.all > 0 || f.inflight[string(args)] > 0 {
		return nil, false
	}
	e, ok := f.entries[string(args)]
	if !ok || (refresh > 0 && now.Sub(e.at) >= refresh) {
		return nil, false
	}
	return e.keys, true
}

// store keeps a result read from the database, unless a write moved gen
// since the read began (gen0) or one that can change it is in flight.
func (c *finderCache) store(name, args string, gen0 uint64, keys []Key, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.finders[name]
	if f == nil || c.gen != gen0 || f.all > 0 || f.inflight[args] > 0 {
		return false
	}
	if _, ok := f.entries[args]; !ok && len(f.entries) >= c.capacity {
		return false
	}
	f.entries[args] = finderEntry{keys: append([]Key(nil), keys...), at: now}
	return true
}

// generation is the cache's write count, taken before a finder reads the
// database.
func (c *finderCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// write invalidates what a write of instance i can change and, when
// announcing, marks it in flight; settling unmarks it. It returns how
// many entries it removed.
func (c *finderCache) write(i *Instance, announce bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	removed := 0
	c.touched(i, func(f *finderEntries, args string, all bool) {
		removed += f.invalidate(args, all, announce, !announce)
	})
	return removed
}

// touched calls fn with each finder entry a write of instance i can
// change: args names it, or all (args empty) says every entry of f.
func (c *finderCache) touched(i *Instance, fn func(f *finderEntries, args string, all bool)) {
	for _, f := range c.finders {
		if !i.created && !i.removed && i.dirty&f.plan.reads == 0 {
			continue // a store of columns the finder does not read
		}
		// Stores of the columns the parameters compare move the instance
		// between entries, and its old values are gone: all entries, as
		// for a finder with no entry name to aim at.
		moves := !i.created && !i.removed && i.dirty&paramFields(&f.plan) != 0
		args, named := "", false
		if f.plan.params != nil && !moves {
			args, named = instanceArgs(&f.plan, i.key, i.vals)
		}
		fn(f, args, !named)
	}
}

// invalidate removes the entry args (or all of f's), marks it in flight
// (mark) or unmarks it (unmark), and returns how many entries it removed.
// Called with the cache's mutex held.
func (f *finderEntries) invalidate(args string, all, mark, unmark bool) int {
	removed := 0
	if all {
		removed = len(f.entries)
		clear(f.entries)
		switch {
		case mark:
			f.all++
		case unmark:
			f.all--
		}
		return removed
	}
	if _, ok := f.entries[args]; ok {
		delete(f.entries, args)
		removed++
	}
	switch {
	case mark:
		f.inflight[args]++
	case unmark:
		if f.inflight[args]--; f.inflight[args] <= 0 {
			delete(f.inflight, args)
		}
	}
	return removed
}

// remote applies a peer's write: the entries it named are removed and,
// announcing, marked in flight, or unmarked (unmark).
func (c *finderCache) remote(entries []FinderEntry, announce, unmark bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, e := range entries {
		if f := c.finders[e.Finder]; f != nil {
			f.invalidate(e.Args, e.All, announce, unmark)
		}
	}
}

// clearAll removes every entry (the marks in flight stay: their writes
// will settle them).
func (c *finderCache) clearAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, f := range c.finders {
		clear(f.entries)
	}
}

// paramFields are the fields (bits) the finder's equality parameters read.
func paramFields(p *finderPlan) uint64 {
	var m uint64
	for _, c := range p.params {
		if !c.key {
			m |= 1 << c.index
		}
	}
	return m
}
