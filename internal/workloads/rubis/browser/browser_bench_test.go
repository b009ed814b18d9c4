package browser

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/workloads/rubis/tables"
)

// canned renders the fake site's pages once: a search page of 20 items
// (about 3.5 KB) and a view-item page with a 2 KB description.
func canned(b *testing.B) (search, item []byte) {
	site := &fakeSite{descLen: 2048}
	get := func(u string) []byte {
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		return rec.Body.Bytes()
	}
	return get("/PHP/SearchItemsByCategory.php?category=3&categoryName=x&page=2&nbOfItems=20"),
		get("/PHP/ViewItem.php?itemId=300042")
}

// BenchmarkParsePick is the browser's own work on a page: search it for
// the ids, links, fields and images, pick an item.
func BenchmarkParsePick(b *testing.B) {
	search, item := canned(b)
	for _, bc := range []struct {
		name string
		page []byte
	}{{"search", search}, {"view-item", item}} {
		b.Run(bc.name, func(b *testing.B) {
			br := &Browser{rng: rand.New(rand.NewPCG(1, 1))}
			b.SetBytes(int64(len(bc.page)))
			b.ReportAllocs()
			for b.Loop() {
				br.page.parse(bc.page, true)
				br.hasPage = true
				if br.itemID() < 0 {
					b.Fatal("no item")
				}
			}
		})
	}
}

// cannedTransport answers every request with a canned page, without a
// server: what remains is the client's cost (request, net/http client
// plumbing, reading and parsing the page, building the next URL).
type cannedTransport struct{ search, item []byte }

func (c cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body := c.item
	if strings.HasPrefix(r.URL.Path, "/PHP/Search") {
		body = c.search
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body)), Request: r,
		Header: http.Header{"Content-Type": {"text/html"}}, ContentLength: int64(len(body))}, nil
}

// BenchmarkInteraction: one interaction per op, alternating a search page
// and a view-item page: the request built, sent through net/http's client,
// the page read and searched (images not fetched; the walk's next move and
// think-time draw are not in it). "client" answers from memory, without a
// server; "httptest" goes through a loopback server serving the same
// canned bytes (its cost included, on the same CPUs).
func BenchmarkInteraction(b *testing.B) {
	search, item := canned(b)
	run := func(b *testing.B, cfg *Config) {
		br := New(cfg, 0, rand.New(rand.NewPCG(1, 1)))
		defer br.Close()
		ctx := context.Background()
		states := [2]int{SearchItemsInCategory, ViewItem}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := br.Do(ctx, states[i&1]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	b.Run("client", func(b *testing.B) {
		cfg := testConfig(b, tables.Bidding, "http://rubis.test")
		cfg.SkipImages = true
		cfg.Transport = cannedTransport{search, item}
		run(b, cfg)
	})
	b.Run("httptest", func(b *testing.B) {
		srv := httptest.NewServer(cannedTransportHandler{cannedTransport{search, item}})
		defer srv.Close()
		cfg := testConfig(b, tables.Bidding, srv.URL)
		cfg.SkipImages = true
		run(b, cfg)
	})
}

type cannedTransportHandler struct{ c cannedTransport }

func (h cannedTransportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := h.c.item
	if strings.HasPrefix(r.URL.Path, "/PHP/Search") {
		body = h.c.search
	}
	w.Header().Set("Content-Type", "text/html")
	w.Write(body)
}
