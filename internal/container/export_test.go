package container

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
