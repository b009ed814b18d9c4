package runner

import (
	"context"
	"errors"
	"os"

	"github.com/tierbench/tierbench/internal/store"
)

// use is what a command does with its database, which decides its lock
// on it (store.Locker): a load or a run rebuilds or writes the data its
// checks then count, so it must have the database alone; a served tier,
// and a drive that checks the tier's database, only need it not to be
// rebuilt under them, so they share it (docs/decisions/0017).
type use string

const (
	useLoad  use = "load"
	useRun   use = "run"
	useServe use = "serve"
	useDrive use = "drive"
)

func (u use) mode() store.LockMode {
	if u == useLoad || u == useRun {
		return store.LockExclusive
	}
	return store.LockShared
}

// lock takes db's lock for u of workload, for as long as db is open. A
// tier that a run started as its child (run --tiers 2|3) serves the
// database its parent holds alone: the parent's lock covers it.
func lock(ctx context.Context, db *store.DB, u use, workload string) error {
	err := db.Lock(ctx, store.Me(string(u)+" "+workload, u.mode()))
	var le *store.LockedError
	if !errors.As(err, &le) || u != useServe || len(le.Holders) == 0 {
		return err
	}
	host, _ := os.Hostname()
	for _, h := range le.Holders {
		if h.PID != os.Getppid() || h.Host != host || h.Mode != store.LockExclusive {
			return err
		}
	}
	return nil
}
