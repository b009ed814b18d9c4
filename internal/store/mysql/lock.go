package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

var (
	_ store.Locker = (*Backend)(nil)
	_ store.Locker = (*Cluster)(nil)
)

// sharedSlots bounds the processes that hold a database shared at once
// (served tiers, checking drives): each holds one slot.
const sharedSlots = 16

// Lock takes named locks (GET_LOCK), which are exclusive only, so a
// shared mode is built of two kinds (docs/decisions/0017): an exclusive
// holder holds the database's gate lock and sees no slot held; a shared
// holder holds one of sharedSlots slot locks and sees the gate free. Each
// takes its own lock before it looks at the other kind's, so of two that
// race at least one sees the other. The locks are held on a connection of
// its own outside the pool, and die with it.
func (b *Backend) Lock(ctx context.Context, me store.Holder) (err error) {
	b.lockConn, b.lockDB, err = lock(ctx, b.connector, me)
	return err
}

// Lock takes the lock on the shared work's node: GET_LOCK is not
// replicated by Galera, so two processes exclude each other only when
// their --db names the same first live node.
func (c *Cluster) Lock(ctx context.Context, me store.Holder) (err error) {
	n := c.shared.node()
	c.lockConn, c.lockDB, err = lock(ctx, n.connector, me)
	return err
}

func lock(ctx context.Context, connector driver.Connector, me store.Holder) (*sql.Conn, *sql.DB, error) {
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	fail := func(err error) (*sql.Conn, *sql.DB, error) {
		c.Close()
		db.Close()
		return nil, nil, err
	}
	// An idle session is ended after wait_timeout (8 hours by default),
	// which would drop the lock under a long run; this is the maximum.
	if _, err := c.ExecContext(ctx, "SET SESSION wait_timeout = 31536000"); err != nil {
		return fail(err)
	}
	var name string
	if err := c.QueryRowContext(ctx, "SELECT coalesce(DATABASE(), '')").Scan(&name); err != nil {
		return fail(err)
	}
	gate, slots := lockNames(name)
	var conflicts []any // the lock names whose holders refuse me
	var mine string
	if me.Mode == store.LockExclusive {
		conflicts = append([]any{gate}, slots...)
		mine = gate
		if !getLock(ctx, c, gate) {
			conflicts = []any{gate}
			mine = ""
		}
	} else {
		conflicts = []any{gate}
		for _, s := range slots {
			if getLock(ctx, c, s.(string)) {
				mine = s.(string)
				break
			}
		}
		if mine == "" {
			return fail(fmt.Errorf("%d processes hold the database shared already, the most there can be", sharedSlots))
		}
	}
	holders, err := lockHolders(ctx, c, conflicts)
	if err != nil {
		return fail(err)
	}
	if len(holders) > 0 {
		return fail(&store.LockedError{Holders: holders})
	}
	describe(ctx, c, me)
	return c, db, nil
}

// lockNames are the gate and the slots of database name. A lock's name
// is at most 64 characters: a long database name is hashed.
func lockNames(name string) (gate string, slots []any) {
	if len("tierbench:s00:")+len(name) > 64 {
		h := fnv.New64a()
		h.Write([]byte(name))
		name = fmt.Sprintf("%s~%016x", name[:32], h.Sum64())
	}
	for i := range sharedSlots {
		slots = append(slots, fmt.Sprintf("tierbench:s%02d:%s", i, name))
	}
	return "tierbench:x:" + name, slots
}

func getLock(ctx context.Context, c *sql.Conn, name string) bool {
	var got sql.NullInt64
	return c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got) == nil && got.Int64 == 1
}

// lockHolders lists the sessions other than this one holding any of names,
// described as they described themselves.
func lockHolders(ctx context.Context, c *sql.Conn, names []any) ([]store.Holder, error) {
	used := strings.Repeat(", IS_USED_LOCK(?)", len(names))[2:]
	ids := make([]sql.NullInt64, len(names))
	dest := make([]any, len(names))
	for i := range ids {
		dest[i] = &ids[i]
	}
	if err := c.QueryRowContext(ctx, "SELECT "+used, names...).Scan(dest...); err != nil {
		return nil, fmt.Errorf("read the lock's holders: %w", err)
	}
	var self int64
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&self); err != nil {
		return nil, err
	}
	var holders []store.Holder
	for i, id := range ids {
		if !id.Valid || id.Int64 == self {
			continue
		}
		h := store.Holder{Session: id.Int64, Mode: store.LockShared}
		if strings.HasPrefix(names[i].(string), "tierbench:x:") {
			h.Mode = store.LockExclusive
		}
		var line string
		// A missing table or row leaves the holder known by its session.
		if c.QueryRowContext(ctx, "SELECT holder FROM tierbench_lock WHERE session = ?", id.Int64).Scan(&line) == nil {
			if d, err := store.ParseHolder(line); err == nil {
				d.Session = h.Session
				h = d
			}
		}
		holders = append(holders, h)
	}
	return holders, nil
}

// describe leaves me's description for those the lock refuses; best
// effort, as in the PostgreSQL backend.
func describe(ctx context.Context, c *sql.Conn, me store.Holder) {
	clear := "DELETE FROM tierbench_lock WHERE session = CONNECTION_ID()"
	if me.Mode == store.LockExclusive {
		clear = "DELETE FROM tierbench_lock"
	}
	if _, err := c.ExecContext(ctx, store.HolderTable); err != nil {
		return
	}
	if _, err := c.ExecContext(ctx, clear); err != nil {
		return
	}
	c.ExecContext(ctx, "INSERT INTO tierbench_lock (session, holder) VALUES (CONNECTION_ID(), ?)", me.Line())
}

// unlock lets go of the locks, then closes their connection. Closing
// alone frees them only once the server has ended the session, after
// Close has returned, and a run that follows at once would be refused.
// A server that does not answer within unlockWait ends the session, and
// the locks with it, when it notices the closed socket.
func unlock(c *sql.Conn, db *sql.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), unlockWait)
	defer cancel()
	c.ExecContext(ctx, "DO RELEASE_ALL_LOCKS()")
	c.Close()
	db.Close()
}

const unlockWait = 5 * time.Second
