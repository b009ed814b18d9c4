package stockonline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"gopkg.in/yaml.v3"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	pb "github.com/tierbench/tierbench/internal/workloads/stockonline/stockonlinepb"
)

// loadedAt opens dsn with threads sessions and loads testPopulation from
// seed 7, the same on every database; the runs and clients on it choose
// among its accounts and stocks (withTestPopulation).
func loadedAt(t testing.TB, dsn string, threads int) *store.DB {
	t.Helper()
	return loadedWith(t, dsn, threads, testPopulation)
}

// loadedWith is loadedAt of the population pop.
func loadedWith(t testing.TB, dsn string, threads int, pop population) *store.DB {
	t.Helper()
	db := storetest.Open(t, dsn, store.Options{Threads: threads})
	if _, err := loadPopulation(context.Background(), db, 7, pop); err != nil {
		t.Fatal(err)
	}
	return db
}

// withTestPopulation makes the clients of r, a run in process or remote
// clients, choose among testPopulation's accounts and stocks.
func withTestPopulation(t testing.TB, r workload.Run) workload.Run {
	t.Helper()
	switch r := r.(type) {
	case *run:
		r.pop = testPopulation
	case *remoteRun:
		r.pop = testPopulation
	default:
		t.Fatalf("a run of type %T", r)
	}
	return r
}

// loadedLike is n databases on the backend of dsn, each loaded as
// loadedAt loads them. SQLite's are copies of the first: its load is most
// of a test's time under the race detector.
func loadedLike(t *testing.T, dsn string, n, threads int) []*store.DB {
	t.Helper()
	dbs := []*store.DB{loadedAt(t, storetest.Fresh(t, dsn), threads)}
	for range n - 1 {
		if dbs[0].Dialect() != store.SQLite {
			dbs = append(dbs, loadedAt(t, storetest.Fresh(t, dsn), threads))
			continue
		}
		path := filepath.Join(t.TempDir(), "copy.db")
		exec(t, dbs[0], "VACUUM INTO '"+path+"'")
		dbs = append(dbs, storetest.Open(t, "sqlite:"+path, store.Options{Threads: threads}))
	}
	return dbs
}

// serveBusiness serves Stock-Online's business tier over db on a loopback
// port with protocol p, and connects to it; everything stops with the
// test.
func serveBusiness(t testing.TB, p remote.Protocol, db *store.DB, params workload.RunParams) *remote.Conn {
	t.Helper()
	conn, _ := serveAt(t, p, db, params)
	return conn
}

// serveAt is serveBusiness, and the tier's address.
func serveAt(t testing.TB, p remote.Protocol, db *store.DB, params workload.RunParams) (*remote.Conn, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := remote.NewServer(p, remote.ServerOptions{})
	closeBusiness, err := New().ServeBusiness(context.Background(), db, srv, params)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	conn, err := remote.Dial(p, ln.Addr().String(), remote.DialOptions{Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop(context.Background())
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := closeBusiness(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return conn, ln.Addr().String()
}

// deckOutcomes are one client's operations by outcome, by operation.
type deckOutcomes struct {
	done, succeeded, business [numOps]int64
}

// runDeck deals iterations seeded decks to one client of r, in order, and
// counts what came of each operation. Any failure but a business
// exception fails the test.
func runDeck(t *testing.T, r workload.Run, iterations int) deckOutcomes {
	t.Helper()
	ctx := context.Background()
	c := r.NewClient(0, 0, rand.New(rand.NewPCG(7, 1)))
	deck := rand.New(rand.NewPCG(7, 2))
	var o deckOutcomes
	for range iterations {
		for _, s := range dealForTest(deck) {
			err := c.Do(ctx, s)
			o.done[s.Op]++
			switch {
			case err == nil:
				o.succeeded[s.Op]++
			case workload.IsBusiness(err):
				o.business[s.Op]++
			default:
				t.Fatalf("%s: %v", opNames[s.Op], err)
			}
		}
	}
	return o
}

func passAll(t *testing.T, what string, checks []workload.Check) {
	t.Helper()
	if len(checks) == 0 {
		t.Errorf("%s: no checks", what)
	}
	for _, c := range checks {
		if !c.Passed {
			t.Errorf("%s: check %s failed: %s", what, c.Name, c.Detail)
		}
	}
}

// The same seeded decks, run by one client in process and by one remote
// client against a business tier of each protocol on a database loaded
// alike: the same outcomes operation by operation, the checks passing,
// the same database left behind, and exactly one remote call per
// operation, its bytes counted both ways.
func TestRemoteClientsMatchInProcess(t *testing.T) {
	t.Parallel()
	const iterations = 3
	storetest.Each(t, func(t *testing.T, dsn string) {
		t.Parallel() // the backends side by side, each on databases of its own
		for _, persistence := range []container.Persistence{container.Direct, container.CMP} {
			t.Run(string(persistence), func(t *testing.T) {
				params := workload.RunParams{Scale: 1, Persistence: persistence, Threads: 2}
				if persistence.Container() {
					params.Entities = entitySettings(t, raw(string(persistence), "B", "10%", "database"))
				}
				ctx := context.Background()
				// One database for the run in process, one for each
				// protocol's tier, loaded alike.
				dbs := loadedLike(t, dsn, 1+len(remote.Protocols), 2)
				db := dbs[0]
				r, err := New().Start(ctx, db, params)
				if err != nil {
					t.Fatal(err)
				}
				want := runDeck(t, withTestPopulation(t, r), iterations)
				checks, err := r.Check(ctx, workload.Outcomes{Succeeded: want.succeeded[:]})
				if err != nil {
					t.Fatal(err)
				}
				passAll(t, "in process", checks)
				wantDump := dump(t, db)
				if want.succeeded[BuyStock] == 0 || want.business == [numOps]int64{} {
					t.Fatalf("outcomes %+v: the decks should both trade and meet business exceptions", want)
				}

				for i, p := range remote.Protocols {
					t.Run(string(p), func(t *testing.T) {
						t.Parallel()
						db := dbs[1+i]
						checker, err := New().Checker(ctx, db, params)
						if err != nil {
							t.Fatal(err)
						}
						conn := serveBusiness(t, p, db, params)
						cp := params
						cp.Options = Options{Tiering: workload.Tiering{Protocol: string(p)}}
						r, err := New().RemoteClients(ctx, conn, cp)
						if err != nil {
							t.Fatal(err)
						}
						got := runDeck(t, withTestPopulation(t, r), iterations)
						if got != want {
							t.Errorf("outcomes by operation:\n remote     %+v\n in process %+v", got, want)
						}
						if checks, err := r.Check(ctx, workload.Outcomes{Succeeded: got.succeeded[:]}); err != nil || checks != nil {
							t.Errorf("the clients' own Check = %v, %v; want nothing (the database is not theirs)", checks, err)
						}
						checks, err := checker.Check(ctx, workload.Outcomes{Succeeded: got.succeeded[:]})
						if err != nil {
							t.Fatal(err)
						}
						passAll(t, "remote", checks)
						if d := dump(t, db); d != wantDump {
							t.Errorf("the remote run left another database: %s", firstDifference(d, wantDump))
						}

						tiers := r.(workload.TieredRun).Tiers()
						if tiers.Style != "session" || tiers.Protocol != string(p) || tiers.Processes != 2 || len(tiers.Calls) != numOps {
							t.Fatalf("tiers %+v; want session, %s, 2 processes, %d operations", tiers, p, numOps)
						}
						for op, c := range tiers.Calls {
							if c.Name != opNames[op] || c.Pages != got.done[op] || c.Calls != got.done[op] || c.Failed != got.business[op] {
								t.Errorf("%s: %+v; want %s, %d operations and as many calls, %d failed (the business exceptions)",
									opNames[op], c, opNames[op], got.done[op], got.business[op])
							}
							if c.BytesOut <= 0 || c.BytesIn <= 0 || c.Bean <= 0 || c.Bean > c.Call {
								t.Errorf("%s: %d bytes out, %d in, bean %v of call %v; want bytes both ways and the bean within the call",
									opNames[op], c.BytesOut, c.BytesIn, c.Bean, c.Call)
							}
						}

						// The checker's baseline is the database before the
						// remote run: a holding changed behind its back shows.
						exec(t, db, "UPDATE StockHolding SET amount = amount + 1 WHERE sub_accno = 17 AND stock_id = (SELECT MIN(stock_id) FROM StockHolding WHERE sub_accno = 17)")
						checks, err = checker.Check(ctx, workload.Outcomes{Succeeded: got.succeeded[:]})
						if err != nil {
							t.Fatal(err)
						}
						if i := slices.IndexFunc(checks, func(c workload.Check) bool { return c.Name == "holdings-match-transactions" }); i < 0 || checks[i].Passed {
							t.Errorf("after corrupting a holding: %+v; want holdings-match-transactions failed", checks)
						}
					})
				}
			})
		}
	})
}

// Terminals at once on fewer server threads: each call waits for a
// thread, the calls counted per operation across clients (read while they
// run, as the progress line does), and the database consistent after.
func TestRemoteClientsConcurrent(t *testing.T) {
	t.Parallel()
	const clients, threads, iterations = 4, 2, 2
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := loadedAt(t, dsn, threads)
		params := workload.RunParams{Scale: 1, Persistence: container.Direct, Threads: threads}
		checker, err := New().Checker(ctx, db, params)
		if err != nil {
			t.Fatal(err)
		}
		var succeededAll [numOps]int64
		for _, p := range remote.Protocols {
			t.Run(string(p), func(t *testing.T) {
				r, err := New().RemoteClients(ctx, serveBusiness(t, p, db, params), params)
				if err != nil {
					t.Fatal(err)
				}
				withTestPopulation(t, r)
				tiers := r.(workload.TieredRun)
				var (
					mu                    sync.Mutex
					done, succeeded, outs [numOps]int64
					wg                    sync.WaitGroup
				)
				for id := range clients {
					c := r.NewClient(0, id, rand.New(rand.NewPCG(11, uint64(id))))
					wg.Go(func() {
						deck := rand.New(rand.NewPCG(12, uint64(id)))
						for range iterations {
							for _, s := range dealForTest(deck) {
								// The driver numbers its own threads; the
								// business tier chooses the bean's.
								s.Thread = id
								var err error
								for attempt := 0; attempt < 20; attempt++ {
									err = c.Do(ctx, s)
									mu.Lock()
									done[s.Op]++
									mu.Unlock()
									if !store.Retryable(err) {
										break
									}
								}
								mu.Lock()
								switch {
								case err == nil:
									succeeded[s.Op]++
								case workload.IsBusiness(err):
								default:
									t.Errorf("%s: %v", opNames[s.Op], err)
								}
								outs[s.Op]++
								mu.Unlock()
								tiers.Tiers()
							}
						}
					})
				}
				wg.Wait()
				for op, c := range tiers.Tiers().Calls {
					if c.Pages != done[op] || c.Calls != done[op] {
						t.Errorf("%s: %d operations, %d calls; want %d of each", opNames[op], c.Pages, c.Calls, done[op])
					}
				}
				if want := int64(clients * iterations * 43); sum(outs[:]) != want {
					t.Errorf("%d operations ended, want %d", sum(outs[:]), want)
				}
				// The protocols' runs add up on the one database.
				for op := range succeeded {
					succeededAll[op] += succeeded[op]
				}
			})
		}
		checks, err := checker.Check(ctx, workload.Outcomes{Succeeded: succeededAll[:]})
		if err != nil {
			t.Fatal(err)
		}
		passAll(t, "after concurrent remote clients", checks)
	})
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// A business tier cannot lend more threads than its database has
// sessions.
func TestServeBusinessThreads(t *testing.T) {
	db := loadedAt(t, storetest.SQLite(t), 2)
	_, err := New().ServeBusiness(context.Background(), db, remote.NewServer(remote.GRPC, remote.ServerOptions{}),
		workload.RunParams{Scale: 1, Persistence: container.Direct, Threads: 3})
	if err == nil || !strings.Contains(err.Error(), "3 server threads") || !strings.Contains(err.Error(), "sessions for 2") {
		t.Errorf("3 threads on 2 sessions: %v; want an error naming both", err)
	}
}

// Every business exception of section 3.3 comes back from the business
// tier as the same sentinel error, a business outcome for the driver, in
// one call the layer counts as failed.
func TestRemoteBusinessExceptions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		db := loadedAt(t, dsn, 2)
		exec(t, db, "UPDATE SubAccount SET sub_credit = 0 WHERE sub_accno = 2")
		held := queryInt(t, db, "SELECT MIN(stock_id) FROM StockHolding WHERE sub_accno = 1")
		cases := []struct {
			name string
			call func(context.Context, facade) error
			want error
		}{
			{"update of a missing account", func(ctx context.Context, f facade) error { return f.updateAccount(ctx, 99999, 1) }, ErrUnknownAccount},
			{"buy for a missing account", func(ctx context.Context, f facade) error { return f.buy(ctx, trade{99999, 1, 1}) }, ErrUnknownAccount},
			{"query of a missing stock", func(ctx context.Context, f facade) error { _, err := f.queryByID(ctx, 99999); return err }, ErrUnknownStock},
			{"query of a missing code", func(ctx context.Context, f facade) error { _, err := f.queryByCode(ctx, "NOPE"); return err }, ErrUnknownStock},
			{"buy without credit", func(ctx context.Context, f facade) error { return f.buy(ctx, trade{2, 1, 1}) }, ErrInsufficientCredit},
			{"sale of a stock never held", func(ctx context.Context, f facade) error { return f.sell(ctx, trade{2, 99999, 1}) }, ErrNoHolding},
			{"sale of more than held", func(ctx context.Context, f facade) error { return f.sell(ctx, trade{1, held, 1 << 40}) }, ErrInsufficientHolding},
		}
		for _, p := range remote.Protocols {
			t.Run(string(p), func(t *testing.T) {
				f := newRemoteBean(serveBusiness(t, p, db, workload.RunParams{Scale: 1, Persistence: container.Direct}))
				for _, tc := range cases {
					var m remote.Meter
					err := tc.call(remote.WithMeter(context.Background(), &m), f)
					if err != tc.want || !workload.IsBusiness(err) {
						t.Errorf("%s: %v (%T); want the sentinel %q, a business exception", tc.name, err, err, tc.want)
					}
					if c := m.Counts(); c.Calls != 1 || c.Failed != 1 {
						t.Errorf("%s: %d calls, %d failed; want 1, 1 failed", tc.name, c.Calls, c.Failed)
					}
				}
				if n := queryInt(t, db, "SELECT COUNT(*) FROM StockTransaction"); n != 0 {
					t.Errorf("%d StockTransaction rows after refused trades, want 0", n)
				}
			})
		}
	})
}

// A failure the caller acts on keeps its class across the layer: an abort
// is retried by the driver, a commit in doubt reconciled by the checks,
// and a write whose reply never came may have committed.
func TestRemoteFailureClasses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bean      error
		op        int
		want      error
		retryable bool
	}{
		{"deadlock", fmt.Errorf("buy: %w", store.ErrDeadlock), BuyStock, store.ErrDeadlock, true},
		{"serialization", store.ErrSerialization, SellStock, store.ErrSerialization, true},
		{"lock timeout", store.ErrLockTimeout, UpdateAccount, store.ErrLockTimeout, true},
		{"in doubt", store.ErrInDoubt, CreateAccount, store.ErrInDoubt, false},
		{"unreachable database", store.ErrUnreachable, BuyStock, store.ErrUnreachable, false},
		{"connection lost", store.ErrConnectionLost, SellStock, store.ErrConnectionLost, false},
		{"another failure", errors.New("disk full"), CreateAccount, nil, false},
	} {
		err := remoteError(tc.op, errorStatus(tc.bean))
		if tc.want != nil && !errors.Is(err, tc.want) || store.Retryable(err) != tc.retryable || workload.IsBusiness(err) {
			t.Errorf("%s: %v; want %v, retryable %v", tc.name, err, tc.want, tc.retryable)
		}
		if tc.want != store.ErrInDoubt && errors.Is(err, store.ErrInDoubt) {
			t.Errorf("%s: %v in doubt; the bean answered that it did not commit", tc.name, err)
		}
		if got, want := status.Code(err), status.Code(remote.FailureStatus(tc.bean)); got != want {
			t.Errorf("%s: code %v, want FailureStatus's %v", tc.name, got, want)
		}
	}

	// A tier that is not there: the writes may have reached it, as far as
	// the caller can tell; the reads did nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, p := range remote.Protocols {
		conn, err := remote.Dial(p, addr, remote.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f := newRemoteBean(conn)
		ctx := context.Background()
		if err := f.buy(ctx, trade{1, 1, 1}); !errors.Is(err, store.ErrInDoubt) || status.Code(err) != codes.Unavailable {
			t.Errorf("%s: buy from a tier not there: %v; want in doubt, Unavailable", p, err)
		}
		if _, err := f.queryByID(ctx, 1); errors.Is(err, store.ErrInDoubt) || status.Code(err) != codes.Unavailable {
			t.Errorf("%s: query of a tier not there: %v; want Unavailable, not in doubt", p, err)
		}
		conn.Close()
	}
}

// The remote bean's calls against the in-process bean's and the generated
// client's (a request and a reply allocated per call): allocations are the
// client's and the server's together, the server's the same in both.
func BenchmarkRemoteBean(b *testing.B) {
	ctx := context.Background()
	db := loadedWith(b, storetest.SQLite(b), 1, populationAt(1))
	params := workload.RunParams{Scale: 1, Persistence: container.Direct}
	beans, _, err := newBusiness(ctx, db, params)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, ctx context.Context, query func(context.Context, int64) error) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := query(ctx, 1+int64(i)%3000); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("in-process", func(b *testing.B) {
		run(b, ctx, func(ctx context.Context, stock int64) error { _, err := beans[0].queryByID(ctx, stock); return err })
	})
	for _, p := range remote.Protocols {
		conn := serveBusiness(b, p, db, params)
		b.Run(string(p)+"/generated-client", func(b *testing.B) {
			c := pb.NewBrokerClient(conn)
			run(b, ctx, func(ctx context.Context, stock int64) error {
				_, err := c.QueryById(ctx, &pb.QueryByIdRequest{Stock: stock})
				return err
			})
		})
		b.Run(string(p)+"/remote-bean", func(b *testing.B) {
			f := newRemoteBean(conn)
			var m remote.Meter
			run(b, remote.WithMeter(ctx, &m), func(ctx context.Context, stock int64) error { _, err := f.queryByID(ctx, stock); return err })
			c := m.Counts()
			b.ReportMetric(float64(c.BytesOut+c.BytesIn)/float64(c.Calls), "bytes/call")
		})
	}
}

// The exchanges docs/openapi/stockonline.yaml describes, as a client
// other than ours sees them: int64s as strings, a business exception as
// HTTP 400 and a google.rpc.Status naming it, the bean's time in a header.
func TestHTTPExchanges(t *testing.T) {
	db := loadedAt(t, storetest.SQLite(t), 1)
	_, addr := serveAt(t, remote.HTTP, db, workload.RunParams{Scale: 1, Persistence: container.Direct})
	quote := func(col string) string {
		return strconv.FormatInt(queryInt(t, db, "SELECT "+col+" FROM StockItem WHERE stock_id = 5"), 10)
	}
	stock5 := map[string]any{"current": quote("current_value"), "high": quote("high_value"), "low": quote("low_value")}
	for _, tc := range []struct {
		method, body string
		status       int
		// reply: the JSON reply's members, all of them, or only the
		// ones named when some is nil.
		reply map[string]any
	}{
		{"QueryById", `{"stock": "5"}`, 200, stock5},
		{"QueryById", `{"stock": 5}`, 200, stock5},
		{"QueryByCode", `{"code": "` + StockCode(5) + `"}`, 200, stock5},
		{"UpdateAccount", `{"account": "1", "credit": "1"}`, 200, map[string]any{}},
		{"UpdateAccount", `{"account": "99999", "credit": "1"}`, 400, map[string]any{"code": 9.0, "message": "unknown account",
			"details": []any{map[string]any{"@type": "type.googleapis.com/tierbench.stockonline.BusinessException", "reason": "UNKNOWN_ACCOUNT"}}}},
		{"QueryById", `{"stock": "five"}`, 400, map[string]any{"code": 3.0, "message": nil}},
	} {
		resp, err := http.Post("http://"+addr+"/tierbench.stockonline.Broker/"+tc.method, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: reply: %v", tc.method, tc.body, err)
		}
		want := tc.reply
		if slices.Contains(slices.Collect(maps.Values(want)), nil) {
			want = maps.Clone(want)
			for k, v := range want {
				if v == nil {
					want[k] = got[k]
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					delete(got, k)
				}
			}
		}
		if resp.StatusCode != tc.status || !reflect.DeepEqual(got, want) || resp.Header.Get("tierbench-bean-ns") == "" {
			t.Errorf("%s %s: HTTP %d %v, bean time %q; want %d %v and a bean time",
				tc.method, tc.body, resp.StatusCode, got, resp.Header.Get("tierbench-bean-ns"), tc.status, want)
		}
	}
}

// openAPI is the part of docs/openapi/stockonline.yaml the test reads.
type openAPI struct {
	OpenAPI string                          `yaml:"openapi"`
	Paths   map[string]map[string]operation `yaml:"paths"`
	Comps   struct {
		Schemas map[string]schema `yaml:"schemas"`
	} `yaml:"components"`
}

type operation struct {
	RequestBody struct {
		Content map[string]struct {
			Schema schema `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema schema `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"responses"`
}

type schema struct {
	Ref        string            `yaml:"$ref"`
	Properties map[string]schema `yaml:"properties"`
	Items      *schema           `yaml:"items"`
	Enum       []string          `yaml:"enum"`
	// AllOf: a $ref with a description of its own is written as allOf
	// of the one $ref.
	AllOf []schema `yaml:"allOf"`
}

// ref is the schema's $ref, written alone or as allOf of one.
func (s schema) ref() string {
	if s.Ref == "" && len(s.AllOf) == 1 {
		return s.AllOf[0].Ref
	}
	return s.Ref
}

const schemaPrefix = "#/components/schemas/"

// The OpenAPI document of the http protocol describes the Broker service
// as it is: a path for every rpc and none other, and for every message a
// request or a reply carries, down to the messages inside them, a schema
// whose properties are the message's protojson names; the error reply is
// a google.rpc.Status.
func TestOpenAPIMatchesBroker(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/openapi/stockonline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPI
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	svc := pb.File_broker_proto.Services().ByName("Broker")
	if svc == nil {
		t.Fatal("no Broker service in broker.proto")
	}

	checked := make(map[protoreflect.FullName]bool)
	var checkMessage func(where string, s schema, md protoreflect.MessageDescriptor)
	checkMessage = func(where string, s schema, md protoreflect.MessageDescriptor) {
		name, ok := strings.CutPrefix(s.Ref, schemaPrefix)
		if !ok {
			t.Errorf("%s: schema %+v, want a $ref to %s%s", where, s, schemaPrefix, md.Name())
			return
		}
		if name != string(md.Name()) {
			t.Errorf("%s: schema %s, want %s", where, name, md.Name())
		}
		if checked[md.FullName()] {
			return
		}
		checked[md.FullName()] = true
		def, ok := doc.Comps.Schemas[name]
		if !ok {
			t.Errorf("%s: no schema %s", where, name)
			return
		}
		var want, got []string
		fields := md.Fields()
		for i := range fields.Len() {
			want = append(want, fields.Get(i).JSONName())
		}
		for p := range def.Properties {
			got = append(got, p)
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s has properties %v; %s's protojson names are %v", name, got, md.FullName(), want)
			return
		}
		for i := range fields.Len() {
			f := fields.Get(i)
			prop := def.Properties[f.JSONName()]
			switch f.Kind() {
			case protoreflect.EnumKind:
				var names []string
				values := f.Enum().Values()
				for j := range values.Len() {
					names = append(names, string(values.Get(j).Name()))
				}
				if !slices.Equal(prop.Enum, names) {
					t.Errorf("schema %s: %s's enum %v, want %s's %v", name, f.JSONName(), prop.Enum, f.Enum().FullName(), names)
				}
				continue
			case protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Fixed64Kind:
				// protojson writes 64-bit integers as strings.
				if !f.IsList() && prop.ref() != schemaPrefix+"Int64" {
					t.Errorf("schema %s: %s is a 64-bit integer, want a $ref to %sInt64", name, f.JSONName(), schemaPrefix)
				}
				continue
			}
			if f.Kind() != protoreflect.MessageKind || f.Message().FullName() == "google.protobuf.Any" {
				continue
			}
			if f.IsList() {
				if prop.Items == nil {
					t.Errorf("schema %s: %s is a list without items", name, f.JSONName())
					continue
				}
				prop = *prop.Items
			}
			checkMessage(name+"."+f.JSONName(), prop, f.Message())
		}
	}
	jsonOf := func(where string, content map[string]struct {
		Schema schema `yaml:"schema"`
	}) schema {
		c, ok := content["application/json"]
		if !ok {
			t.Errorf("%s: no application/json content", where)
		}
		return c.Schema
	}

	rpcs := make(map[string]bool)
	methods := svc.Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		path := "/" + string(svc.FullName()) + "/" + string(m.Name())
		rpcs[path] = true
		ops, ok := doc.Paths[path]
		if !ok {
			t.Errorf("rpc %s has no path %s", m.Name(), path)
			continue
		}
		op, ok := ops["post"]
		if !ok || len(ops) != 1 {
			t.Errorf("%s: methods %v, want post alone", path, slices.Sorted(maps.Keys(ops)))
			continue
		}
		checkMessage(path+" request", jsonOf(path+" request", op.RequestBody.Content), m.Input())
		ok200, ok := op.Responses["200"]
		if !ok {
			t.Errorf("%s: no 200 reply", path)
			continue
		}
		checkMessage(path+" reply", jsonOf(path+" reply", ok200.Content), m.Output())
		def, ok := op.Responses["default"]
		if !ok {
			t.Errorf("%s: no default (error) reply", path)
			continue
		}
		checkMessage(path+" error", jsonOf(path+" error", def.Content), (&spb.Status{}).ProtoReflect().Descriptor())
	}
	for path := range doc.Paths {
		if !rpcs[path] {
			t.Errorf("path %s is no rpc of %s", path, svc.FullName())
		}
	}
	// The details a caller decodes.
	for _, md := range []protoreflect.MessageDescriptor{
		(&pb.BusinessException{}).ProtoReflect().Descriptor(),
	} {
		checkMessage("detail", schema{Ref: schemaPrefix + string(md.Name())}, md)
	}
	// A failure's ErrorInfo: its properties, and the reasons FailureStatus
	// gives, each documented and none other.
	info := doc.Comps.Schemas["ErrorInfo"]
	if got := slices.Sorted(maps.Keys(info.Properties)); !slices.Equal(got, []string{"domain", "metadata", "reason"}) {
		t.Errorf("schema ErrorInfo has properties %v, want google.rpc.ErrorInfo's domain, metadata, reason", got)
	}
	reasons := make(map[string]bool)
	for _, err := range []error{store.ErrDeadlock, store.ErrSerialization, store.ErrLockTimeout, store.ErrInDoubt,
		store.ErrUnreachable, store.ErrConnectionLost, errors.New("disk full")} {
		for _, d := range status.Convert(remote.FailureStatus(err)).Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok {
				reasons[ei.GetReason()] = true
			}
		}
	}
	if got, want := slices.Sorted(slices.Values(info.Properties["reason"].Enum)), slices.Sorted(maps.Keys(reasons)); !slices.Equal(got, want) {
		t.Errorf("ErrorInfo's documented reasons %v, FailureStatus gives %v", got, want)
	}
}
