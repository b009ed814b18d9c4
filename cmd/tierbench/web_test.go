package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// serveRUBiS loads a RUBiS database at scale 2 into a SQLite file and
// serves it from a child process on a free port (serve finds the scale
// itself); it returns the server, its base URL and the database's DSN.
func serveRUBiS(t *testing.T, bin string) (*testsvc.Proc, string, string) {
	t.Helper()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "rubis.sqlite")
	load := testsvc.Start(t, bin, "load", "rubis", "--db", dsn, "--scale", "2")
	if code, err := load.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("load exited %d (%v): %s", code, err, load.Stderr())
	}
	srv := testsvc.Start(t, bin, "serve", "rubis", "--db", dsn, "--listen", "127.0.0.1:0")
	if err := srv.WaitFor("serving rubis ", time.Minute); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`serving rubis \(scale 2\) on (http://\S+) `).FindStringSubmatch(srv.Stdout())
	if m == nil {
		t.Fatalf("serve printed no URL: %q", srv.Stdout())
	}
	return srv, m[1], dsn
}

// The site in one process, the emulated browsers in another, over real
// HTTP: every write the driver counts as done is in the site's database,
// exactly, and the server stops cleanly on SIGTERM.
func TestServeAndDriveAreTwoProcesses(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	srv, url, dsn := serveRUBiS(t, bin)

	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz answered %d while serving, want 200", resp.StatusCode)
	}

	tables := []struct{ table, op string }{
		{"users", "RegisterUser"}, {"bids", "StoreBid"}, {"comments", "StoreComment"},
		{"items", "RegisterItem"}, {"buy_now", "StoreBuyNow"},
	}
	before := make(map[string]int64)
	for _, tt := range tables {
		before[tt.table] = count(t, dsn, "SELECT COUNT(*) FROM "+tt.table)
	}

	const clients, iterations = 8, 40
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "rubis", "--target", url, "--scale", "2", "--clients", "8", "--iterations", "40",
		"--think-scale", "0", "--out", out)
	code, err := drive.Wait(2 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("drive exited %d (%v): %s\n%s", code, err, drive.Stdout(), drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Environment.Target != url || r.Environment.DB != "" {
		t.Errorf("environment: target %q, db %q; want target %q and no database", r.Environment.Target, r.Environment.DB, url)
	}
	if r.Summary.Unchecked == "" || len(r.Checks) != 0 || !strings.Contains(drive.Stdout(), "checks: not run: ") {
		t.Errorf("a drive-only run must say its checks did not run: unchecked %q, %d checks", r.Summary.Unchecked, len(r.Checks))
	}
	if s := r.Summary; s.Operations != clients*iterations || s.Errors+s.InDoubt != 0 {
		t.Errorf("%d operations, %d errors, %d in doubt; want %d and none failed", s.Operations, s.Errors, s.InDoubt, clients*iterations)
	}
	writes := int64(0)
	for _, tt := range tables {
		op := r.Operations[tt.op]
		done := op.Count - op.BusinessExceptions
		writes += done
		if got := count(t, dsn, "SELECT COUNT(*) FROM "+tt.table); got != before[tt.table]+done {
			t.Errorf("%s: %d rows, want %d before + %d %s the driver counted as done", tt.table, got, before[tt.table], done, tt.op)
		}
	}
	if writes == 0 {
		t.Errorf("the browsers wrote nothing in %d interactions: the test proves nothing", clients*iterations)
	}

	if err := srv.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := srv.Wait(15 * time.Second); err != nil || code != 0 {
		t.Errorf("serve exited %d (%v) on SIGTERM, want 0", code, err)
	}
	if !strings.Contains(srv.Stdout(), "rubis stopped") {
		t.Errorf("serve did not say it stopped: %q", srv.Stdout())
	}
}

// The site killed under a drive: the browsers' requests fail and count as
// errors, the driver ends the run once the site has not answered for the
// outage grace, and the result is written, saying so, with exit 3.
func TestDriveEndsWhenTheSiteIsGone(t *testing.T) {
	testsvc.SkipUnlessLong(t, "the site killed mid-drive")
	t.Parallel()
	bin := testsvc.Binary(t)
	srv, url, _ := serveRUBiS(t, bin)
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print"}, bin, "drive", "rubis", "--target", url, "--scale", "2",
		"--clients", "10", "--duration", "2m", "--ramp-up", "1s", "--think-scale", "0.01", "--out", out)
	if err := drive.WaitFor("failpoint run", time.Minute); err != nil {
		t.Fatal(err)
	}
	// Into the steady state, so that something was measured before.
	time.Sleep(2 * time.Second)
	srv.Kill()
	killed := time.Now()
	code, err := drive.Wait(time.Minute)
	if err != nil {
		t.Fatalf("drive still running a minute after its site was killed: %v", err)
	}
	t.Logf("drive exited %d, %v after the kill", code, time.Since(killed).Round(time.Millisecond))
	if code != 3 {
		t.Errorf("exit code %d, want 3 (infrastructure)", code)
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	f := r.Summary.Failure
	if f == nil || f.Phase != "run" || !strings.Contains(f.Error, "the site at "+url) {
		t.Fatalf("failure %+v, want one in phase run naming the site", f)
	}
	if s := r.Summary; s.Operations == 0 || s.Errors == 0 || s.Passed {
		t.Errorf("%d operations, %d errors, passed %v; want some of each, not passed", s.Operations, s.Errors, s.Passed)
	}
}

// --target may name the site's pages' directory, as the original
// client's php_html_path does (http://HOST:PORT/PHP drove
// /PHP/PHP/index.html: every request a 404 for the whole run); a target
// whose pages are not there is refused at once, naming the request and
// its answer.
func TestDriveTakesTheSitesBasePath(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	_, url, _ := serveRUBiS(t, bin)
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "rubis", "--target", url+"/PHP", "--scale", "2", "--clients", "4", "--iterations", "20",
		"--think-scale", "0", "--out", out)
	if code, err := drive.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("drive --target %s/PHP exited %d (%v): %s\n%s", url, code, err, drive.Stdout(), drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Summary; s.Operations != 4*20 || s.Errors+s.InDoubt != 0 {
		t.Errorf("%d operations, %d errors, %d in doubt; want 80 and none failed", s.Operations, s.Errors, s.InDoubt)
	}

	began := time.Now()
	bad := testsvc.Start(t, bin, "drive", "rubis", "--target", url+"/rubis", "--scale", "2", "--clients", "4", "--iterations", "20",
		"--out", filepath.Join(t.TempDir(), "bad.json"))
	code, err := bad.Wait(time.Minute)
	if err != nil || code != 2 || !strings.Contains(bad.Stderr(), "GET /rubis/index.html answers 404 Not Found") {
		t.Errorf("drive --target %s/rubis exited %d (%v) after %v, want 2 at once naming the request and its 404:\n%s", url, code, err,
			time.Since(began).Round(time.Millisecond), bad.Stderr())
	}
}

// A drive whose every request fails while the site answers (here a site
// that answers its home page once, for the drive's first look, then 404
// to everything) ends after the outage grace with exit 3, and its result
// names the requests and their status.
func TestDriveStopsWhenEveryRequestFails(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a drive against a failing site until it gives up")
	t.Parallel()
	bin := testsvc.Binary(t)
	var looked atomic.Bool
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/PHP/index.html" && looked.CompareAndSwap(false, true) {
			io.WriteString(w, "<html>RUBiS</html>")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(site.Close)
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "rubis", "--target", site.URL, "--clients", "5", "--duration", "2m",
		"--think-scale", "0.01", "--out", out)
	code, err := drive.Wait(time.Minute)
	if err != nil {
		t.Fatalf("drive still running after a minute of nothing but 404s: %v", err)
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3 (infrastructure):\n%s", code, drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	f := r.Summary.Failure
	if f == nil || f.Phase != "run" || !strings.Contains(f.Error, "every operation failed for 10s while the site at "+site.URL+" answered") ||
		!strings.Contains(f.Error, "GET /PHP/index.html: HTTP 404 Not Found") {
		t.Fatalf("failure %+v, want one in phase run saying every operation failed and naming the request and its 404", f)
	}
	if !strings.Contains(drive.Stderr(), "GET /PHP/index.html: HTTP 404 Not Found") {
		t.Errorf("the error line does not name the request and its status:\n%s", drive.Stderr())
	}
	if s := r.Summary; s.Errors == 0 || s.Passed {
		t.Errorf("%d errors, passed %v; want errors, not passed", s.Errors, s.Passed)
	}
	// The failures keep their class, the status, and a sample naming the
	// request.
	home := r.Operations["Home"]
	if c, ok := home.Failures["http_404"]; !ok || c.Count != home.Errors || !strings.Contains(c.Sample, "GET /PHP/index.html: HTTP 404 Not Found") {
		t.Errorf("Home's failures %+v (%d errors), want all of them http_404 with a sample naming the request", home.Failures, home.Errors)
	}
}
