package rubis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// entityBundle is the entity style over a database loaded at base: the
// container on a business tier of protocol p, and the web tier's Facade
// calling it, its clock stopped at base.
type entityBundle struct {
	db    *store.DB
	local *Facade // the business tier's, in this process
	web   *Facade
	tier  *businessTier
	// served are the entity beans the tier serves.
	served *EntityTier
}

func setupEntities(t *testing.T, dsn string, run container.Settings, p remote.Protocol, threads int, base time.Time) entityBundle {
	t.Helper()
	ctx := context.Background()
	populate(t, dsn, testSeed, base)
	db := storetest.Open(t, dsn, store.Options{Threads: testThreads})
	local, err := openContainer(ctx, db, workload.RunParams{Entities: resolved(t, run)}, false)
	if err != nil {
		t.Fatal(err)
	}
	var served *EntityTier
	bt, err := startTier(func(s *remote.Server) (func(), error) {
		served = ServeEntities(s, local.ctr, threads)
		return served.Close, nil
	}, threads, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bt.close(); err != nil {
			t.Errorf("business tier: %v", err)
		}
	})
	web := NewRemoteEntityFacade(bt.conn)
	web.now = func() time.Time { return base }
	return entityBundle{db: db, local: local, web: web, tier: bt, served: served}
}

// countingEntities count the calls the interactions' code implies: one
// per Begin, finder, create, getter and setter, and one for the
// transaction's end (Commit, or Rollback when it was not committed).
type countingEntities struct {
	entities
	n *int64
}

func (c countingEntities) begin(ctx context.Context, thread int, write bool) (entityTx, error) {
	*c.n++
	tx, err := c.entities.begin(ctx, thread, write)
	if err != nil {
		return nil, err
	}
	return &countingTx{entityTx: tx, n: c.n}, nil
}

type countingTx struct {
	entityTx
	n     *int64
	ended bool
}

type countingRef struct {
	entityRef
	n *int64
}

func (c *countingTx) ref(r entityRef, err error) (entityRef, error) {
	*c.n++
	if err != nil {
		return nil, err
	}
	return countingRef{r, c.n}, nil
}

func (c *countingTx) Find(h entityHome, key container.Key) (entityRef, error) {
	return c.ref(c.entityTx.Find(h, key))
}
func (c *countingTx) FindOne(h entityHome, finder string, args ...any) (entityRef, error) {
	return c.ref(c.entityTx.FindOne(h, finder, args...))
}
func (c *countingTx) Create(h entityHome, key container.Key) (entityRef, error) {
	return c.ref(c.entityTx.Create(h, key))
}
func (c *countingTx) FindMany(h entityHome, finder string, args ...any) ([]entityRef, error) {
	*c.n++
	found, err := c.entityTx.FindMany(h, finder, args...)
	for i, r := range found {
		found[i] = countingRef{r, c.n}
	}
	return found, err
}
func (c *countingTx) Commit() error {
	*c.n++
	c.ended = true
	return c.entityTx.Commit()
}
func (c *countingTx) Rollback() {
	if !c.ended {
		*c.n++
		c.ended = true
	}
	c.entityTx.Rollback()
}

// zeroRef is a bean whose fields are all zero, for counting what a
// conversion reads.
type zeroRef struct{}

func (zeroRef) Key() container.Key     { return container.Key{} }
func (zeroRef) Int(int) int64          { return 0 }
func (zeroRef) Float(int) float64      { return 0 }
func (zeroRef) String(int) string      { return "" }
func (zeroRef) Time(int) time.Time     { return time.Time{} }
func (zeroRef) SetInt(int, int64)      {}
func (zeroRef) SetFloat(int, float64)  {}
func (zeroRef) SetString(int, string)  {}
func (zeroRef) SetTime(int, time.Time) {}

func (r countingRef) Int(f int) int64            { *r.n++; return r.entityRef.Int(f) }
func (r countingRef) Float(f int) float64        { *r.n++; return r.entityRef.Float(f) }
func (r countingRef) String(f int) string        { *r.n++; return r.entityRef.String(f) }
func (r countingRef) Time(f int) time.Time       { *r.n++; return r.entityRef.Time(f) }
func (r countingRef) SetInt(f int, v int64)      { *r.n++; r.entityRef.SetInt(f, v) }
func (r countingRef) SetFloat(f int, v float64)  { *r.n++; r.entityRef.SetFloat(f, v) }
func (r countingRef) SetString(f int, v string)  { *r.n++; r.entityRef.SetString(f, v) }
func (r countingRef) SetTime(f int, v time.Time) { *r.n++; r.entityRef.SetTime(f, v) }

// TestEntityMatchesDirect runs the script of TestContainerMatchesDirect
// through the entity style: the interactions in the web tier, the entity
// beans on a business tier of each protocol over the container under
// CMP and BMP, each on its own database loaded alike. Every result and
// page error must be the direct tier's (and so the facade's, which
// TestContainerMatchesDirect holds to the same), every row of every table
// the same at the end, and every interaction must make exactly the remote
// calls its code implies: one per Begin, finder, create, getter and setter
// it runs, and one to end its transaction.
func TestEntityMatchesDirect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		d := setupDirect(t, dsn)
		f := newFixture(d.q, d.pop, d.base)
		steps := script(f)
		want := make([]string, len(steps))
		direct := tier{a: d.d, setNow: func(at time.Time) { d.d.now = func() time.Time { return at } }}
		for i, s := range steps {
			res, err := s.do(ctx, direct)
			want[i] = outcome(t, "direct: "+s.name, res, err)
		}
		wantRows := tableRows(t, d.db)

		cell := 0
		for _, v := range containerVariants[:2] { // cmp and bmp, commit option C
			for _, p := range remote.Protocols {
				ci := cell
				cell++
				t.Run(v.name+"/"+string(p), func(t *testing.T) {
					storetest.ShareCell(t, dsn, ci)
					e := setupEntities(t, freshDSN(t, d.db.Dialect()), v.run, p, testThreads, d.base)
					var implied int64
					e.web.ents = countingEntities{e.web.ents, &implied}
					x := tier{a: e.web, setNow: func(at time.Time) { e.web.now = func() time.Time { return at } }}
					var total int64
					for i, s := range steps {
						var m remote.Meter
						implied = 0
						res, err := s.do(remote.WithMeter(ctx, &m), x)
						if got := outcome(t, "entity: "+s.name, res, err); got != want[i] {
							t.Errorf("%s:\n entity %s\n direct %s", s.name, got, want[i])
						}
						if c := m.Counts(); c.Calls != implied {
							t.Errorf("%s: %d remote calls, its code implies %d", s.name, c.Calls, implied)
						}
						total += implied
					}
					t.Logf("%d steps, %d remote calls", len(steps), total)
					compareRows(t, "entity", tableRows(t, e.db), wantRows)
					if n := e.served.Open(); n != 0 {
						t.Errorf("%d transactions left open", n)
					}
				})
			}
		}
	})
}

// TestEntityAbandonedTransaction: a transaction whose caller stops calling
// is rolled back once idle for the tier's limit and its server thread
// taken back, so that a tier of one thread serves the next caller; the
// abandoned transaction's next call fails as Aborted, which the web tier
// runs again (store.Retryable). Closing the tier rolls back what is open.
func TestEntityAbandonedTransaction(t *testing.T) {
	for _, p := range remote.Protocols {
		t.Run(string(p), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.SQLite(t)
			populate(t, dsn, testSeed, popBase)
			db := storetest.Open(t, dsn, store.Options{Threads: 1})
			local, err := openContainer(ctx, db, workload.RunParams{Entities: resolved(t, runSettings(container.CMP, container.OptionC, container.Database, "0"))}, false)
			if err != nil {
				t.Fatal(err)
			}
			const idle = 300 * time.Millisecond
			var served *EntityTier
			bt, err := startTier(func(s *remote.Server) (func(), error) {
				served = serveEntities(s, local.ctr, 1, idle)
				return served.Close, nil
			}, 1, p)
			if err != nil {
				t.Fatal(err)
			}
			defer bt.close()
			ents := NewRemoteEntityFacade(bt.conn).ents

			// A write transaction that finds a user and changes it, then
			// is left.
			abandoned, err := ents.begin(ctx, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			u, err := abandoned.Find(homeUsers, idKey(1))
			if err != nil {
				t.Fatal(err)
			}
			rating := u.Int(userRating)
			u.SetInt(userRating, rating+100)
			if err := abandoned.Err(); err != nil || served.Open() != 1 {
				t.Fatalf("%v, %d open", err, served.Open())
			}

			// The only thread is the abandoned transaction's: the next
			// Begin waits for the reaper.
			start := time.Now()
			next, err := ents.begin(ctx, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			if waited := time.Since(start); waited < idle/2 {
				t.Errorf("the next transaction began after %v, before the abandoned one was idle for %v", waited, idle)
			}
			if got := next.(*remoteTx).id; got == abandoned.(*remoteTx).id {
				t.Fatalf("the same id %d", got)
			}
			u2, err := next.Find(homeUsers, idKey(1))
			if err != nil {
				t.Fatal(err)
			}
			if got := u2.Int(userRating); got != rating {
				t.Errorf("rating %d after the abandoned transaction, want %d: it was not rolled back", got, rating)
			}
			if err := next.Commit(); err != nil {
				t.Fatal(err)
			}

			// A page whose context ends mid-transaction (its browser gone)
			// still rolls back at once: the thread does not wait for the
			// reaper.
			pageCtx, cancelPage := context.WithCancel(ctx)
			gone, err := ents.begin(pageCtx, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			cancelPage()
			gone.Rollback()
			if n := served.Open(); n != 0 {
				t.Errorf("%d transactions open after a cancelled page's rollback, want 0", n)
			}

			// The abandoned transaction's caller comes back.
			_ = u.String(userNickname)
			err = abandoned.Err()
			if status.Code(err) != codes.Aborted || !store.Retryable(err) {
				t.Errorf("a call in the rolled back transaction: %v, want Aborted and retryable", err)
			}
			if err := abandoned.Commit(); err == nil {
				t.Error("the rolled back transaction committed")
			}

			// Closing the tier rolls back an open transaction.
			if _, err := ents.begin(ctx, 0, true); err != nil {
				t.Fatal(err)
			}
			if served.Open() != 1 {
				t.Fatalf("%d open, want 1", served.Open())
			}
			if err := bt.close(); err != nil {
				t.Fatal(err)
			}
			if served.Open() != 0 {
				t.Errorf("%d open after the tier closed", served.Open())
			}
		})
	}
}

// TestEntityErrors: the errors of entity calls as the interactions read
// them.
func TestEntityErrors(t *testing.T) {
	if err := entityError("Find", status.Error(codes.NotFound, "container: no such entity")); err != container.ErrNotFound {
		t.Errorf("NotFound: %v", err)
	}
	e := &EntityTier{idle: time.Second}
	for name, tc := range map[string]struct {
		sent  error
		class error
	}{
		"lock timeout": {remote.FailureStatus(fmt.Errorf("commit: %w", store.ErrLockTimeout)), store.ErrLockTimeout},
		"deadlock":     {remote.FailureStatus(store.Classified(store.ErrDeadlock, errors.New("conflicting orders"))), store.ErrDeadlock},
		"not open":     {e.notOpen(7), store.ErrSerialization},
	} {
		err := entityError("Commit", tc.sent)
		if !errors.Is(err, tc.class) || !store.Retryable(err) || status.Code(err) != codes.Aborted {
			t.Errorf("%s: %v, want retryable as %v, code Aborted", name, err, tc.class)
		}
	}
	if err := entityError("Get", status.Error(codes.Unavailable, "down")); store.Retryable(err) || status.Code(err) != codes.Unavailable {
		t.Errorf("Unavailable: %v", err)
	}
}

// TestEntityVictimRunsAgain: a transaction the business tier's container
// chooses as a victim (here an exclusive lock wait that times out) fails
// its call as Aborted, and the web tier runs the interaction again, as
// the facade does in process: StoreBid waits behind a transaction holding
// the item, times out, and succeeds once that transaction ends.
func TestEntityVictimRunsAgain(t *testing.T) {
	for _, p := range remote.Protocols {
		t.Run(string(p), func(t *testing.T) {
			ctx := context.Background()
			run := runSettings(container.CMP, container.OptionA, container.Exclusive, "100%")
			run.LockTimeout = 200 * time.Millisecond
			e := setupEntities(t, storetest.SQLite(t), run, p, testThreads, popBase)
			item := mustPopulation(t, 1).FirstActiveItem()

			holder, err := e.web.ents.begin(ctx, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := holder.Find(homeItems, idKey(item)); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := e.web.StoreBid(ctx, 0, StoreBidRequest{UserID: 1, ItemID: item, MinBid: 1, Bid: 5000, MaxBid: 5000, Qty: 1, MaxQty: 1})
				done <- err
			}()
			timedOut := func() int64 { return e.local.ctr.Stats()["Items"].LockTimeouts }
			for timedOut() == 0 {
				select {
				case err := <-done:
					t.Fatalf("StoreBid ended (%v) while another transaction held the item", err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			holder.Rollback()
			if err := <-done; err != nil {
				t.Fatalf("StoreBid after a lock timeout: %v, want it run again and done", err)
			}
			if n := timedOut(); n < 1 || n >= writeAttempts {
				t.Errorf("%d lock timeouts, want at least 1 and fewer than the %d attempts", n, writeAttempts)
			}
		})
	}
}
