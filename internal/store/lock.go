package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// LockMode is how a process holds a database: a load or a run rebuilds or
// writes it and must have it alone; a served tier (and a drive that checks
// it) only needs it not to be rebuilt under it.
type LockMode int

const (
	LockShared LockMode = iota + 1
	LockExclusive
)

func (m LockMode) String() string {
	if m == LockExclusive {
		return "exclusive"
	}
	return "shared"
}

// Holder is a process that holds a database's lock, as another one that
// is refused it sees it.
type Holder struct {
	PID  int
	Host string
	// Started is when it took the lock.
	Started time.Time
	// What it does: "run stockonline", "serve rubis".
	What string
	Mode LockMode
	// Session is the server's id of the connection holding the lock
	// (PostgreSQL's backend pid, MariaDB's connection id), for a holder
	// whose own description could not be read.
	Session int64
}

// Me describes this process as a holder of mode, doing what.
func Me(what string, mode LockMode) Holder {
	host, _ := os.Hostname()
	return Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second), What: what, Mode: mode}
}

func (h Holder) String() string {
	if h.PID == 0 {
		return fmt.Sprintf("a session (server connection %d) that left no description (%s lock)", h.Session, h.Mode)
	}
	return fmt.Sprintf("tierbench %s (pid %d on host %s, since %s, %s lock)", h.What, h.PID, h.Host, h.Started.UTC().Format(time.RFC3339), h.Mode)
}

// Line is the holder as one line of text, as a lock file keeps it and
// ParseHolder reads it back.
func (h Holder) Line() string {
	return fmt.Sprintf("%s pid=%d host=%s started=%s what=%s", h.Mode, h.PID, h.Host, h.Started.UTC().Format(time.RFC3339), h.What)
}

// ParseHolder reads what Line wrote.
func ParseHolder(line string) (Holder, error) {
	var h Holder
	mode, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch mode {
	case "shared":
		h.Mode = LockShared
	case "exclusive":
		h.Mode = LockExclusive
	default:
		return h, fmt.Errorf("lock holder %q: no mode", line)
	}
	// what= comes last and may hold spaces.
	rest, h.What, _ = strings.Cut(rest, " what=")
	for _, kv := range strings.Fields(rest) {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "pid":
			_, err = fmt.Sscan(v, &h.PID)
		case "host":
			h.Host = v
		case "started":
			h.Started, err = time.Parse(time.RFC3339, v)
		}
		if err != nil {
			return h, fmt.Errorf("lock holder %q: %s: %v", line, k, err)
		}
	}
	if h.PID == 0 {
		return h, fmt.Errorf("lock holder %q: no pid", line)
	}
	return h, nil
}

// LockedError refuses a lock another process holds in a mode that
// conflicts with the one asked for.
type LockedError struct {
	DSN     DSN
	Want    LockMode
	Holders []Holder
}

func (e *LockedError) Error() string {
	held := make([]string, len(e.Holders))
	for i, h := range e.Holders {
		held[i] = h.String()
	}
	if len(held) == 0 {
		held = []string{"another process that could not be named"}
	}
	need := "needs the database alone"
	if e.Want == LockShared {
		need = "cannot share it with a load or a run"
	}
	return fmt.Sprintf("--db %s is in use by %s; this command %s: wait for that one to end, or give another database",
		e.DSN, strings.Join(held, "; "), need)
}

// ErrLocked is what errors.Is finds in a *LockedError.
var ErrLocked = errors.New("database in use")

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Locker is a backend that can lock its database against other tierbench
// processes. The lock is held on a connection (or file) of its own, not
// one of the pool's, until the backend closes, and dies with the process:
// a session lock with its connection, a file lock with its descriptor.
type Locker interface {
	// Lock takes the lock in me.Mode, or fails at once with a
	// *LockedError naming the holders when another process holds it in a
	// mode that conflicts.
	Lock(ctx context.Context, me Holder) error
}

// Lock locks the database for this process (see Locker) until Close. A
// fresh temporary SQLite file is this process's alone and needs none.
func (db *DB) Lock(ctx context.Context, me Holder) error {
	if db.dsn.Temp {
		return nil
	}
	l, ok := db.backend.(Locker)
	if !ok {
		return fmt.Errorf("--db %s: the %s backend cannot lock its database", db.dsn, db.dsn.Dialect)
	}
	err := l.Lock(ctx, me)
	var le *LockedError
	if errors.As(err, &le) {
		le.DSN, le.Want = db.dsn, me.Mode
		return le
	}
	if err != nil {
		return fmt.Errorf("--db %s: lock the database: %w", db.dsn, err)
	}
	return nil
}

// HolderTable is where the server backends keep the description of each
// lock holder, keyed by the server's id of its session: the lock itself
// (an advisory lock, GET_LOCK) carries none. A row whose session holds no
// lock any more is stale and never read; an exclusive holder clears them.
const HolderTable = `CREATE TABLE IF NOT EXISTS tierbench_lock (
	session BIGINT NOT NULL PRIMARY KEY,
	holder VARCHAR(512) NOT NULL)`
