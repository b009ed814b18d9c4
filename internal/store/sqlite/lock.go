package sqlite

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/tierbench/tierbench/internal/store"
)

var _ store.Locker = (*Backend)(nil)

// Lock takes a file lock (flock) on PATH.lock beside the database, shared
// or exclusive, held by a descriptor of its own until Close: the kernel
// drops it when the process ends, however it ends. The file keeps the
// holders' descriptions, one a line: an exclusive holder rewrites it, a
// shared one adds its line. The file stays when the lock goes: removing it
// would let a process lock a new file while another holds the old one.
func (b *Backend) Lock(_ context.Context, me store.Holder) error {
	f, err := os.OpenFile(b.path+".lock", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if err := flock(f, me.Mode == store.LockExclusive); err != nil {
		defer f.Close()
		if !errors.Is(err, errWouldBlock) {
			return err
		}
		// The file says who held the lock, not who holds it now: a
		// shared lock taken here tells that the holders are shared.
		heldShared := me.Mode == store.LockExclusive && flock(f, false) == nil
		return &store.LockedError{Holders: fileHolders(f, heldShared)}
	}
	if me.Mode == store.LockExclusive {
		f.Truncate(0)
	}
	// Best effort, as the server backends' descriptions: the lock holds
	// whether or not it is described.
	f.WriteString(me.Line() + "\n")
	b.lockFile = f
	return nil
}

// fileHolders reads the holders' descriptions in a lock file: the shared
// holders', or the exclusive holder's. It leaves out the processes of this
// host that have ended (their lines stay until an exclusive holder
// rewrites the file) and all but the first line of a process.
func fileHolders(f *os.File, shared bool) []store.Holder {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return nil
	}
	host, _ := os.Hostname()
	seen := map[store.Holder]bool{}
	var holders []store.Holder
	for _, line := range strings.Split(string(b), "\n") {
		h, err := store.ParseHolder(line)
		if err != nil || (h.Mode == store.LockShared) != shared || (h.Host == host && !alive(h.PID)) {
			continue
		}
		if key := (store.Holder{PID: h.PID, Host: h.Host}); !seen[key] {
			seen[key] = true
			holders = append(holders, h)
		}
	}
	return holders
}
