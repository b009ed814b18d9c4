package balancer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// backend is an HTTP server that counts its requests and answers its
// health check as told.
type backend struct {
	*httptest.Server
	requests atomic.Int64
	healthy  atomic.Bool
}

func newBackend(t *testing.T) *backend {
	b := &backend{}
	b.healthy.Store(true)
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			if !b.healthy.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		b.requests.Add(1)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(b.Close)
	return b
}

// A real haproxy in front of two servers: it waits for both to be UP,
// sends the requests to both (least connections), counts them as the
// servers do, takes out a server whose health check fails, and stops
// by its own PID.
func TestHAProxyBalancesAndChecks(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(Executable); err != nil {
		if testsvc.Require() {
			t.Fatalf("haproxy: %v", err)
		}
		t.Skipf("haproxy is not installed (%v); apt-get install haproxy", err)
	}
	a, b := newBackend(t), newBackend(t)
	h, err := Start(context.Background(), Options{Dir: t.TempDir(), HealthPath: "/healthz",
		Servers: []string{strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop() })
	if !strings.HasPrefix(h.Version, "HAProxy version ") {
		t.Errorf("version %q", h.Version)
	}
	get := func() {
		resp, err := http.Get(h.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 40 {
		get()
	}
	st, err := h.Stats()
	if err != nil || len(st) != 2 {
		t.Fatalf("stats %+v (%v); want two servers", st, err)
	}
	if st[0].Requests != a.requests.Load() || st[1].Requests != b.requests.Load() || st[0].Requests+st[1].Requests != 40 || st[0].Requests == 0 || st[1].Requests == 0 {
		t.Errorf("haproxy counted %d and %d, the servers %d and %d; want 40 in all, some each", st[0].Requests, st[1].Requests, a.requests.Load(), b.requests.Load())
	}
	b.healthy.Store(false)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, _ := h.Stats(); len(st) == 2 && st[1].Status == "DOWN" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unhealthy server was not taken out: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := b.requests.Load()
	for range 10 {
		get()
	}
	if b.requests.Load() != before {
		t.Errorf("a server DOWN got %d requests", b.requests.Load()-before)
	}
	pid := h.PID()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(b), ") Z") {
			t.Errorf("haproxy (pid %d) still runs after Stop", pid)
		}
	}
}

// What a request through haproxy costs against the same request direct:
// an HTTP/1.1 GET with keep-alive to a server that answers at once.
func BenchmarkHAProxyRequest(b *testing.B) {
	if _, err := os.Stat(Executable); err != nil {
		b.Skipf("haproxy is not installed (%v)", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	h, err := Start(context.Background(), Options{Dir: b.TempDir(), HealthPath: "/healthz", Servers: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Stop()
	for _, tc := range []struct{ name, url string }{{"direct", srv.URL}, {"haproxy", h.URL}} {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{}
			for b.Loop() {
				resp, err := c.Get(tc.url + "/x")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
