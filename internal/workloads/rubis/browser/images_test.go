package browser

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/tables"
)

// TestImagesFetchedApart: every <IMG SRC> of a page is fetched once per
// occurrence, after the page and before the next request, and counted in
// Stats (requests, bytes, time, failures), not in the page's outcome;
// SkipImages fetches none.
func TestImagesFetchedApart(t *testing.T) {
	t.Parallel()
	for _, skip := range []bool{false, true} {
		bu := setup(t)
		bu.cfg.SkipImages = skip
		jpgs := func() int {
			n := 0
			for _, r := range bu.site.requests() {
				if strings.HasSuffix(r, ".jpg") {
					n++
				}
			}
			return n
		}
		// The search page: the logo and 20 bid-now buttons.
		out, _ := bu.do(t, SearchItemsInCategory)
		if got := jpgs(); got != 0 {
			t.Fatalf("skip %v: %d images fetched with the page, want none before the next move", skip, got)
		}
		bu.b.Next()
		want := 21
		if skip {
			want = 0
		}
		st := bu.b.Stats()
		if out.Images != want || jpgs() != want || st.Images != int64(want) || st.ImageBytes != int64(want*1024) || st.ImageErrors != 0 {
			t.Fatalf("skip %v: page lists %d, site served %d, stats %+v; want %d images of 1024 B", skip, out.Images, jpgs(), st, want)
		}
		if !skip && (st.ImageTime <= 0 || st.ImageMax <= 0 || st.ImageMax > st.ImageTime) {
			t.Fatalf("image time %v, longest %v", st.ImageTime, st.ImageMax)
		}
		// Fetched once: a second Next fetches nothing more.
		bu.b.Next()
		if jpgs() != want {
			t.Fatalf("skip %v: %d images after a second move, want %d", skip, jpgs(), want)
		}
	}

	// A missing image is counted as failed and does not fail the page.
	bu := setup(t)
	bu.site.override = func(r *http.Request) (string, bool) {
		return `<IMG SRC="/PHP/none.jpg"><IMG SRC="/PHP/bid_now.jpg">` + searchPage, r.URL.Path == "/PHP/BrowseCategories.php"
	}
	if out, _ := bu.do(t, BrowseCategories); out.Images != 3 || out.ErrorPage {
		t.Fatalf("outcome %+v", out)
	}
	bu.b.Next()
	// The bytes are all that came, the 404's body too.
	if st := bu.b.Stats(); st.Images != 3 || st.ImageErrors != 1 || st.ImageBytes != 2048+int64(len("404 page not found\n")) {
		t.Fatalf("stats %+v, want 3 images, 1 failed, 2048 B and the 404's", st)
	}
}

// TestPageTries: a page that fails is sent again, 5 tries in all, a
// pause apart, as the original's callHTTPServer does; Tries 1 sends it
// once; a page cut short while read is not sent again.
func TestPageTries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		tries, fails      int
		wantSent, wantTry int
		wantErr           bool
	}{
		{"4 failures then the page", 0, 4, 5, 5, false},
		{"5 failures", 0, 5, 5, 5, true},
		{"no retry", 1, 1, 1, 1, true},
		{"2 tries", 2, 1, 2, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if sent.Add(1) <= int64(tc.fails) {
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
				w.Write([]byte("<html>home</html>"))
			}))
			defer srv.Close()
			cfg := testConfig(t, tables.Bidding, srv.URL)
			cfg.Tries, cfg.RetryPause = tc.tries, 20*time.Millisecond
			c := cfg.WithDefaults()
			b := New(&c, 0, rand.New(rand.NewPCG(1, 1)))
			defer b.Close()
			b.Next()
			began := time.Now()
			out, err := b.Do(context.Background(), Home)
			took := time.Since(began)
			if (err != nil) != tc.wantErr || int(sent.Load()) != tc.wantSent || out.Tries != tc.wantTry || b.Stats().Retries != int64(tc.wantTry-1) {
				t.Fatalf("err %v, sent %d, tries %d, retries %d; want error %v, %d sent, %d tries", err, sent.Load(), out.Tries, b.Stats().Retries, tc.wantErr, tc.wantSent, tc.wantTry)
			}
			if min := time.Duration(tc.wantTry-1) * 20 * time.Millisecond; took < min {
				t.Fatalf("%d tries in %v, want the pause between each (≥ %v)", out.Tries, took, min)
			}
		})
	}
	if c := (Config{}).WithDefaults(); c.Tries != 5 || c.RetryPause != time.Second {
		t.Fatalf("defaults: %d tries %v apart, want the original's 5, 1 s apart", c.Tries, c.RetryPause)
	}

	// Cut while read: not sent again.
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("<html>half"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	cfg := testConfig(t, tables.Bidding, srv.URL)
	cfg.RetryPause = time.Millisecond
	b := New(cfg, 0, rand.New(rand.NewPCG(1, 1)))
	defer b.Close()
	b.Next()
	if _, err := b.Do(context.Background(), Home); err == nil || sent.Load() != 1 {
		t.Fatalf("err %v after %d sent; want an error after 1", err, sent.Load())
	}
}

// TestRampSlowdown: think times drawn in the up-ramp are twice, in the
// down-ramp three times, those of the steady state, from the same draws.
func TestRampSlowdown(t *testing.T) {
	t.Parallel()
	base := testConfig(t, tables.Bidding, "http://rubis.test")
	base.Think = workload.ThinkTime{Scale: 1}.WithDefaults()
	thinks := func(r *Ramps) []time.Duration {
		cfg := *base
		cfg.Ramps = r
		cfg.Transport = handlerTransport{&fakeSite{descLen: 10}}
		b := New(&cfg, 0, rand.New(rand.NewPCG(7, 7)))
		var out []time.Duration
		for range 40 {
			m := b.Next()
			out = append(out, m.Think)
			if _, err := b.Do(context.Background(), m.State); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	steady := thinks(nil)
	up := thinks(&Ramps{Up: time.Hour, SteadyEnd: 2 * time.Hour, UpFactor: 2, DownFactor: 3})
	mid := thinks(&Ramps{Up: 0, SteadyEnd: time.Hour, UpFactor: 2, DownFactor: 3})
	down := thinks(&Ramps{Up: 0, SteadyEnd: 0, UpFactor: 2, DownFactor: 3})
	nonzero := 0
	for i := range steady {
		if up[i] != 2*steady[i] || mid[i] != steady[i] || down[i] != 3*steady[i] {
			t.Fatalf("move %d: think %v steady, %v up-ramp, %v mid, %v down-ramp; want ×2, ×1, ×3", i, steady[i], up[i], mid[i], down[i])
		}
		if steady[i] > 0 {
			nonzero++
		}
	}
	if nonzero < 30 {
		t.Fatalf("%d of 40 think times non-zero", nonzero)
	}
	// The phase follows the clock from the run's first request.
	r := &Ramps{Up: 50 * time.Millisecond, SteadyEnd: 100 * time.Millisecond, UpFactor: 2, DownFactor: 3}
	t0 := time.Now()
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 2}, {49 * time.Millisecond, 2}, {50 * time.Millisecond, 1}, {99 * time.Millisecond, 1}, {100 * time.Millisecond, 3}} {
		if got := r.factor(t0.Add(c.at)); got != c.want {
			t.Fatalf("factor %v after the start: %v, want %v", c.at, got, c.want)
		}
	}
}

// TestBacksCounted: a "Sorry" page sends the next request back and is
// counted; a back with nothing in the history goes Home and is counted as
// a reset.
func TestBacksCounted(t *testing.T) {
	t.Parallel()
	bu := setup(t)
	bu.site.override = func(r *http.Request) (string, bool) {
		return "<h2>Sorry, but there are no items available in this category !</h2>", r.URL.Path == "/PHP/SearchItemsByCategory.php"
	}
	b := bu.b
	b.Next() // Home, empty history
	bu.do(t, SearchItemsInCategory)
	// Sorry: the walk's draw is replaced by a back, which finds nothing.
	if got := b.Prepare(ViewItem); got != Home {
		t.Fatalf("after Sorry with no history: %s, want Home", StateName(got))
	}
	bu.do(t, Home)
	if st := b.Stats(); st.SorryBacks != 1 || st.Resets != 1 || st.NoIDBacks != 0 {
		t.Fatalf("stats %+v, want 1 Sorry-back, 1 reset", st)
	}
	// A page without an item id: ViewItem goes back.
	b.received("<html>no ids</html>")
	b.lastItemID = -1
	b.Prepare(ViewItem)
	if st := b.Stats(); st.NoIDBacks != 1 || st.Resets != 2 {
		t.Fatalf("stats %+v, want 1 back for want of an id, a second reset", st)
	}
}
