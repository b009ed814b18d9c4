package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tierbench/tierbench/internal/store"
)

var _ store.Locker = (*Backend)(nil)

// lockClass is the first key of tierbench's advisory locks ("tblk"); the
// second is a hash of the schema, since tests and users keep databases
// apart by schema (search_path), and advisory locks are already per
// database.
const lockClass = 0x74626c6b

// Lock takes an advisory lock, session-level, on a connection of its own
// outside the pool: the pool replaces connections, and the lock must live
// exactly as long as the process's hold on the database, dying with it.
func (b *Backend) Lock(ctx context.Context, me store.Holder) error {
	cfg := b.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "tierbench lock"
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	var schema string
	if err := c.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&schema); err != nil {
		c.Close(ctx)
		return err
	}
	h := fnv.New32a()
	h.Write([]byte(schema))
	key := int32(h.Sum32() & 0x7fffffff)
	try := "SELECT pg_try_advisory_lock($1, $2)"
	if me.Mode == store.LockShared {
		try = "SELECT pg_try_advisory_lock_shared($1, $2)"
	}
	var got bool
	if err := c.QueryRow(ctx, try, int32(lockClass), key).Scan(&got); err != nil {
		c.Close(ctx)
		return err
	}
	if !got {
		holders, err := lockHolders(ctx, c, key, me.Mode)
		c.Close(ctx)
		if err != nil {
			return err
		}
		return &store.LockedError{Holders: holders}
	}
	describe(ctx, c, me)
	b.lock = c
	return nil
}

// describe leaves me's description for those the lock refuses. It is
// best effort: a role that may not create the table still holds the lock,
// and those it refuses are told its session id instead.
func describe(ctx context.Context, c *pgx.Conn, me store.Holder) {
	clear := "DELETE FROM tierbench_lock WHERE session = pg_backend_pid()"
	if me.Mode == store.LockExclusive {
		// No one else holds the lock: every other row is stale.
		clear = "DELETE FROM tierbench_lock"
	}
	for range 2 { // two tiers creating the table at once: one fails, once
		_, err := c.Exec(ctx, store.HolderTable)
		if err == nil {
			if _, err = c.Exec(ctx, clear); err == nil {
				_, err = c.Exec(ctx, "INSERT INTO tierbench_lock (session, holder) VALUES (pg_backend_pid(), $1)", me.Line())
			}
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" {
			return
		}
	}
}

// lockHolders lists the sessions holding the lock in a mode that
// conflicts with want, described as they described themselves.
func lockHolders(ctx context.Context, c *pgx.Conn, key int32, want store.LockMode) ([]store.Holder, error) {
	rows, err := c.Query(ctx, `SELECT pid, mode FROM pg_locks
		WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1 AND objid = $2 AND objsubid = 2 AND granted ORDER BY pid`, int64(lockClass), int64(key))
	if err != nil {
		return nil, fmt.Errorf("read the lock's holders: %w", err)
	}
	var holders []store.Holder
	for rows.Next() {
		var pid int64
		var mode string
		if err := rows.Scan(&pid, &mode); err != nil {
			rows.Close()
			return nil, err
		}
		h := store.Holder{Session: pid, Mode: store.LockShared}
		if mode == "ExclusiveLock" {
			h.Mode = store.LockExclusive
		}
		if want == store.LockExclusive || h.Mode == store.LockExclusive {
			holders = append(holders, h)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, h := range holders {
		var line string
		// A missing table or row leaves the holder known by its session.
		if c.QueryRow(ctx, "SELECT holder FROM tierbench_lock WHERE session = $1", h.Session).Scan(&line) != nil {
			continue
		}
		if d, err := store.ParseHolder(line); err == nil {
			d.Session = h.Session
			holders[i] = d
		}
	}
	return holders, nil
}

// unlock lets go of the lock, then closes its connection. Closing alone
// frees the lock only once the server has torn the session down, after
// Close has returned, and a run that follows at once would be refused.
// A server that does not answer within unlockWait loses the session, and
// the lock with it, when it notices the closed socket.
func unlock(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), unlockWait)
	defer cancel()
	c.Exec(ctx, "SELECT pg_advisory_unlock_all()")
	c.Close(ctx)
}

const unlockWait = 5 * time.Second
