package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The server answers its handler and /healthz on a real socket; shutting
// down, it turns /healthz to 503 and lets a request under way finish.
func TestServesAndShutsDownGracefully(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "page "+r.URL.Path)
	})
	s, err := Start("127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, s.URL()+"/PHP/index.html"); code != 200 || body != "page /PHP/index.html" {
		t.Fatalf("page: %d %q", code, body)
	}
	if code, body := get(t, s.URL()+HealthPath); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	slow := make(chan string, 1)
	go func() {
		_, body := get(t, s.URL()+"/slow")
		slow <- body
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(context.Background()) }()
	// The request under way holds the shutdown until it finishes.
	select {
	case err := <-stopped:
		t.Fatalf("shutdown returned (%v) with a request under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if body := <-slow; body != "page /slow" {
		t.Errorf("the request under way got %q", body)
	}
	if err := <-stopped; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if _, err := http.Get(s.URL() + HealthPath); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done is not closed after shutdown")
	}
}

func TestBusyAddressIsAnError(t *testing.T) {
	s, err := Start("127.0.0.1:0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if _, err := Start(s.Addr(), http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), "--listen "+s.Addr()) {
		t.Errorf("a second server on %s: %v, want an error naming --listen", s.Addr(), err)
	}
}

func TestParseListen(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", ":8080", "localhost:0", "[::1]:9090", "web-1.example:80"} {
		if err := ParseListen(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"8080", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", "127.0.0.1:-1", "a b:80", ""} {
		if err := ParseListen(bad); err == nil || !strings.Contains(err.Error(), "--listen") || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Errorf("%q: %v, want a refusal naming --listen and the form", bad, err)
		}
	}
}

// Which listen addresses reach beyond the host (issue 27 §6).
func TestLoopback(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.2:0", true},
		{"[::1]:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{"localhost:8080", true},
		{":8080", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"10.0.0.5:9090", false},
		{"192.168.1.2:0", false},
		{"[fe80::1%lo]:8080", false},
		{"no-such-host.invalid:8080", false},
		{"8080", false},
	} {
		if got := Loopback(context.Background(), c.addr); got != c.want {
			t.Errorf("Loopback(%q) = %t, want %t", c.addr, got, c.want)
		}
	}
}
