package container

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The read-mostly pattern (Kounev & Buchmann, after BEA WebLogic): the
// rows of a type only occasionally updated are mapped twice, by a
// read-only type R, cached under option D and refreshed every interval,
// which the reads use, and by a read-write type W, through which the
// rare updates go. Declared with --entity R.read-mostly=W, W's commits
// invalidate R's cached instances of the identities they write: in this
// process the way a commit of R itself would (marked before the database
// commits, so that no find is served from memory meanwhile, then dropped,
// unmarked and numbered after, so that data read meanwhile is not kept),
// and across app servers over the coherence bus, as writes of R (R's
// coherence is then invalidate or invalidate-async). Without the link
// (a WebLogic read-only bean alone), R serves W's old data until its
// refresh interval runs out; the sampled read-backs count such reads.

// readMostlyDefaults gives a read-mostly type the pattern's settings
// where the user gave none of its own: option D, readonly concurrency
// (safeReadMostly refuses others) and, when the run's cache is empty
// (option C's usual 0), a cache of all its rows.
func readMostlyDefaults(s *Settings, t *Type, user []Setting) {
	if s.ReadMostly == "" {
		return
	}
	given := func(key string) bool {
		return slices.ContainsFunc(user, func(u Setting) bool { return u.Type == t.Name && u.Key == key })
	}
	if !given("commit-option") {
		s.CommitOption = OptionD
	}
	if !given("concurrency") {
		s.Concurrency = ReadOnly
	}
	if !given("cache") && s.Cache == (Size{}) {
		s.Cache = Size{Percent: 100, Relative: true}
	}
}

// safeReadMostly refuses the settings of a read-mostly type that the
// pattern cannot keep right: it is the read-only side, cached under D,
// and across app servers it needs a coherence mode that carries W's
// writes.
func (s Settings) safeReadMostly(t *Type) error {
	if s.ReadMostly == "" {
		return nil
	}
	decl := "--entity " + t.Name + ".read-mostly=" + s.ReadMostly
	switch {
	case t.Updated:
		return fmt.Errorf("%s: %s is not read-only: the workload updates it; the pattern reads through a read-only type and writes through %s", decl, t.Name, s.ReadMostly)
	case s.Concurrency != ReadOnly:
		return fmt.Errorf("%s: %s is the pattern's read-only type, but its concurrency is %s; leave it out or give readonly", decl, t.Name, s.Concurrency)
	case s.CommitOption != OptionD:
		return fmt.Errorf("%s: %s is cached under option D (refreshed every --refresh-interval) in the read-mostly pattern, not %s; leave commit-option out or give D", decl, t.Name, s.CommitOption)
	case s.Coherence == Shared:
		return fmt.Errorf("%s: coherence shared is not built for the read-mostly pattern; give %s coherence invalidate or invalidate-async", decl, t.Name)
	case s.Servers > 1 && !s.Coherence.Keeps():
		return fmt.Errorf("%s across %d app servers: the other servers' commits of %s must reach this server's cache of %s; give --coherence invalidate or invalidate-async (or --entity %s.coherence=…)",
			decl, s.Servers, s.ReadMostly, t.Name, t.Name)
	}
	return nil
}

// CheckReadMostly checks each read-mostly declaration against the other
// types: the writer is another type of the workload, over the same rows,
// that writes (not readonly) and is not itself read-mostly (no chains,
// no cycles).
func CheckReadMostly(types []*Type, settings map[string]Settings) error {
	for _, r := range types {
		name := settings[r.Name].ReadMostly
		if name == "" {
			continue
		}
		decl := "--entity " + r.Name + ".read-mostly=" + name
		i := slices.IndexFunc(types, func(t *Type) bool { return t.Name == name })
		if i < 0 {
			names := make([]string, len(types))
			for n, t := range types {
				names[n] = t.Name
			}
			return fmt.Errorf("%s: %s is not an entity type; the types are %s", decl, name, strings.Join(names, ", "))
		}
		w, ws := types[i], settings[name]
		switch {
		case w == r:
			return fmt.Errorf("%s: a type cannot be its own writer; name the read-write type over %s's rows", decl, r.Name)
		case w.Table != r.Table || !slices.Equal(w.Key, r.Key):
			return fmt.Errorf("%s: %s maps %s and %s maps %s: the read-only and the read-write type must map the same rows (one table, one key)",
				decl, r.Name, r.Table, w.Name, w.Table)
		case ws.ReadMostly != "":
			return fmt.Errorf("%s: %s is itself read-mostly (of %s); the writer must be a read-write type (no chains, no cycles)", decl, w.Name, ws.ReadMostly)
		case ws.Concurrency == ReadOnly:
			return fmt.Errorf("%s: %s has readonly concurrency, so nothing is written through it; give it database, exclusive or optimistic", decl, w.Name)
		}
	}
	return nil
}

// linkReadMostly connects each read-mostly home to its writer's
// (CheckReadMostly has accepted the declarations).
func (c *Container) linkReadMostly() {
	for _, r := range c.homes {
		if r.s.ReadMostly == "" {
			continue
		}
		w := c.Home(r.s.ReadMostly)
		w.mirrors = append(w.mirrors, r)
		c.mirrored = true
		r.readBack = true
		for _, f := range r.t.Finders {
			r.mirrorFinders = append(r.mirrorFinders, FinderEntry{Finder: f.Name, All: true})
		}
	}
}

// mirrorWrites applies the commit's writes of writer types to their
// read-mostly types in this container: announcing (before the database
// commits) it marks the identities as being written and drops their
// cached data, with every entry of the read-mostly type's finders;
// settling (after) it numbers the write, then drops and unmarks them, and
// counts a committed write's identities (writer_invalidations).
func (tx *Tx) mirrorWrites(announce, committed bool) {
	if !tx.ctr.mirrored || tx.ctr.skipMirrors {
		return
	}
	var write int64
	for _, i := range tx.enlisted {
		h := i.home
		if len(h.mirrors) == 0 || !(i.stored || i.created || i.removed) || (i.created && i.removed) {
			continue
		}
		for _, m := range h.mirrors {
			if !announce {
				// Numbered before the marks go, so that a transaction of m
				// that read the row before the commit does not keep it.
				if write == 0 {
					write = tx.ctr.writes.Add(1)
				}
				m.noteWrite(write)
			}
			s := m.shardOf(i.key)
			s.mu.Lock()
			if announce {
				s.writing[i.key]++
			} else if n := s.writing[i.key] - 1; n > 0 {
				s.writing[i.key] = n
			} else {
				delete(s.writing, i.key)
			}
			s.invalidateKey(i.key, nil)
			s.mu.Unlock()
			if m.finders != nil {
				m.finders.remote(m.mirrorFinders, announce, !announce)
			}
			if !announce && committed {
				tx.count(m, writerInvalidations, 1)
			}
		}
	}
}

// expired reports whether a cached instance's data is valid but older
// than option D's refresh interval: its find reloads it (a refresh).
func (h *Home) expired(i *Instance) bool {
	return h.s.CommitOption == OptionD && i.valid && time.Since(i.loadedAt) >= h.s.Refresh
}
