package rubis

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/browser"
)

// withImages serves the real site; when the site's pages carry no images
// of their own, it puts the original's logo on each page and one bid-now
// button per item link, as the PHP pages have them, and serves the
// images. It counts the images it served.
type withImages struct {
	site   http.Handler
	own    bool // the site serves its images itself
	served atomic.Int64
	tags   atomic.Int64 // <IMG SRC= on the pages served
}

var imgTag = []byte(`<IMG SRC="`)

func (h *withImages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, ".jpg") {
		h.served.Add(1)
		if !h.own {
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write(make([]byte, 2000))
			return
		}
	}
	rec := httptest.NewRecorder()
	h.site.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if !h.own && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		body = bytes.Replace(body, []byte("<body>"), []byte(`<body><IMG SRC="/PHP/RUBiS_logo.jpg" height=91 width=150>`), 1)
		body = bytes.ReplaceAll(body, []byte(`PutBidAuth.php?itemId=`), []byte(`PutBidAuth.php?x=1"><IMG SRC="/PHP/bid_now.jpg"></a><a href="/PHP/PutBidAuth.php?itemId=`))
	}
	h.tags.Add(int64(bytes.Count(body, imgTag)))
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// TestBrowsersFetchImagesFromTheSite: the run's browsers against the
// real site on SQLite fetch every <IMG SRC> of every page they get, each
// counted once in the walk's report and none as an interaction; with
// --skip-images none. The report carries the table's stationary mix.
func TestBrowsersFetchImagesFromTheSite(t *testing.T) {
	b := setupDirect(t, storetest.SQLite(t))
	site := NewSite(b.d, SiteOptions{Threads: testThreads})
	probe := httptest.NewRecorder()
	site.ServeHTTP(probe, httptest.NewRequest(http.MethodGet, "/PHP/RUBiS_logo.jpg", nil))
	for _, skip := range []bool{false, true} {
		h := &withImages{site: site, own: probe.Code == http.StatusOK}
		srv := httptest.NewServer(h)
		o := DefaultOptions
		o.ThinkScale, o.SkipImages = 0, skip
		run, err := newBrowsers(srv.URL, workload.RunParams{Scale: 1, Common: config.New("rubis", New().Info().Defaults), Options: o})
		if err != nil {
			t.Fatal(err)
		}
		const n = 400
		c := run.NewClient(0, 0, rand.New(rand.NewPCG(1, 1))).(*client)
		interactions := 0
		for range n {
			op, _ := c.Next()
			if err := c.Do(context.Background(), workload.Step{Op: op}); err != nil && !workload.IsBusiness(err) {
				t.Fatalf("%s: %v", browser.StateName(op), err)
			}
			interactions++
		}
		c.Next() // fetches the last page's images
		run.Stop(context.Background())
		srv.Close()
		w := run.Walk()
		if skip {
			if w.Images != 0 || h.served.Load() != 0 {
				t.Fatalf("--skip-images: %d images counted, %d served", w.Images, h.served.Load())
			}
			continue
		}
		if w.Pages != n || w.Images == 0 || w.Images != h.served.Load() || w.Images != h.tags.Load() || w.ImageErrors != 0 || w.ImageBytes == 0 {
			t.Fatalf("%d pages, %d images counted (%d failed, %d B); the site served %d images on pages carrying %d",
				w.Pages, w.Images, w.ImageErrors, w.ImageBytes, h.served.Load(), h.tags.Load())
		}
		if len(w.Stationary) != numInteractions || w.MeanSession < 51 || w.MeanSession > 52 || w.TolerancePoints != 1 {
			t.Fatalf("walk report: %d shares, mean session %.2f, tolerance %v", len(w.Stationary), w.MeanSession, w.TolerancePoints)
		}
		t.Logf("%d interactions, %d pages, %d images (%.2f per page)", interactions, w.Pages, w.Images, float64(w.Images)/float64(w.Pages))
	}
}

// TestBiddingWriteShare: what the README says of the bidding mix. The
// paper's "15% read-write" is not the table's: in its long run the
// writing states are 9.2% of the requests.
func TestBiddingWriteShare(t *testing.T) {
	table, err := transitions("bidding")
	if err != nil {
		t.Fatal(err)
	}
	st, err := table.Stationary(0)
	if err != nil {
		t.Fatal(err)
	}
	written := 0.0
	for _, w := range writes {
		written += st.Shares[w.op]
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"writes", 100 * written, 9.22}, {"Home", 100 * st.Shares[browser.Home], 2.11},
		{"ViewItem", 100 * st.Shares[browser.ViewItem], 16.27}, {"requests per session", st.Requests, 51.45},
	} {
		if math.Abs(c.got-c.want) > 0.005 {
			t.Errorf("%s: %.4f, want %.2f", c.what, c.got, c.want)
		}
	}
}

// TestBrowsersDefaultsAreTheOriginals: a run's browsers behave as the
// original client unless told otherwise: 0-based ids, images fetched, 5
// tries 1 s apart, think ×2 in the up-ramp and ×3 in the down-ramp; each
// flag turns its behaviour off.
func TestBrowsersDefaultsAreTheOriginals(t *testing.T) {
	cfg, o := config.New("rubis", New().Info().Defaults), DefaultOptions
	run, err := newBrowsers("http://127.0.0.1:1", workload.RunParams{Common: cfg, Options: o})
	if err != nil {
		t.Fatal(err)
	}
	c := run.cfg
	r := c.Ramps
	if c.OneBasedIDs || c.SkipImages || c.Tries != 5 || c.RetryPause != time.Second || r == nil ||
		r.UpFactor != 2 || r.DownFactor != 3 || r.Up != 10*time.Second || r.SteadyEnd != 55*time.Second {
		t.Fatalf("defaults: one-based %v, skip images %v, %d tries %v apart, ramps %+v", c.OneBasedIDs, c.SkipImages, c.Tries, c.RetryPause, r)
	}
	o.OneBasedIDs, o.SkipImages, o.PageTries, o.NoRampSlowdown = true, true, 1, true
	run, err = newBrowsers("http://127.0.0.1:1", workload.RunParams{Common: cfg, Options: o})
	if err != nil {
		t.Fatal(err)
	}
	if c := run.cfg; !c.OneBasedIDs || !c.SkipImages || c.Tries != 1 || c.Ramps != nil {
		t.Fatalf("flags: one-based %v, skip images %v, %d tries, ramps %v", c.OneBasedIDs, c.SkipImages, c.Tries, c.Ramps)
	}
}
