package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// openLocked opens dsn and takes its lock as what, in mode; the error is
// the lock's (the DB is closed then).
func openLocked(t *testing.T, dsn, what string, mode store.LockMode) (*store.DB, error) {
	t.Helper()
	db, err := storetest.Backends().Open(context.Background(), store.MustParseDSN(dsn), store.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Lock(context.Background(), store.Me(what, mode)); err != nil {
		db.Close()
		return nil, err
	}
	t.Cleanup(func() { db.Close() })
	return db, nil
}

// wantRefused checks that err refuses the lock naming this process (its
// pid, host and start time) as the holder doing what in mode.
func wantRefused(t *testing.T, err error, what string, mode store.LockMode) {
	t.Helper()
	var le *store.LockedError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrLocked) {
		t.Fatalf("got %v, want a *LockedError", err)
	}
	host, _ := os.Hostname()
	if len(le.Holders) != 1 {
		t.Fatalf("%d holders named, want 1: %v", len(le.Holders), err)
	}
	h := le.Holders[0]
	if h.PID != os.Getpid() || h.Host != host || h.What != what || h.Mode != mode || time.Since(h.Started) > time.Minute {
		t.Errorf("holder %+v, want pid %d on %s doing %q (%s) since just now", h, os.Getpid(), host, what, mode)
	}
	for _, s := range []string{"pid " + strconv.Itoa(os.Getpid()), "host " + host, h.Started.Format(time.RFC3339), what} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q does not name %q", err, s)
		}
	}
}

// Two processes cannot hold one database exclusively, nor serve it while
// another loads it; any number serve it together; closing the database
// releases its lock. (Each DB is a process here: its lock is on a
// connection or a file descriptor of its own. Release on a killed process
// is cmd/tierbench's TestDatabaseLockDiesWithItsHolder.)
func TestDatabaseLock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		loader, err := openLocked(t, dsn, "load stockonline", store.LockExclusive)
		if err != nil {
			t.Fatal(err)
		}
		_, err = openLocked(t, dsn, "run stockonline", store.LockExclusive)
		wantRefused(t, err, "load stockonline", store.LockExclusive)
		_, err = openLocked(t, dsn, "serve stockonline", store.LockShared)
		wantRefused(t, err, "load stockonline", store.LockExclusive)
		loader.Close()

		if _, err := openLocked(t, dsn, "serve stockonline", store.LockShared); err != nil {
			t.Fatalf("serve after the load ended: %v", err)
		}
		second, err := openLocked(t, dsn, "drive stockonline", store.LockShared)
		if err != nil {
			t.Fatalf("a second shared holder beside serve: %v", err)
		}
		second.Close()
		_, err = openLocked(t, dsn, "load stockonline", store.LockExclusive)
		wantRefused(t, err, "serve stockonline", store.LockShared)
	})
}

// Databases are locked one by one: a lock on one leaves another free.
func TestDatabaseLockIsPerDatabase(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		if _, err := openLocked(t, dsn, "run stockonline", store.LockExclusive); err != nil {
			t.Fatal(err)
		}
		var other string
		switch store.MustParseDSN(dsn).Dialect {
		case store.SQLite:
			other = storetest.SQLite(t)
		case store.Postgres:
			other = storetest.Postgres(t)
		default:
			other = storetest.MySQL(t)
		}
		if _, err := openLocked(t, other, "run stockonline", store.LockExclusive); err != nil {
			t.Fatalf("another database: %v", err)
		}
	})
}

// A fresh temporary SQLite file is the process's own: it takes no lock,
// so no lock file stands beside it (nor beside any other temporary one:
// none takes a lock).
func TestTemporarySQLiteTakesNoLock(t *testing.T) {
	if _, err := openLocked(t, "sqlite", "run stockonline", store.LockExclusive); err != nil {
		t.Fatal(err)
	}
	if locks, _ := filepath.Glob(filepath.Join(os.TempDir(), "tierbench-sqlite-*", "*.lock")); len(locks) > 0 {
		t.Errorf("lock files beside temporary databases: %v", locks)
	}
}

func TestHolderLineRoundTrip(t *testing.T) {
	h := store.Holder{PID: 4242, Host: "db-host.example", Started: time.Date(2026, 12, 1, 22, 24, 1, 0, time.UTC), What: "serve rubis", Mode: store.LockShared}
	got, err := store.ParseHolder(h.Line())
	if err != nil || got != h {
		t.Fatalf("ParseHolder(%q) = %+v, %v; want %+v", h.Line(), got, err, h)
	}
	for _, bad := range []string{"", "shared", "owned pid=1", "exclusive pid=x host=h"} {
		if _, err := store.ParseHolder(bad); err == nil {
			t.Errorf("ParseHolder(%q) accepted", bad)
		}
	}
}

// The lock is free the moment Close returns: a run that follows another
// on the same database at once (a sweep's next point, a test's next
// setting) is not refused by the one that ended. Closing a session alone
// frees its locks only when the server has torn it down, after Close has
// returned, so each server backend lets go of its lock explicitly first.
func TestLockIsFreeOnceCloseReturns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		for i := range 100 {
			db, err := storetest.Backends().Open(context.Background(), store.MustParseDSN(dsn), store.Options{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Lock(context.Background(), store.Me("run stockonline", store.LockExclusive)); err != nil {
				db.Close()
				t.Fatalf("round %d: the previous round's closed lock refused this one: %v", i, err)
			}
			db.Close()
		}
	})
}
