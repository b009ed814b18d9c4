package container

// LockTableSize is the number of locks, held or free, in h's lock table.
func LockTableSize(h *Home) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.locks)
}

// IdleLocks is how many free locks a lock table keeps.
const IdleLocks = idleLocks
