package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// Nothing listens beyond the host unauthenticated (issue 27 §6): a serve
// at an address other hosts reach is refused (exit 2) unless its business
// tier requires a token or --insecure is given, which warns; a site, whose
// pages have no token, needs --insecure; so do metrics without
// --metrics-token-file, whose token a scrape must then send.
func TestListenBeyondTheHostNeedsATokenOrInsecure(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "db.sqlite")
	for _, w := range []string{"stockonline", "rubis"} {
		if p := testsvc.Start(t, bin, "load", w, "--db", dsn); func() bool { code, err := p.Wait(2 * time.Minute); return err != nil || code != 0 }() {
			t.Fatalf("load %s: %s", w, p.Stderr())
		}
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := func(want string, args ...string) {
		t.Helper()
		p := testsvc.Start(t, bin, args...)
		if code, err := p.Wait(time.Minute); err != nil || code != 2 || !strings.Contains(p.Stderr(), want) {
			t.Errorf("%v: exited %d (%v), want 2 saying %q: %s", args, code, err, want, p.Stderr())
		}
	}
	serves := func(warns bool, args ...string) *testsvc.Proc {
		t.Helper()
		p := testsvc.Start(t, bin, args...)
		if err := p.WaitFor("interrupt to stop", time.Minute); err != nil {
			t.Fatalf("%v: %v: %s", args, err, p.Stderr())
		}
		const warning = "tierbench: warning: --insecure: serving"
		if got := strings.Contains(p.Stderr(), warning); got != warns {
			t.Errorf("%v: warned %t, want %t: %q", args, got, warns, p.Stderr())
		}
		return p
	}
	so := []string{"serve", "stockonline", "--db", dsn}
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0"} {
		refused("--listen "+addr+" reaches other hosts, and the stockonline business tier would answer anyone there: give --token-file FILE",
			append(so, "--listen", addr)...)
	}
	serves(true, append(so, "--listen", "0.0.0.0:0", "--insecure")...).Signal(os.Interrupt)
	serves(false, append(so, "--listen", "0.0.0.0:0", "--token-file", token)...).Signal(os.Interrupt)
	serves(false, append(so, "--listen", "localhost:0")...).Signal(os.Interrupt)
	refused("--listen 0.0.0.0:0 reaches other hosts, and the rubis business tier would answer anyone there",
		"serve", "rubis", "--tier", "business", "--db", dsn, "--listen", "0.0.0.0:0")
	refused("rubis's site (it takes no token) would answer anyone there: listen on loopback (127.0.0.1), or give --insecure",
		"serve", "rubis", "--db", dsn, "--listen", "0.0.0.0:0", "--token-file", token)
	serves(true, "serve", "rubis", "--db", dsn, "--listen", "0.0.0.0:0", "--insecure").Signal(os.Interrupt)
	refused("the rubis web tier (it takes no token) would answer anyone there",
		"serve", "rubis", "--tier", "web", "--business", "http://127.0.0.1:1", "--token-file", token, "--listen", "0.0.0.0:0")
	refused("tpcapp's site (it takes no token) would answer anyone there", "serve", "tpcapp", "--db", dsn, "--listen", "[::]:0")

	refused("--metrics-listen 0.0.0.0:0 reaches other hosts", append(so, "--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0")...)
	p := serves(false, append(so, "--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0", "--metrics-token-file", token)...)
	// The metrics line goes to stderr, the serving line to stdout: either
	// may come first.
	if err := p.WaitFor("/metrics", time.Minute); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`metrics: http://\[::\]:(\d+)/metrics`).FindStringSubmatch(p.Stderr())
	if m == nil {
		t.Fatalf("no metrics URL: %q", p.Stderr())
	}
	url := "http://127.0.0.1:" + m[1] + "/metrics"
	for _, c := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong", http.StatusUnauthorized}, {"Bearer s3cret", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("scrape with %q: %s, want %d", c.auth, resp.Status, c.want)
		}
	}
}
