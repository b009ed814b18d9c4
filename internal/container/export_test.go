package container

import "fmt"

// LockTableSize is the number of locks, held or free, in h's lock table.
func LockTableSize(h *Home) int {
	n := 0
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		n += len(s.locks)
		s.mu.Unlock()
	}
	return n
}

// Shards is how many shards h's identities are split into.
func Shards(h *Home) int { return len(h.shards) }

// IdleLocks is how many free locks a lock table keeps.
const IdleLocks = idleLocks

// CheckLockPins reports a cached instance whose pinned lock is not its
// identity's lock in the table (see shard.lockOf).
func CheckLockPins(h *Home) error {
	for n := range h.shards {
		s := &h.shards[n]
		s.mu.Lock()
		for key, i := range s.cache {
			if i.lock != nil && (s.locks[key] != i.lock || !i.lock.pinned) {
				s.mu.Unlock()
				return fmt.Errorf("cached %v points to a lock that is not its table entry", key)
			}
		}
		s.mu.Unlock()
	}
	return nil
}

// SkipSharedInvalidation switches c's commits' shared-cache invalidation
// off (off true) or on, to show the checks fail without it.
func SkipSharedInvalidation(c *Container, off bool) { c.skipSharedInvalidation = off }

// SkipReadMostlyInvalidation switches c's read-mostly invalidation (a
// writer's commits dropping its read-mostly types' cached data, in this
// process and across servers) off, to show the checks fail without it.
func SkipReadMostlyInvalidation(c *Container, off bool) { c.skipMirrors = off }
