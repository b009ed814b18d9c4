package container_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// findCounts are a Stats' finds and their outcomes.
type findCounts struct{ finds, hits, txHits, loads, notFound int64 }

func findCountsOf(s container.Stats) findCounts {
	return findCounts{s.Finds, s.CacheHits, s.TxHits, s.Loads, s.NotFound}
}

type combination struct {
	opt  container.CommitOption
	conc container.Concurrency
}

// accepted lists the commit option × concurrency pairs the container
// accepts for an updated type; readonly is accepted for types the
// workload does not update only.
func accepted() []combination {
	var out []combination
	for _, opt := range []container.CommitOption{container.OptionA, container.OptionB, container.OptionC, container.OptionD} {
		for _, c := range []container.Concurrency{container.Database, container.Exclusive, container.Optimistic, container.ReadOnly} {
			if c == container.Database && (opt == container.OptionA || opt == container.OptionD) {
				continue // would lose updates: refused
			}
			out = append(out, combination{opt, c})
		}
	}
	return out
}

var persistences = []container.Persistence{container.CMP, container.BMP, container.BMPChecked}

// twoThreads is a fixture of two threads under exclusive locks that time
// out after wait.
func twoThreads(t *testing.T, dsn string, opt container.CommitOption, p container.Persistence, wait time.Duration) fixture {
	t.Helper()
	s := settings(opt, 10, 10)
	s.Persistence, s.LockTimeout = p, wait
	return newFixture(t, dsn, 2, s)
}

// A finder call is as many finds as the rows it returns, and each find is
// exactly one of a cache hit, a hit on the transaction's own instance, a
// load or not found: the one-row finder, the collection finder, a re-find
// inside a transaction, a missing key, under every commit option and
// persistence. Before, a finder call counted one find more
// than its rows and a missing key none of the outcomes.
func TestEveryFindHasExactlyOneOutcome(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		for _, opt := range []container.CommitOption{container.OptionA, container.OptionB, container.OptionC, container.OptionD} {
			for _, p := range persistences {
				// Each option with its default concurrency: the
				// concurrency matrix is TestFindOutcomesAddUpUnderConcurrency's.
				conc := opt.DefaultConcurrency()
				t.Run(fmt.Sprintf("%v/%s/%s", opt, conc, p), func(t *testing.T) {
					// C with no cache and a pool of one, the paper's
					// option C; the others with room for every row.
					s := settings(opt, 10, 10)
					if opt == container.OptionC {
						s = settings(opt, 0, 1)
					}
					s.Concurrency, s.Persistence = conc, p
					typ := account()
					typ.Updated = conc != container.ReadOnly
					f := newFixtureOf(t, dsn, 1, typ, s, "")
					step := func(what string, want findCounts, run func(tx *container.Tx) error) {
						t.Helper()
						tx, err := f.ctr.BeginReadOnly(ctx, 0)
						if err != nil {
							t.Fatal(err)
						}
						if err := run(tx); err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						if err := tx.Commit(); err != nil {
							t.Fatal(err)
						}
						st := f.h.Stats()
						if got := findCountsOf(st); got != want {
							t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
						}
					}
					caches := opt == container.OptionA || opt == container.OptionD
					// Options A and D keep the instances' data: what was
					// loaded once is then a cache hit.
					either := func(cached, uncached findCounts) findCounts {
						if caches {
							return cached
						}
						return uncached
					}
					step("one-row finder", findCounts{finds: 1, loads: 1}, func(tx *container.Tx) error {
						_, err := tx.FindOne(f.h, "byName", "two")
						return err
					})
					// A finder call that returns no row is no find.
					step("one-row finder matching nothing", findCounts{finds: 1, loads: 1}, func(tx *container.Tx) error {
						if _, err := tx.FindOne(f.h, "byName", "nobody"); !errors.Is(err, container.ErrNotFound) {
							return fmt.Errorf("%v, want ErrNotFound", err)
						}
						return nil
					})
					step("collection finder of 3 rows", findCounts{finds: 4, loads: 4}, func(tx *container.Tx) error {
						found, err := tx.FindMany(f.h, "richerThan", nil, 250)
						if err == nil && len(found) != 3 {
							err = fmt.Errorf("%d rows, want 3", len(found))
						}
						return err
					})
					// 1 is loaded, found again (a hit on the transaction's own
					// instance), found by name (the same), then the five
					// rows: 1 the transaction's own, 2 to 5 loaded before,
					// so cache hits under A and D and loaded again elsewhere.
					step("re-finds within a transaction",
						either(findCounts{finds: 12, hits: 4, txHits: 3, loads: 5}, findCounts{finds: 12, txHits: 3, loads: 9}),
						func(tx *container.Tx) error {
							for range 2 {
								if _, err := tx.Find(f.h, container.Key{A: 1}); err != nil {
									return err
								}
							}
							if _, err := tx.FindOne(f.h, "byName", "one"); err != nil {
								return err
							}
							found, err := tx.FindMany(f.h, "richerThan", nil, 50)
							if err == nil && len(found) != 5 {
								err = fmt.Errorf("%d rows, want 5", len(found))
							}
							return err
						})
					step("a missing key",
						either(findCounts{finds: 13, hits: 4, txHits: 3, loads: 5, notFound: 1}, findCounts{finds: 13, txHits: 3, loads: 9, notFound: 1}),
						func(tx *container.Tx) error {
							if _, err := tx.Find(f.h, container.Key{A: 99}); !errors.Is(err, container.ErrNotFound) {
								return fmt.Errorf("find 99: %v, want ErrNotFound", err)
							}
							return nil
						})
					// Under A and D with exclusive or optimistic concurrency,
					// the finder cache answers the call again and the rows
					// are cache hits; elsewhere they are loaded again.
					step("the collection finder again",
						either(findCounts{finds: 16, hits: 7, txHits: 3, loads: 5, notFound: 1}, findCounts{finds: 16, txHits: 3, loads: 12, notFound: 1}),
						func(tx *container.Tx) error {
							_, err := tx.FindMany(f.h, "richerThan", nil, 250)
							return err
						})
				})
			}
		}
	})
}

// A find that a lock timeout cuts short is no find (its transaction rolls
// back and its operation is retried): neither a Find by key nor the rows
// of a finder call that times out on its first row count, and the lock
// timeouts do.
func TestFindCutShortByALockTimeoutIsNoFind(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		for _, p := range persistences {
			t.Run(string(p), func(t *testing.T) {
				f := twoThreads(t, dsn, container.OptionA, p, 50*time.Millisecond)
				holder, err := f.ctr.BeginReadOnly(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Rollback()
				if _, err := holder.Find(f.h, container.Key{A: 1}); err != nil {
					t.Fatal(err)
				}
				for _, find := range []func(tx *container.Tx) error{
					func(tx *container.Tx) error { _, err := tx.Find(f.h, container.Key{A: 1}); return err },
					func(tx *container.Tx) error { _, err := tx.FindMany(f.h, "richerThan", nil, 50); return err },
				} {
					tx, err := f.ctr.BeginReadOnly(ctx, 1)
					if err != nil {
						t.Fatal(err)
					}
					if err := find(tx); !errors.Is(err, container.ErrLockTimeout) {
						t.Fatalf("%v, want the lock timeout", err)
					}
					tx.Rollback()
				}
				st := f.h.Stats()
				if got, want := findCountsOf(st), (findCounts{finds: 1, loads: 1}); got != want || st.LockTimeouts != 2 {
					t.Errorf("got %+v and %d lock timeouts; want %+v (the holder's find) and 2", got, st.LockTimeouts, want)
				}
			})
		}
	})
}

// A finder's row whose identity another transaction removes while the
// finder waits for its lock is passed over and counted not found, under
// CMP (the row, read before the lock, is loaded again) as under BMP (the
// key is loaded after the lock); before, CMP failed the whole finder call
// with ErrNotFound and counted the row as a find with no outcome.
func TestFinderRowRemovedWhileWaitingIsNotFound(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		for _, p := range []container.Persistence{container.CMP, container.BMP} {
			t.Run(string(p), func(t *testing.T) {
				f := twoThreads(t, dsn, container.OptionB, p, 10*time.Second)
				remover, err := f.ctr.Begin(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				three, err := remover.Find(f.h, container.Key{A: 3})
				if err != nil {
					t.Fatal(err)
				}
				remover.Remove(three)
				type found struct {
					keys []int64
					err  error
				}
				done := make(chan found, 1)
				go func() {
					tx, err := f.ctr.BeginReadOnly(ctx, 1)
					if err != nil {
						done <- found{err: err}
						return
					}
					defer tx.Rollback()
					rows, err := tx.FindMany(f.h, "richerThan", nil, 50)
					var keys []int64
					for _, i := range rows {
						keys = append(keys, i.Key().A)
					}
					done <- found{keys, err}
				}()
				// The finder has read its five rows and waits for 3's lock.
				for deadline := time.Now().Add(5 * time.Second); f.h.Stats().LockWaits == 0; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the finder never waited for the remover's lock")
					}
				}
				if err := remover.Commit(); err != nil {
					t.Fatal(err)
				}
				got := <-done
				if got.err != nil || fmt.Sprint(got.keys) != "[1 2 4 5]" {
					t.Fatalf("finder: %v, %v; want [1 2 4 5]: 3 was removed while it waited", got.keys, got.err)
				}
				st := f.h.Stats()
				// The remover's find of 3, then the finder's five rows: 1
				// and 2 loaded, 3 gone, 4 and 5 loaded.
				if got, want := findCountsOf(st), (findCounts{finds: 6, loads: 5, notFound: 1}); got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
			})
		}
	})
}

// Threads finding, re-finding, updating, creating and removing at once,
// under every accepted commit option × concurrency × persistence: every
// find still has exactly one outcome, the finds are those the threads
// made, and the not-founds exactly the missing keys they looked for.
func TestFindOutcomesAddUpUnderConcurrency(t *testing.T) {
	const threads, rounds = 3, 20
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, dsn string) {
		cell := 0
		for _, oc := range accepted() {
			for _, p := range persistences {
				opt, conc := oc.opt, oc.conc
				ci := cell
				cell++
				t.Run(fmt.Sprintf("%v/%s/%s", opt, conc, p), func(t *testing.T) {
					storetest.ShareCell(t, dsn, ci)
					s := settings(opt, 3, 2) // fewer places than rows: evictions too
					if opt == container.OptionC {
						s = settings(opt, 0, 2)
					}
					s.Concurrency, s.Persistence, s.LockTimeout = conc, p, 200*time.Millisecond
					typ := account()
					typ.Updated = conc != container.ReadOnly
					f := newFixtureOf(t, dsn, threads, typ, s, "")
					var mu sync.Mutex
					// finds: the finds the threads made; unsure: finds of
					// finder calls that failed part way, which count the
					// rows resolved before the error; missing: Finds of a
					// key without a row.
					var finds, unsure, missing, failed int64
					var wg sync.WaitGroup
					for th := range threads {
						wg.Go(func() {
							rng := rand.New(rand.NewPCG(uint64(th), 27))
							var n, u, m, e int64
							var created []int64
							// find finds key, counting the find; nil, nil when
							// it has no row.
							find := func(tx *container.Tx, key int64) (*container.Instance, error) {
								i, err := tx.Find(f.h, container.Key{A: key})
								switch {
								case err == nil:
									n++
								case errors.Is(err, container.ErrNotFound):
									n++
									m++
									err = nil
								}
								return i, err
							}
							for r := range rounds {
								kind := rng.IntN(5)
								if conc == container.ReadOnly {
									kind %= 2
								}
								var tx *container.Tx
								var err error
								if kind < 2 {
									tx, err = f.ctr.BeginReadOnly(ctx, th)
								} else {
									tx, err = f.ctr.Begin(ctx, th)
								}
								if err != nil {
									t.Error(err)
									return
								}
								switch kind {
								case 0: // a key twice, and a row by name
									k := 1 + rng.Int64N(5)
									if _, err = find(tx, k); err == nil {
										_, err = find(tx, k)
									}
									if err == nil {
										if _, err = tx.FindOne(f.h, "byName", []string{"one", "two", "three", "four", "five"}[rng.IntN(5)]); err == nil {
											n++
										}
									}
								case 1: // a key, then the five rows (never the created ones)
									k := 1 + rng.Int64N(5)
									if _, err = find(tx, k); err == nil {
										var found []*container.Instance
										if found, err = tx.FindMany(f.h, "richerThan", nil, 50); err == nil {
											n += int64(len(found))
										} else {
											u += 5
										}
									}
								case 2: // two rows updated, in key order
									k := 1 + rng.Int64N(4)
									for _, key := range []int64{k, k + 1} {
										var i *container.Instance
										if err == nil {
											if i, err = find(tx, key); err == nil {
												i.SetInt(fCredit, i.Int(fCredit)+1)
											}
										}
									}
								case 3: // a new row, which no finder returns (credit 0)
									key := int64(1000 + th*1000 + r)
									var i *container.Instance
									if i, err = tx.Create(f.h, container.Key{A: key}); err == nil {
										i.SetString(fName, fmt.Sprint("new", key))
										created = append(created, key)
									}
								case 4: // a created row removed, or a key never created
									key := int64(900 + th)
									if len(created) > 0 && rng.IntN(3) > 0 {
										key = created[rng.IntN(len(created))]
									}
									var i *container.Instance
									if i, err = find(tx, key); i != nil {
										tx.Remove(i)
									}
								}
								if err == nil {
									err = tx.Commit()
								} else {
									tx.Rollback()
								}
								if err != nil {
									e++
								}
							}
							mu.Lock()
							finds, unsure, missing, failed = finds+n, unsure+u, missing+m, failed+e
							mu.Unlock()
						})
					}
					wg.Wait()
					st := f.h.Stats()
					if st.Finds < finds || st.Finds > finds+unsure {
						t.Errorf("%d finds counted; the threads made %d (and up to %d more in finder calls that failed part way)", st.Finds, finds, unsure)
					}
					if st.NotFound != missing {
						t.Errorf("%d not found counted; the threads looked for %d missing keys", st.NotFound, missing)
					}
					if (opt == container.OptionB || opt == container.OptionC) && st.CacheHits != 0 {
						t.Errorf("%d cache hits under option %s, which keeps no data", st.CacheHits, opt)
					}
					t.Logf("%+v; %d transactions failed", findCountsOf(st), failed)
				})
			}
		}
	})
}
