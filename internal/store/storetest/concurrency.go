package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// exerciseConcurrency: every server thread has its own working session,
// concurrent writers of one row lose no update, and a deadlock is
// classified as retryable.
func exerciseConcurrency(t *testing.T, newDSN func(testing.TB) string, setup setupFunc) {
	ctx := context.Background()
	t.Run("every server thread has a working session", func(t *testing.T) {
		const threads = 3
		db, s := setup(t, store.Options{Threads: threads})
		if db.Threads() != threads || db.Thread(0) == db.Thread(1) || db.Thread(threads) != db.Thread(-1) {
			t.Fatalf("%d thread sessions; distinct per thread and shared out of range expected", db.Threads())
		}
		var wg sync.WaitGroup
		for i := range threads {
			wg.Go(func() {
				th := db.Thread(i)
				for k := 0; k < 20; k++ {
					id := int64(i*100 + k)
					if err := th.InTx(ctx, func(tx *store.Tx) error {
						tx.Queue(s.insert2, id, 0)
						return nil
					}); err != nil {
						t.Error(err)
						return
					}
					var n int64
					if err := th.QueryRow(ctx, s.get2, id).Scan(&n); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		var n int64
		if err := db.QueryRow(ctx, s.count2).Scan(&n); err != nil || n != threads*20 {
			t.Errorf("%d rows written through the thread sessions, %v; want %d", n, err, threads*20)
		}
	})

	t.Run("concurrent writers of one row lose no update", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 4})
		if _, err := db.Exec(ctx, s.insert2, 1, 0); err != nil {
			t.Fatal(err)
		}
		const writers, each = 4, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := 0; w < writers; w++ {
			wg.Go(func() {
				for i := 0; i < each; i++ {
					errs <- db.InTx(ctx, func(tx *store.Tx) error {
						_, err := tx.Exec(ctx, s.increment, 1)
						return err
					})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var n int64
		if err := db.QueryRow(ctx, s.get2, 1).Scan(&n); err != nil || n != writers*each {
			t.Fatalf("counter = %d, %v; want %d", n, err, writers*each)
		}
	})

	t.Run("deadlocks are classified as retryable", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		if db.Dialect() == store.SQLite {
			t.Skip("SQLite runs one writer at a time: transactions cannot deadlock")
		}
		for id := int64(1); id <= 2; id++ {
			if _, err := db.Exec(ctx, s.insert2, id, 0); err != nil {
				t.Fatal(err)
			}
		}
		// Each transaction locks its own row, waits for the other to do
		// the same, then asks for the other's row.
		var locked sync.WaitGroup
		locked.Add(2)
		results := make(chan error, 2)
		for _, order := range [][2]int64{{1, 2}, {2, 1}} {
			go func() {
				results <- db.InTx(ctx, func(tx *store.Tx) error {
					if _, err := tx.Exec(ctx, s.increment, order[0]); err != nil {
						locked.Done()
						return err
					}
					locked.Done()
					locked.Wait()
					_, err := tx.Exec(ctx, s.increment, order[1])
					return err
				})
			}()
		}
		var victims int
		for i := 0; i < 2; i++ {
			select {
			case err := <-results:
				if err != nil {
					if !errors.Is(err, store.ErrDeadlock) || !store.Retryable(err) {
						t.Fatalf("deadlock victim got %v, want a retryable ErrDeadlock", err)
					}
					victims++
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no deadlock detected in 30 s")
			}
		}
		if victims != 1 {
			t.Fatalf("%d deadlock victims, want exactly 1", victims)
		}
		if got := db.Stats().Deadlocks; got != 1 {
			t.Errorf("deadlocks counted = %d, want 1", got)
		}
	})
}
