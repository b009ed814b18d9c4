package container_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// Two app servers' containers over one database where keys count up
// from the table's largest (SQLite, MySQL) draw disjoint keys: server i
// of 2 takes the blocks i, i+2, …, so their creates, interleaved, never
// collide. Without Server and Servers they draw the same keys: the second
// create fails.
func TestAppServersDrawDisjointKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		if strings.HasPrefix(dsn, "postgres") {
			t.Skip("PostgreSQL's containers draw from the table's own sequence")
		}
		t.Run("apart", func(t *testing.T) { createOnTwoServers(t, dsn, true) })
		t.Run("unaware", func(t *testing.T) { createOnTwoServers(t, dsn, false) })
	})
}

// createOnTwoServers creates on two containers in turn: with apart,
// every create commits on a key of its own; without, the second fails.
func createOnTwoServers(t *testing.T, dsn string, apart bool) {
	ctx := context.Background()
	typ := account()
	typ.KeyGen = container.KeySequence
	var homes []*container.Home
	var ctrs []*container.Container
	for i := range 2 {
		db := storetest.Open(t, dsn, store.Options{Threads: 1})
		if i == 0 {
			if err := db.ExecScript(ctx, schema); err != nil {
				t.Fatal(err)
			}
		}
		s := settings(container.OptionC, 0, 10)
		s.Concurrency = container.Database
		if apart {
			s.Server, s.Servers = i, 2
		}
		ctr, err := container.New(ctx, db, []*container.Type{typ}, map[string]container.Settings{typ.Name: s})
		if err != nil {
			t.Fatal(err)
		}
		ctrs, homes = append(ctrs, ctr), append(homes, ctr.Home(typ.Name))
	}
	seen := map[int64]int{}
	for n := range 150 { // past two blocks of each server
		i := n % 2
		tx, err := ctrs[i].Begin(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := tx.Create(homes[i], container.Key{})
		if err != nil {
			t.Fatal(err)
		}
		inst.SetString(fName, "new")
		inst.SetInt(fCredit, 1)
		err = tx.Commit()
		if !apart {
			if n == 1 && err == nil {
				t.Fatalf("the second server's first create (key %d) committed: the servers should have collided", inst.Key().A)
			}
			if n == 1 {
				return
			}
		}
		if err != nil {
			t.Fatalf("server %d's create %d (key %d): %v", i, n, inst.Key().A, err)
		}
		if other, ok := seen[inst.Key().A]; ok {
			t.Fatalf("key %d drawn by servers %d and %d", inst.Key().A, other, i)
		}
		seen[inst.Key().A] = i
	}
}
