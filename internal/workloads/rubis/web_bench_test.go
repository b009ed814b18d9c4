package rubis

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// BenchmarkWebPages serves ViewItem and SearchItemsByCategory through the
// site over HTTP (httptest, one client, keep-alive) on each backend at
// scale 1: the time per page, the web tier, the business tier and the
// database together.
//
//	go test -run XXX -bench WebPages -benchtime 2000x ./internal/workloads/rubis
func BenchmarkWebPages(b *testing.B) {
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		b.Run(backend.name, func(b *testing.B) {
			srv, pop := setupWebBench(b, backend.dsn(b))
			first := pop.FirstActiveItem()
			client := srv.Client()
			get := func(b *testing.B, url string) {
				resp, err := client.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", url, resp.StatusCode)
				}
			}
			b.Run("ViewItem", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					get(b, srv.URL+"/PHP/ViewItem.php?itemId="+strconv.FormatInt(first+int64(i)%pop.ActiveItems, 10))
				}
			})
			b.Run("SearchItemsByCategory", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					get(b, srv.URL+"/PHP/SearchItemsByCategory.php?category="+strconv.Itoa(1+i%numCategories)+"&categoryName=x&page=0&nbOfItems=20")
				}
			})
		})
	}
}

func setupWebBench(b *testing.B, dsn string) (*httptest.Server, population) {
	b.Helper()
	ctx := context.Background()
	db := storetest.Open(b, dsn, store.Options{Threads: 2})
	if _, err := loadAt(ctx, db, workload.LoadParams{Scale: 1, Seed: testSeed}, time.Now()); err != nil {
		b.Fatal(err)
	}
	d, err := NewServlets(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(NewSite(d, SiteOptions{Threads: 2}))
	b.Cleanup(srv.Close)
	pop, _ := populationAt(1)
	return srv, pop
}
