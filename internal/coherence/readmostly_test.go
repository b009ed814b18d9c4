package coherence

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// The read-mostly pattern across two app servers: a commit of the
// read-write type AccountRW on one server invalidates the other server's
// cached read-only Account (option D, an hour's refresh, coherence
// invalidate) before it returns, so the other's next read sees it; each
// identity written is exactly one invalidation received there.
func TestReadMostlyInvalidatesAcrossServers(t *testing.T) {
	url := testNATS(t)
	dsn := storetest.SQLite(t)
	ctx := context.Background()
	run := fmt.Sprintf("test-%s-%d", t.Name(), time.Now().UnixNano())
	base := container.Settings{CommitOption: container.OptionC, Cache: container.Size{N: 10}, Pool: container.Size{N: 10},
		Persistence: container.CMP, Refresh: time.Hour, LockTimeout: 2 * time.Second, Servers: 2}
	var user []container.Setting
	for _, s := range []string{"Account.read-mostly=AccountRW", "Account.coherence=invalidate"} {
		u, err := container.ParseSetting(s)
		if err != nil {
			t.Fatal(err)
		}
		user = append(user, u)
	}
	type server struct {
		ctr  *container.Container
		r, w *container.Home
		bus  *Bus
	}
	var servers []server
	for n := range 2 {
		db := storetest.Open(t, dsn, store.Options{Threads: 1})
		if n == 0 {
			if err := db.ExecScript(ctx, schema); err != nil {
				t.Fatal(err)
			}
		}
		r, w := account(), account()
		r.Updated, r.Finders = false, nil
		w.Name, w.Finders = "AccountRW", nil
		types := []*container.Type{r, w}
		all := map[string]container.Settings{}
		for _, typ := range types {
			s := base
			s.Server = n
			s, err := container.Resolve(s, typ, user)
			if err != nil {
				t.Fatal(err)
			}
			all[typ.Name] = s
		}
		ctr, err := container.New(ctx, db, types, all)
		if err != nil {
			t.Fatal(err)
		}
		bus, err := Open(ctx, Options{URL: url, Run: run, Name: fmt.Sprintf("s%d", n), Servers: 2, Deadline: 2 * time.Second, Heartbeat: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bus.Close() })
		bus.Attach(ctr)
		servers = append(servers, server{ctr: ctr, r: ctr.Home("Account"), w: ctr.Home("AccountRW"), bus: bus})
	}
	for _, s := range servers {
		waitFor(t, "each server in sync with its peer", s.bus.synced)
	}
	claimAll(t, "Account", servers[0].bus, servers[1].bus)
	read := func(s server) int64 {
		t.Helper()
		tx, err := s.ctr.BeginReadOnly(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Commit()
		i, err := tx.Find(s.r, container.Key{A: 1})
		if err != nil {
			t.Fatal(err)
		}
		return i.Int(fCredit)
	}
	write := func(s server, credit int64) {
		t.Helper()
		tx, err := s.ctr.Begin(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		i, err := tx.Find(s.w, container.Key{A: 1})
		if err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
		i.SetInt(fCredit, credit)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if c := read(servers[1]); c != 100 {
		t.Fatalf("s1 read %d first; want 100", c)
	}
	read(servers[1]) // cached
	for n, credit := range []int64{150, 160, 170} {
		write(servers[0], credit)
		if c := read(servers[1]); c != credit {
			t.Fatalf("s1 read %d after s0's commit of %d through AccountRW; want it (no stale read)", c, credit)
		}
		// The settle, which counts what s1 received, is not waited for.
		waitFor(t, "s1's count of the settled invalidations", func() bool { return servers[1].r.Stats().InvalidationsReceived >= int64(n+1) })
		if got := servers[1].r.Stats().InvalidationsReceived; got != int64(n+1) {
			t.Fatalf("s1 received %d invalidations of Account after %d commits; want %d", got, n+1, n+1)
		}
	}
	if st := servers[0].r.Stats(); st.WriterInvalidations != 3 || st.InvalidationCommits != 3 || st.InvalidationsSent != 3 {
		t.Errorf("s0's Account: %d writer invalidations, %d commits published, %d sent; want 3, 3, 3", st.WriterInvalidations, st.InvalidationCommits, st.InvalidationsSent)
	}
	if st := servers[1].r.Stats(); st.CacheHits != 1 || st.StaleReads != 0 {
		t.Errorf("s1's Account: %d hits, %d stale reads; want 1, 0", st.CacheHits, st.StaleReads)
	}
}
