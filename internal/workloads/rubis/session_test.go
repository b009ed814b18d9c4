package rubis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
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

// serveRemote starts a business tier of protocol p answering with a on
// threads threads, on a loopback port, and returns the Auction that calls
// it; the tier stops with the test.
func serveRemote(t testing.TB, p remote.Protocol, a Auction, threads int) Auction {
	t.Helper()
	return serveStyleRemote(t, "session", p, a, threads, container.Generated, nil)
}

// serveRemoteBy is serveRemote with its bean invoked as d says.
func serveRemoteBy(t testing.TB, p remote.Protocol, a Auction, threads int, d container.Dispatch) Auction {
	t.Helper()
	return serveStyleRemote(t, "session", p, a, threads, d, nil)
}

// serveStyleRemote is serveRemote in style, its beans invoked as d says
// (whose facade-remote's entity calls entityCalls counts).
func serveStyleRemote(t testing.TB, style string, p remote.Protocol, a Auction, threads int, d container.Dispatch, entityCalls *remote.Meter) Auction {
	t.Helper()
	b, err := startBusinessTier(style, a, threads, p, d, entityCalls, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.close(); err != nil {
			t.Errorf("business tier: %v", err)
		}
	})
	return RemoteAuction(b.conn)
}

// directAt is the direct tier on dsn loaded at base, its clock stopped
// there: the same data as setupDirect's for the same base.
func directAt(t *testing.T, dsn string, base time.Time) (*Servlets, *store.DB) {
	t.Helper()
	ctx := context.Background()
	populate(t, dsn, testSeed, base)
	db := storetest.Open(t, dsn, store.Options{Threads: testThreads})
	d, err := NewServlets(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	d.now = func() time.Time { return base }
	return d, db
}

// TestRemoteAuctionMatchesDirect runs the script of
// TestContainerMatchesDirect through the direct tier in process, and
// through RemoteAuction to a tier of each protocol serving the direct tier
// on its own database loaded alike. Every result must be the same Go
// value (times to the nanosecond and location, nil lists nil), every page
// error the same *PageError, every interaction exactly one remote call
// (failed when it is a page error), and at the end every row of every
// table the same; under both dispatches (the bean invoked by its
// generated handler, or by reflection).
func TestRemoteAuctionMatchesDirect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		d := setupDirect(t, dsn)
		f := newFixture(d.q, d.pop, d.base)
		steps := script(f)
		type result struct {
			res any
			err error
		}
		want := make([]result, len(steps))
		direct := tier{a: d.d, setNow: func(at time.Time) { d.d.now = func() time.Time { return at } }}
		for i, s := range steps {
			res, err := s.do(ctx, direct)
			outcome(t, "direct: "+s.name, res, err)
			want[i] = result{res, err}
		}
		wantRows := tableRows(t, d.db)

		type cell struct {
			p remote.Protocol
			d container.Dispatch
		}
		cells := []cell{{remote.HTTP, container.Generated}, {remote.GRPC, container.Generated}, {remote.GRPC, container.Reflect}}
		for ci, c := range cells {
			p := c.p
			name := string(p)
			if c.d != container.Generated {
				name += "-" + string(c.d)
			}
			t.Run(name, func(t *testing.T) {
				storetest.ShareCell(t, dsn, ci)
				t.Parallel()
				behind, db := directAt(t, freshDSN(t, d.db.Dialect()), d.base)
				if got := newFixture(storetest.Querier{T: t, DB: db}, d.pop, d.base); got != f {
					t.Fatalf("fixture %+v, direct's %+v: the loads differ", got, f)
				}
				a := serveRemoteBy(t, p, behind, testThreads, c.d)
				x := tier{a: a, setNow: func(at time.Time) { behind.now = func() time.Time { return at } }}
				for i, s := range steps {
					var m remote.Meter
					res, err := s.do(remote.WithMeter(ctx, &m), x)
					w := want[i]
					if got, wantText := outcome(t, string(p)+": "+s.name, res, err), outcome(t, s.name, w.res, w.err); got != wantText {
						t.Errorf("%s:\n remote %s\n direct %s", s.name, got, wantText)
					} else if w.err == nil && !reflect.DeepEqual(res, w.res) {
						t.Errorf("%s: the same text, other Go values:\n remote %#v\n direct %#v", s.name, res, w.res)
					}
					if w.err != nil {
						if pe, ok := err.(*PageError); !ok || *pe != *w.err.(*PageError) {
							t.Errorf("%s: error %T %v, want the *PageError %+v", s.name, err, err, w.err)
						}
					}
					// The clock's step calls nothing.
					wantCalls := int64(1)
					if w.res == nil && w.err == nil {
						wantCalls = 0
					}
					wantFailed := int64(0)
					if w.err != nil {
						wantFailed = 1
					}
					if c := m.Counts(); c.Calls != wantCalls || c.Failed != wantFailed {
						t.Errorf("%s: %d remote calls, %d failed; want %d, %d failed", s.name, c.Calls, c.Failed, wantCalls, wantFailed)
					}
				}
				compareRows(t, "remote", tableRows(t, db), wantRows)
			})
		}
	})
}

// heldAuction is a business tier whose ViewItem says which thread it runs
// on and then holds it until released, so a test sees which calls are
// inside the tier at once. It answers nothing else.
type heldAuction struct {
	Auction
	entered chan heldCall
	release chan struct{}
}

type heldCall struct {
	item   int64
	thread int
}

func (h heldAuction) ViewItem(ctx context.Context, thread int, r ViewItemRequest) (ViewItemResult, error) {
	h.entered <- heldCall{r.ItemID, thread}
	select {
	case <-h.release:
	case <-ctx.Done():
		return ViewItemResult{}, ctx.Err()
	}
	return ViewItemResult{ItemPrice: ItemPrice{Item: Item{ID: r.ItemID}}}, nil
}

// TestRemoteAuctionThreads: a tier of 2 threads runs 2 calls at once,
// each on its own thread number whatever the caller passed; a third waits
// outside the bean, and gives up at its deadline without entering it; a
// thread freed goes to the next call.
func TestRemoteAuctionThreads(t *testing.T) {
	for _, p := range remote.Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h := heldAuction{entered: make(chan heldCall, 4), release: make(chan struct{})}
			a := serveRemote(t, p, h, 2)
			results := make(chan int64, 3)
			view := func(item int64) {
				res, err := a.ViewItem(ctx, 7, ViewItemRequest{ItemID: item})
				if err != nil {
					t.Errorf("ViewItem %d: %v", item, err)
				}
				results <- res.ID
			}
			go view(1)
			go view(2)
			threadOf := map[int64]int{}
			for range 2 {
				c := <-h.entered
				threadOf[c.item] = c.thread
			}
			if len(threadOf) != 2 || threadOf[1] == threadOf[2] || min(threadOf[1], threadOf[2]) != 0 || max(threadOf[1], threadOf[2]) != 1 {
				t.Fatalf("calls entered on threads %v, want 0 and 1", threadOf)
			}

			// Both threads held: the deadline, not the bean, ends this one.
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_, err := a.ViewItem(short, 7, ViewItemRequest{ItemID: 3})
			cancel()
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("a third call while both threads are held: %v, want DeadlineExceeded", err)
			}
			select {
			case c := <-h.entered:
				t.Fatalf("a third call entered the bean on thread %d with both threads held", c.thread)
			default:
			}

			h.release <- struct{}{}
			freed := threadOf[<-results]
			go view(4)
			// The tier may learn that the third call's caller is gone after
			// its caller does (gRPC's deadline runs from the call's arrival;
			// HTTP sees the connection closed): the freed thread can go to
			// it first, and it ends at once.
			for c := range h.entered {
				if c.thread != freed || (c.item != 3 && c.item != 4) {
					t.Fatalf("after one release a call entered as %+v, want item 4 on the freed thread %d", c, freed)
				}
				if c.item == 4 {
					break
				}
			}
			h.release <- struct{}{}
			h.release <- struct{}{}
			got := map[int64]bool{<-results: true, <-results: true}
			if len(got) != 2 || !got[4] {
				t.Errorf("results %v, want the held call's and item 4", got)
			}
		})
	}
}

// failingAuction fails every ViewItem with err.
type failingAuction struct {
	Auction
	err error
}

func (f failingAuction) ViewItem(context.Context, int, ViewItemRequest) (ViewItemResult, error) {
	return ViewItemResult{}, f.err
}

// TestRemoteAuctionErrors: a failure of the business tier reaches the
// caller on both protocols as the status its class maps to, with the
// tier's message whole and the method named; it is never a page error.
// A page error wrapped by the tier still arrives as the bare *PageError.
func TestRemoteAuctionErrors(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	for _, tc := range []struct {
		name  string
		err   error
		code  codes.Code
		class error // kept across the layer
	}{
		{"unreachable", fmt.Errorf("item 5: %w", store.Classified(store.ErrUnreachable, refused)), codes.Unavailable, store.ErrUnreachable},
		{"connection lost", fmt.Errorf("item 5: %w", store.Classified(store.ErrConnectionLost, refused)), codes.Unavailable, store.ErrConnectionLost},
		{"deadlock", fmt.Errorf("bid on item 5: %w", store.Classified(store.ErrDeadlock, errors.New("deadlock detected"))), codes.Aborted, store.ErrDeadlock},
		{"in doubt", fmt.Errorf("register item %q: %w", "lamp", store.Classified(store.ErrInDoubt, refused)), codes.Internal, store.ErrInDoubt},
		{"unclassified", errors.New("rubis-item: sql: Scan error on column index 3"), codes.Internal, nil},
	} {
		for _, p := range remote.Protocols {
			t.Run(string(p)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				a := serveRemote(t, p, failingAuction{err: tc.err}, 1)
				_, err := a.ViewItem(context.Background(), 0, ViewItemRequest{ItemID: 5})
				if status.Code(err) != tc.code || IsPageError(err) {
					t.Fatalf("%v: %v, want %v", tc.err, err, tc.code)
				}
				if tc.class != nil && !errors.Is(err, tc.class) {
					t.Errorf("%v: lost its class %v across the layer", err, tc.class)
				}
				if want := "remote ViewItem: rpc error: code = " + tc.code.String() + " desc = " + tc.err.Error(); err.Error() != want {
					t.Errorf("error %q, want %q", err, want)
				}
			})
		}
	}
	for _, p := range remote.Protocols {
		t.Run(string(p)+"/wrapped page error", func(t *testing.T) {
			t.Parallel()
			pe := &PageError{Title: "Viewing item", Message: "Sorry, but this item does not exist."}
			a := serveRemote(t, p, failingAuction{err: fmt.Errorf("view: %w", pe)}, 1)
			_, err := a.ViewItem(context.Background(), 0, ViewItemRequest{ItemID: 5})
			if got, ok := err.(*PageError); !ok || *got != *pe {
				t.Errorf("error %T %v, want the *PageError %+v", err, err, pe)
			}
		})
	}
}

// fixedAuction answers AboutMe and the first page of
// SearchItemsByCategory with its own results, the other pages with an
// empty list, and keeps the AboutMe request it received.
type fixedAuction struct {
	Auction
	aboutMe AboutMeResult
	search  SearchItemsResult
	got     chan AboutMeRequest
}

func (f fixedAuction) AboutMe(_ context.Context, _ int, r AboutMeRequest) (AboutMeResult, error) {
	f.got <- r
	return f.aboutMe, nil
}

func (f fixedAuction) SearchItemsByCategory(_ context.Context, _ int, r SearchItemsByCategoryRequest) (SearchItemsResult, error) {
	if r.Page > 0 {
		return SearchItemsResult{Items: []ItemSummary{}}, nil
	}
	return f.search, nil
}

// TestRemoteAuctionRoundTrip: every kind of row, every field set apart
// from its neighbours, times to the nanosecond, the zero time, zero rows
// and nil lists arrive as the same Go values on both protocols. An empty
// list arrives nil, and a time in another location as the same instant
// in UTC: the two things the wire does not keep.
func TestRemoteAuctionRoundTrip(t *testing.T) {
	at := func(day, ns int) time.Time { return time.Date(2026, time.November, day, 10, 11, 12, ns, time.UTC) }
	item := func(id int64) Item {
		return Item{ID: id, Name: "lamp \u00e9\u00e8 \"'<", Description: "d", InitialPrice: 1.5, Quantity: 2, ReservePrice: 3.25, BuyNow: 4.125,
			NbOfBids: 5, MaxBid: 6.0625, StartDate: at(1, 1), EndDate: at(2, 999_999_999), Seller: 7, Category: 8, Old: id%2 == 1}
	}
	user := User{ID: 1, Firstname: "Ada", Lastname: "Lovelace", Nickname: "ada", Email: "ada@example.com", Rating: -3, Balance: 0.1,
		CreationDate: at(3, 123_456_789), Region: 9}
	comment := Comment{ID: 2, From: 3, FromNickname: "grace", ItemID: 4, Rating: 5, Date: at(4, 0), Text: "fine \x00 text"}
	want := AboutMeResult{User: user, Password: "secret",
		Bidding:  []AboutMeBid{{Item: item(11), YourMaxBid: 12.5, SellerNickname: "s"}, {}},
		Won:      []AboutMeWon{{Item: item(13), SellerNickname: "w"}},
		Bought:   []AboutMeBought{{Item: item(14), Qty: 2, Price: 8.25, Date: at(5, 5), SellerNickname: "b"}, {Item: Item{ID: 15}}},
		Selling:  []Item{item(16), {}},
		Sold:     nil,
		Comments: []Comment{comment, {}},
	}
	elsewhere := time.Date(2026, time.November, 25, 12, 0, 0, 7, time.FixedZone("CET", 3600))
	search := SearchItemsResult{Items: []ItemSummary{{ID: 1, Name: "n", InitialPrice: 1, MaxBid: 2, NbOfBids: 3, EndDate: elsewhere}}}
	for _, p := range remote.Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			f := fixedAuction{aboutMe: want, search: search, got: make(chan AboutMeRequest, 1)}
			a := serveRemote(t, p, f, 1)
			req := AboutMeRequest{Nickname: "ada", Password: "p\u00e4ss word"}
			got, err := a.AboutMe(context.Background(), 0, req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("AboutMe:\n got  %#v\n want %#v", got, want)
			}
			if r := <-f.got; r != req {
				t.Errorf("the tier received %+v, want %+v", r, req)
			}
			res, err := a.SearchItemsByCategory(context.Background(), 0, SearchItemsByCategoryRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if e := res.Items[0].EndDate; e != elsewhere.UTC() {
				t.Errorf("a time in CET arrived as %v, want %v", e, elsewhere.UTC())
			}
			if res, err := a.SearchItemsByCategory(context.Background(), 0, SearchItemsByCategoryRequest{Page: 1}); err != nil || res.Items != nil {
				t.Errorf("no items: %#v, %v; want nil", res.Items, err)
			}
		})
	}
}

// TestRemoteSitePages: the site over RemoteAuction serves byte for byte
// the pages the site over the direct tier serves, on the same database,
// page errors and refused parameters included.
func TestRemoteSitePages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		d := setupDirect(t, dsn)
		f := newFixture(d.q, d.pop, d.base)
		active := d.pop.FirstActiveItem()
		paths := []string{
			"/PHP/SearchItemsByCategory.php?category=1&categoryName=Antiques&page=0&nbOfItems=20",
			"/PHP/SearchItemsByCategory.php?category=7&categoryName=x&page=2&nbOfItems=5",
			"/PHP/SearchItemsByCategory.php?category=2&categoryName=x&page=50",
			"/PHP/ViewItem.php?itemId=" + strconv.FormatInt(active, 10),
			"/PHP/ViewItem.php?itemId=" + strconv.FormatInt(f.bid, 10),
			"/PHP/ViewItem.php?itemId=" + strconv.FormatInt(f.multi, 10),
			"/PHP/ViewItem.php?itemId=1",
			"/PHP/ViewItem.php?itemId=" + strconv.FormatInt(d.pop.Items()+100, 10),
			"/PHP/ViewItem.php?itemId=x",
			"/PHP/ViewBidHistory.php?itemId=" + strconv.FormatInt(f.bid, 10),
			"/PHP/ViewUserInfo.php?userId=17",
			"/PHP/AboutMe.php?nickname=" + nickname(11) + "&password=" + password(11),
		}
		local := NewSite(d.d, SiteOptions{Threads: testThreads})
		serve := func(s *Site, path string) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			return w
		}
		for _, p := range remote.Protocols {
			t.Run(string(p), func(t *testing.T) {
				a := serveRemote(t, p, d.d, testThreads)
				far := NewSite(a, SiteOptions{Threads: testThreads, Remote: true})
				for _, path := range paths {
					want, got := serve(local, path), serve(far, path)
					if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) {
						t.Errorf("%s: %d %v, in process %d %v", path, got.Code, got.Header(), want.Code, want.Header())
					}
					if g, w := got.Body.String(), want.Body.String(); g != w {
						t.Errorf("%s: the page differs from the one in process at byte %d", path, firstDifference(g, w))
					}
					if want.Body.Len() < 500 {
						t.Errorf("%s: a page of %d bytes: %s", path, want.Body.Len(), want.Body)
					}
				}
			})
		}
	})
}

func firstDifference(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// BenchmarkRemoteAuction: one ViewItem on a loaded SQLite database at
// scale 1, in process and through RemoteAuction on each protocol over
// loopback (caller and tier on the same cores; allocs/op counts both
// sides). The difference is what the communication layer costs a call.
//
//	go test -run '^$' -bench RemoteAuction -benchmem ./internal/workloads/rubis
func BenchmarkRemoteAuction(b *testing.B) {
	ctx := context.Background()
	db := storetest.Open(b, storetest.SQLite(b), store.Options{Threads: 2})
	if _, err := loadAt(ctx, db, workload.LoadParams{Scale: 1, Seed: testSeed}, time.Now()); err != nil {
		b.Fatal(err)
	}
	d, err := NewServlets(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	pop, err := populationAt(1)
	if err != nil {
		b.Fatal(err)
	}
	first := pop.FirstActiveItem()
	run := func(b *testing.B, ctx context.Context, a Auction) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := a.ViewItem(ctx, 0, ViewItemRequest{ItemID: first + int64(i)%pop.ActiveItems}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, ctx, d) })
	for _, p := range remote.Protocols {
		b.Run(string(p), func(b *testing.B) {
			a := serveRemote(b, p, d, 1)
			var m remote.Meter
			run(b, remote.WithMeter(ctx, &m), a)
			c := m.Counts()
			calls := float64(c.Calls)
			b.ReportMetric(float64(c.BytesOut)/calls, "bytes-out/call")
			b.ReportMetric(float64(c.BytesIn)/calls, "bytes-in/call")
			b.ReportMetric(float64(c.Layer())/calls, "layer-ns/call")
		})
	}
}
