package rubis

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// TestStylesCountTheirCalls: a site built in each style answers the same
// pages, and the remote layer counts exactly the calls the style makes: one
// per page that touches data under session and facade, none for a static
// page, none at all in-process (servlets, local).
func TestStylesCountTheirCalls(t *testing.T) {
	b := setupDirect(t, storetest.SQLite(t))
	item := strconv.FormatInt(b.pop.FirstActiveItem()+2, 10)
	pages := []string{"/PHP/index.html", "/PHP/ViewItem.php?itemId=" + item,
		"/PHP/SearchItemsByCategory.php?category=1&categoryName=x&page=0&nbOfItems=20", "/PHP/ViewItem.php?itemId=" + item}
	for _, tc := range []struct {
		style, protocol string
		persistence     container.Persistence
		remote          bool
	}{
		{"servlets", "http", container.Direct, false},
		{"session", "http", container.Direct, true},
		{"session", "grpc", container.Direct, true},
		{"facade", "http", container.CMP, true},
		{"facade", "grpc", container.CMP, true},
		{"local", "http", container.CMP, false},
	} {
		t.Run(tc.style+"/"+tc.protocol, func(t *testing.T) {
			cfg := config.New("rubis", Workload{}.Info().Defaults)
			cfg.Style, cfg.Protocol, cfg.Persistence = tc.style, tc.protocol, tc.persistence
			entities := map[string]container.Settings{}
			for _, e := range entityTypes {
				entities[e.Name] = cfg.Container()
			}
			s, err := Workload{}.Site(context.Background(), b.db, workload.RunParams{Config: cfg, Threads: testThreads, Persistence: tc.persistence, Entities: entities})
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
				"/PHP/index.html": {1, 0}, "/PHP/ViewItem.php": {2, 0}, "/PHP/SearchItemsByCategory.php": {1, 0},
			}
			if tc.remote {
				want["/PHP/ViewItem.php"] = [2]int64{2, 2}
				want["/PHP/SearchItemsByCategory.php"] = [2]int64{1, 1}
			}
			if len(tiers.Calls) != len(want) {
				t.Errorf("calls %+v, want %d scripts", tiers.Calls, len(want))
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
