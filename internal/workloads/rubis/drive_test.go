package rubis

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/browser"
)

// pathLog records the paths a handler was asked for.
type pathLog struct {
	mu    sync.Mutex
	paths []string
	next  http.Handler
}

func (l *pathLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.paths = append(l.paths, r.URL.Path)
	l.mu.Unlock()
	l.next.ServeHTTP(w, r)
}

func (l *pathLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.paths
	l.paths = nil
	return p
}

func driveParams() workload.RunParams {
	return workload.RunParams{Scale: 1, Common: config.New("rubis", Workload{}.Info().Defaults), Options: DefaultOptions}
}

// --target is the site's base URL or its pages' directory, as the
// original client's php_html_path: http://HOST:PORT/PHP drove
// /PHP/PHP/index.html, every request a 404.
func TestBrowsersTakeTheSitesBasePath(t *testing.T) {
	b := setupDirect(t, storetest.SQLite(t))
	log := &pathLog{next: NewSite(b.d, SiteOptions{Threads: testThreads})}
	srv := httptest.NewServer(log)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	for _, target := range []string{srv.URL, srv.URL + "/", srv.URL + "/PHP", srv.URL + "/PHP/"} {
		run, err := Workload{}.Browsers(ctx, target, driveParams())
		if err != nil {
			t.Errorf("--target %s: %v", target, err)
			continue
		}
		c := run.(*browsers).NewClient(0, 0, rand.New(rand.NewPCG(1, 2)))
		if err := c.Do(ctx, workload.Step{Op: browser.Home}); err != nil {
			t.Errorf("--target %s: Home: %v", target, err)
		}
		// The browser fetches the page's images before its next move,
		// as the original does after the page and before it thinks.
		c.(*client).Next()
		run.(*browsers).Stop(ctx)
		// The probe, then the browser's page and its logo.
		if got, want := log.take(), []string{"/PHP/index.html", "/PHP/index.html", "/PHP/RUBiS_logo.jpg"}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("--target %s: requested %q, want %q", target, got, want)
		}
	}
}

// A target whose pages are not there is refused at once (a usage error,
// exit 2), naming the request and the answer.
func TestBrowsersRefuseATargetWithoutPages(t *testing.T) {
	w := setupWeb(t, storetest.SQLite(t))
	_, err := Workload{}.Browsers(context.Background(), w.srv.URL+"/rubis", driveParams())
	var usage *config.UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "GET /rubis/index.html answers 404 Not Found") ||
		!strings.Contains(err.Error(), "http://HOST:PORT/PHP") {
		t.Errorf("--target …/rubis: %v, want a usage error naming GET /rubis/index.html, its 404 and what --target takes", err)
	}
}

// A failed request says which page and what status; the run keeps the
// first few for the error that ends a drive whose every request fails.
func TestFailedRequestsNameThePageAndStatus(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	// One try a page: the original's five, 1 s apart, would make this
	// test 40 s of waiting; the retries are the browser package's tests'.
	p := driveParams()
	o := DefaultOptions
	o.PageTries = 1
	p.Options = o
	b, err := newBrowsers(srv.URL+"/PHP/PHP", p)
	if err != nil {
		t.Fatal(err)
	}
	c := b.NewClient(0, 0, rand.New(rand.NewPCG(1, 2)))
	for range maxFirstFailures + 2 {
		err := c.Do(ctx, workload.Step{Op: browser.Home})
		var status *browser.StatusError
		if !errors.As(err, &status) || status.Code != http.StatusNotFound ||
			!strings.Contains(err.Error(), "Home: GET /PHP/PHP/index.html: HTTP 404 Not Found") {
			t.Fatalf("Home on a site of 404s: %v, want the path and the status", err)
		}
	}
	// The same failure, kept once.
	if got := b.FirstFailures(); len(got) != 1 || !strings.Contains(got[0], "GET /PHP/PHP/index.html: HTTP 404 Not Found") {
		t.Errorf("first failures %q, want the one failure, naming the page", got)
	}
	if n := len(b.first); n != maxFirstFailures {
		t.Errorf("%d failures kept, want the first %d", n, maxFirstFailures)
	}
}
