package rubis

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// TestStylesCountTheirCalls: a site built in each style answers the same
// pages, and the remote layer counts exactly the calls the style makes: one
// per page that touches data under session and facade, one per finder,
// field access and transaction boundary under entity, none for a static
// page, none at all in-process (servlets, local).
func TestStylesCountTheirCalls(t *testing.T) {
	b := setupDirect(t, storetest.SQLite(t))
	// An open auction of one unit with bids (its price is the highest
	// bid), and one of several units with bids (its price comes from the
	// highest bids, sorted).
	one := b.q.Int("SELECT MIN(id) FROM items WHERE quantity = 1 AND id IN (SELECT item_id FROM bids)")
	many := b.q.Int("SELECT MIN(id) FROM items WHERE quantity > 1 AND id IN (SELECT item_id FROM bids)")
	viewOne, viewMany := "/PHP/ViewItem.php?itemId="+strconv.FormatInt(one, 10), "/PHP/ViewItem.php?itemId="+strconv.FormatInt(many, 10)
	pages := []string{"/PHP/index.html", viewOne,
		"/PHP/SearchItemsByCategory.php?category=1&categoryName=x&page=0&nbOfItems=20", viewOne, viewMany}

	// The entity style's calls, from what Facade reads (facade.go). A
	// read-only interaction: Begin, its finders and field accesses, Commit
	// (the Rollback deferred after it makes no call); a bean's key comes
	// with its reference. The fields a conversion reads are counted by
	// running it.
	reads := func(from func(entityRef)) int64 {
		var n int64
		from(countingRef{entityRef: zeroRef{}, n: &n})
		return n
	}
	viewItem := func(id int64) int64 {
		nbids := b.q.Int("SELECT COUNT(*) FROM bids WHERE item_id = ?", id)
		quantity := b.q.Int("SELECT quantity FROM items WHERE id = ?", id)
		calls := 1 + // Begin
			1 + reads(func(r entityRef) { itemFrom(r, false) }) + // Find(Items), itemFrom
			1 + 1 + // nickname: Find(Users), its nickname
			1 + nbids + // FindBy(Bids, byItem), each bid's amount once
			1 // Commit
		if quantity > 1 {
			calls += min(nbids, quantity) // the quantity of each of the highest bids
		}
		return calls
	}
	found := min(20, b.q.Int("SELECT COUNT(*) FROM items WHERE category = 1 AND end_date >= ?", timeBase(time.Now())))
	search := 1 + // Begin
		1 + found*reads(func(r entityRef) { summaryFrom(r) }) + // FindBy(Items, byCategory), summaryFrom of each
		1 // Commit
	t.Logf("entity: ViewItem of items %d and %d: %d and %d calls; SearchItemsByCategory (%d items): %d calls", one, many, viewItem(one), viewItem(many), found, search)
	for _, tc := range []struct {
		style, protocol string
		persistence     container.Persistence
		remote          bool
	}{
		{"servlets", "http", container.Direct, false},
		{"session", "http", container.Direct, true},
		{"session", "grpc", container.Direct, true},
		{"session", "lean", container.Direct, true},
		{"facade", "http", container.CMP, true},
		{"facade", "grpc", container.CMP, true},
		{"facade", "lean", container.CMP, true},
		{"local", "http", container.CMP, false},
		{"entity", "http", container.CMP, true},
		{"entity", "grpc", container.CMP, true},
		{"entity", "lean", container.CMP, true},
		{FacadeRemote, "http", container.CMP, true},
		{FacadeRemote, "grpc", container.CMP, true},
		{FacadeRemote, "lean", container.CMP, true},
	} {
		t.Run(tc.style+"/"+tc.protocol, func(t *testing.T) {
			cfg := config.New("rubis", Workload{}.Info().Defaults)
			cfg.Persistence = tc.persistence
			o := DefaultOptions
			o.Style, o.Protocol = tc.style, tc.protocol
			entities := map[string]container.Settings{}
			for _, e := range entityTypes {
				entities[e.Name] = cfg.Container()
			}
			s, err := Workload{}.Site(context.Background(), b.db, workload.RunParams{Common: cfg, Options: o, Threads: testThreads, Persistence: tc.persistence, Entities: entities})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pages {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
				if rec.Code != http.StatusOK {
					t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
				}
			}
			tiers := s.(workload.TieredRun).Tiers()
			var entityCalls remote.Counts
			if es, ok := s.(entitySite); ok && es.entityCalls != nil {
				m := es.entityCalls
				entityCalls = m.Counts()
			}
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			wantProtocol := ""
			if tc.remote {
				wantProtocol = tc.protocol
			}
			if tiers.Style != tc.style || tiers.Protocol != wantProtocol || tiers.Processes != 1 {
				t.Errorf("tiers %q over %q in %d processes, want %q over %q in 1", tiers.Style, tiers.Protocol, tiers.Processes, tc.style, wantProtocol)
			}
			want := map[string][2]int64{ // pages, calls
				"/PHP/index.html": {1, 0}, "/PHP/ViewItem.php": {3, 0}, "/PHP/SearchItemsByCategory.php": {1, 0},
			}
			switch {
			case tc.style == "entity":
				want["/PHP/ViewItem.php"] = [2]int64{3, 2*viewItem(one) + viewItem(many)}
				want["/PHP/SearchItemsByCategory.php"] = [2]int64{1, search}
			case tc.remote:
				want["/PHP/ViewItem.php"] = [2]int64{3, 3}
				want["/PHP/SearchItemsByCategory.php"] = [2]int64{1, 1}
			}
			if len(tiers.Calls) != len(want) {
				t.Errorf("calls %+v, want %d scripts", tiers.Calls, len(want))
			}
			// facade-remote: the facade's pages make the entity style's
			// calls, between the business tier and its entity beans.
			var wantEntityCalls int64
			if tc.style == FacadeRemote {
				wantEntityCalls = 2*viewItem(one) + viewItem(many) + search
			}
			if entityCalls.Calls != wantEntityCalls || entityCalls.Failed != 0 {
				t.Errorf("the facade's calls to its entity beans: %d (%d failed), want %d", entityCalls.Calls, entityCalls.Failed, wantEntityCalls)
			}
			for _, c := range tiers.Calls {
				w, ok := want[c.Name]
				if !ok || c.Pages != w[0] || c.Calls != w[1] || c.Failed != 0 {
					t.Errorf("%s: %d pages, %d calls (%d failed), want %v", c.Name, c.Pages, c.Calls, c.Failed, w)
				}
				if (c.Calls > 0) != (c.BytesOut > 0 && c.BytesIn > 0 && c.Call > 0) {
					t.Errorf("%s: %d calls with %d B out, %d B in, %v", c.Name, c.Calls, c.BytesOut, c.BytesIn, c.Call)
				}
			}
		})
	}
}
