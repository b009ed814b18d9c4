package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/appservers"
	"github.com/tierbench/tierbench/internal/balancer"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// runAppServers runs stockonline over two app servers on dsn with extra
// flags, and returns its result.
func runAppServers(t *testing.T, dsn string, extra ...string) (*result.Result, *testsvc.Proc) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run.json")
	args := append([]string{"run", "stockonline", "--app-servers", "2", "--persistence", "cmp", "--db", dsn,
		"--clients", "4", "--iterations", "2", "--out", out}, extra...)
	run := testsvc.Start(t, testsvc.Binary(t), args...)
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("run exited %d (%v): %s\n%s", code, err, run.Stdout(), run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wantChecksPassed(t, r)
	if len(r.Checks) == 0 {
		t.Error("no checks ran")
	}
	return r, run
}

// sumServers is the servers' container counters summed by hand.
func sumServers(t *testing.T, r *result.Result) map[string]container.Stats {
	t.Helper()
	sum := map[string]container.Stats{}
	for _, s := range r.Servers {
		for name, e := range s.Container {
			a, b := reflect.ValueOf(sum[name]), reflect.ValueOf(e.Stats)
			out := reflect.New(a.Type()).Elem()
			for i := range a.NumField() {
				if a.Field(i).CanInt() {
					out.Field(i).SetInt(a.Field(i).Int() + b.Field(i).Int())
				}
			}
			st := out.Interface().(container.Stats)
			st.Rows = max(sum[name].Rows, e.Stats.Rows) // counted when each server last resized: not summed
			sum[name] = st
		}
	}
	return sum
}

// wantMergedIsSum: the result's container counters are exactly the sum
// of its servers', type by type, and there are some.
func wantMergedIsSum(t *testing.T, r *result.Result) {
	t.Helper()
	sum := sumServers(t, r)
	if len(sum) == 0 || len(sum) != len(r.Container) {
		t.Fatalf("container %v, servers' %v", r.Container, sum)
	}
	for name, e := range r.Container {
		if e.Stats != sum[name] {
			t.Errorf("%s: merged %+v, servers' sum %+v", name, e.Stats, sum[name])
		}
	}
}

// loadedWithToken loads workload into a SQLite file and writes a token
// file for the tiers served on it; it returns the DSN and the file.
func loadedWithToken(t *testing.T, bin, workload string) (dsn, token string) {
	t.Helper()
	dsn = "sqlite:" + filepath.Join(t.TempDir(), workload+".db")
	load := testsvc.Start(t, bin, "load", workload, "--db", dsn)
	if code, err := load.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("load exited %d (%v): %s", code, err, load.Stderr())
	}
	token = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dsn, token
}

// serveURL starts `tierbench serve …` (args) and returns the URL its
// serving line gives, the first group of pattern.
func serveURL(t *testing.T, bin, pattern string, args ...string) string {
	t.Helper()
	url, _ := serveProc(t, bin, pattern, args...)
	return url
}

// serveProc is serveURL with the serve's process.
func serveProc(t *testing.T, bin, pattern string, args ...string) (string, *testsvc.Proc) {
	t.Helper()
	srv := testsvc.Start(t, bin, args...)
	if err := srv.WaitFor("serving ", time.Minute); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(pattern).FindStringSubmatch(srv.Stdout())
	if m == nil {
		t.Fatalf("serve printed no URL: %q", srv.Stdout())
	}
	return m[1], srv
}

// twoServedStockOnline serves two Stock-Online business tiers (with extra
// flags) on one loaded SQLite file, as app servers 0 and 1 of 2.
func twoServedStockOnline(t *testing.T, extra ...string) (bin, dsn, token string, urls []string, procs []*testsvc.Proc) {
	t.Helper()
	bin = testsvc.Binary(t)
	dsn, token = loadedWithToken(t, bin, "stockonline")
	for i := range 2 {
		url, srv := serveProc(t, bin, `serving stockonline business tier .* on (http://\S+);`,
			append([]string{"serve", "stockonline", "--db", dsn, "--persistence", "cmp", "--listen", "127.0.0.1:0", "--token-file", token,
				"--app-servers", "2", "--app-server", strconv.Itoa(i)}, extra...)...)
		urls, procs = append(urls, url), append(procs, srv)
	}
	return bin, dsn, token, urls, procs
}

// servedRequests are the requests a serve's live metrics counted.
func servedRequests(t *testing.T, metrics string) int64 {
	t.Helper()
	resp, err := http.Get(metrics)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[0], "tierbench_served_requests_total") {
			v, _ := strconv.ParseFloat(f[1], 64)
			n += int64(v)
		}
	}
	return n
}

// A target that dies mid-drive (drive --target URL1,URL2): the drive
// notices that it stopped answering, names it, moves its terminals to
// the other, keeps its counters to its last reading (partial, in the
// sum), checks the database behind them, and exits 3.
func TestDriveTargetKilledMidDrive(t *testing.T) {
	t.Parallel()
	bin, dsn, token, urls, procs := twoServedStockOnline(t, "--metrics-listen", "127.0.0.1:0")
	victim := procs[0]
	m := regexp.MustCompile(`metrics: (http://\S+/metrics)`).FindStringSubmatch(victim.Stdout() + victim.Stderr())
	if m == nil {
		t.Fatalf("serve printed no metrics URL: %s %s", victim.Stdout(), victim.Stderr())
	}
	metrics := m[1]
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "stockonline", "--target", strings.Join(urls, ","), "--token-file", token, "--db", dsn,
		"--clients", "4", "--duration", "8s", "--ramp-up", "0s", "--out", out)
	// Some of the drive on both first, and a reading of the counters.
	for deadline := time.Now().Add(time.Minute); servedRequests(t, metrics) < 50; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first target served no requests: %s", drive.Stderr())
		}
	}
	time.Sleep(1500 * time.Millisecond)
	if err := syscall.Kill(victim.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, err := drive.Wait(2 * time.Minute)
	if err != nil || code != 3 {
		t.Fatalf("exit %d (%v), want 3: %s\n%s", code, err, drive.Stdout(), drive.Stderr())
	}
	if want := "target 1 at " + urls[0] + " stopped answering"; !strings.Contains(drive.Stderr(), want) {
		t.Errorf("the error does not name the target (%q): %s", want, drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 2 {
		t.Fatalf("servers = %+v; want 2", r.Servers)
	}
	dead, live := r.Servers[0], r.Servers[1]
	if dead.Died == "" || dead.Served == 0 || !dead.CountersPartial || len(dead.Container) == 0 {
		t.Errorf("target 1 = %+v; want it dead, with its share and its partial counters", dead)
	}
	if live.Died != "" || live.CountersPartial || live.Served <= dead.Served {
		t.Errorf("target 2 = %+v; want it alive, serving the rest", live)
	}
	wantMergedIsSum(t, r)
	if f := r.Summary.Failure; f == nil || !strings.Contains(f.Effect, "went on with the other app servers") {
		t.Errorf("failure = %+v; want the drive's, saying it went on", f)
	}
	if len(r.Checks) == 0 {
		t.Error("no checks ran with --db")
	}
	wantChecksPassed(t, r)
}

// wantChecksPassed: every consistency check of the result passed.
func wantChecksPassed(t *testing.T, r *result.Result) {
	t.Helper()
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
}

// Two app servers, each a business tier with its own container over one
// database: both serve a share of the terminals, the result's counters
// are exactly the sum of theirs and what the deck determines (each
// QueryByCode, Buy and Sell finds its stock once by key...), and the
// database passes its checks.
func TestRunOverTwoAppServers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		if strings.HasPrefix(dsn, "mysql") {
			t.Skip("SQLite and PostgreSQL cover the processes; MariaDB adds nothing here")
		}
		t.Parallel()
		r, run := runAppServers(t, dsn)
		if len(r.Servers) != 2 {
			t.Fatalf("servers = %+v; want 2", r.Servers)
		}
		var served int64
		for _, s := range r.Servers {
			if s.PID == 0 || s.Served == 0 || s.Counted != "operations" || s.Died != "" {
				t.Errorf("server %+v: want a pid, a share of the operations, alive", s)
			}
			if !strings.Contains(run.Stderr(), "started the "+s.Name+"'s business tier: pid ") {
				t.Errorf("the run did not say it started %s: %s", s.Name, run.Stderr())
			}
			served += s.Served
			if alive(s.PID) {
				t.Errorf("%s (pid %d) outlived the run", s.Name, s.PID)
			}
		}
		var done int64 // successes and business exceptions: answered
		for _, op := range r.Operations {
			done += op.Count
		}
		if served != done {
			t.Errorf("the servers served %d operations; the run completed %d", served, done)
		}
		wantMergedIsSum(t, r)
		// Every Holding find is one of its outcomes, across servers too.
		h := r.Container["Holding"].Stats
		if h.Finds == 0 || h.Finds != h.CacheHits+h.TxHits+h.Loads+h.NotFound {
			t.Errorf("Holding: %+v; want finds = hits + tx-hits + loads + not-found, and some", h)
		}
		if r.Tiers == nil || r.Tiers.Processes != 3 {
			t.Errorf("tiers = %+v; want 3 processes", r.Tiers)
		}
	})
}

// With --balancer haproxy the clients go through a real haproxy that the
// run starts and stops: the result names it, what it cost a request, and
// the requests it sent each server.
func TestRunBehindHAProxy(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(balancer.Executable); err != nil {
		if testsvc.Require() {
			t.Fatalf("haproxy: %v", err)
		}
		t.Skipf("haproxy is not installed (%v); apt-get install haproxy", err)
	}
	r, _ := runAppServers(t, storetest.SQLite(t), "--balancer", "haproxy")
	b := r.Balancer
	if b == nil || b.Kind != "haproxy" || b.PID == 0 || b.Probe.Requests != 200 || b.Probe.ThroughP50Us <= 0 || b.Probe.DirectP50Us <= 0 {
		t.Fatalf("balancer = %+v; want haproxy, its pid and its probe", b)
	}
	if alive(b.PID) {
		t.Errorf("haproxy (pid %d) outlived the run", b.PID)
	}
	var requests int64
	for _, s := range r.Servers {
		if s.Counted != "requests" || s.Served == 0 {
			t.Errorf("server %+v: want some requests from haproxy", s)
		}
		requests += s.Served
	}
	// One request per operation, each answered: haproxy's count is the
	// run's calls (retried aborts are calls too).
	var calls int64
	for _, c := range r.Tiers.Pages {
		calls += c.Calls
	}
	if requests != calls {
		t.Errorf("haproxy sent %d requests; the clients made %d calls", requests, calls)
	}
}

// tpcappCounters runs tpcapp on the entity container with extra flags
// and returns its result.
func tpcappCounters(t *testing.T, dsn string, extra ...string) (*result.Result, *testsvc.Proc) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run.json")
	args := append([]string{"run", "tpcapp", "--persistence", "cmp", "--db", dsn, "--partner-delay", "none", "--image-kb", "1", "--out", out}, extra...)
	run := testsvc.Start(t, testsvc.Binary(t), args...)
	// A run this short cannot meet every response-time rule (a method
	// that did not run in the steady state): exit 1, INVALID, is fine.
	code, err := run.Wait(3 * time.Minute)
	if invalid := code == 1 && strings.Contains(run.Stderr(), "tierbench: INVALID ("); err != nil || (code != 0 && !invalid) {
		t.Fatalf("%v: exit %d (%v): %s\n%s", extra, code, err, run.Stdout(), run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wantChecksPassed(t, r)
	return r, run
}

// TPC-App over two app servers, each a site with its own container and
// its own shipping and inventory agents, sharing the queues of the NATS
// server the run started: both serve, the merged counters are exactly
// their sum, the database checked from the run's process passes (every
// order shipped once, whichever server's agent shipped it), and SIPS per
// app server is SIPS over two.
func TestTPCAppOverTwoAppServers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		if strings.HasPrefix(dsn, "mysql") {
			t.Skip("SQLite and PostgreSQL cover the processes; MariaDB adds nothing here")
		}
		t.Parallel()
		r, run := tpcappCounters(t, dsn, "--app-servers", "2", "--clients", "4", "--iterations", "15")
		if !strings.Contains(run.Stderr(), "started the NATS server of the app servers' queues: nats://") {
			t.Errorf("the run did not say it started the queues' NATS server: %s", run.Stderr())
		}
		if len(r.Servers) != 2 {
			t.Fatalf("servers = %+v; want 2", r.Servers)
		}
		var served, done int64
		for _, s := range r.Servers {
			if s.PID == 0 || s.Served == 0 || s.Died != "" {
				t.Errorf("server %+v: want a pid, a share of the operations, alive", s)
			}
			if alive(s.PID) {
				t.Errorf("%s (pid %d) outlived the run", s.Name, s.PID)
			}
			served += s.Served
		}
		for _, op := range r.Operations {
			done += op.Count
		}
		if served != done || done != 4*15 {
			t.Errorf("the servers served %d operations, the run completed %d; want 60 (4 clients × 15)", served, done)
		}
		wantMergedIsSum(t, r)
		var names []string
		for _, c := range r.Checks {
			names = append(names, c.Name)
		}
		for _, want := range []string{"orders-match-CreateOrder", "lines-belong-to-orders", "orders-shipped-once", "reorders-received-once", "stock-balances"} {
			if !slices.Contains(names, want) {
				t.Errorf("checks %v: want %s", names, want)
			}
		}
		// Both are rounded to 0.1 from the same count: SIPS/2 of the
		// rounded SIPS is within 0.05 of the per-server figure.
		if per := r.Summary.SIPSPerAppServer; r.Summary.Metric.Value == 0 || per == nil {
			t.Errorf("SIPS %v, per app server %v; want both", r.Summary.Metric.Value, per)
		} else if math.Abs(*per-r.Summary.Metric.Value/2) > 0.05+1e-9 {
			t.Errorf("SIPS %v, per app server %v; want SIPS/2 to 0.1", r.Summary.Metric.Value, *per)
		}
	})
}

// One business's deterministic session gives exactly the same container
// counters in one process and over two app servers (all on the first,
// the merge adding the idle second's zeros).
func TestTPCAppCountersAcrossProcessesMatchOneProcess(t *testing.T) {
	t.Parallel()
	// The partners decide by a hash of each request's run-unique tag, so
	// in-process ones decline a different 2% of cards or POs in each run;
	// these approve all, and the seed alone decides what runs.
	var partners []string
	for _, kind := range []string{"pov", "pge"} {
		p := testsvc.Start(t, testsvc.Binary(t), "emulator", kind, "--listen", "127.0.0.1:0", "--delay", "none", "--approve", "1", "--quiet")
		if err := p.WaitFor("listening on http://", time.Minute); err != nil {
			t.Fatal(err)
		}
		url := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(p.Stdout())[1]
		partners = append(partners, "--"+kind, url)
	}
	counters := func(extra ...string) map[string]container.Stats {
		r, _ := tpcappCounters(t, "sqlite:"+filepath.Join(t.TempDir(), "tpcapp.db"),
			append(append([]string{"--clients", "1", "--server-threads", "1", "--iterations", "20"}, partners...), extra...)...)
		got := map[string]container.Stats{}
		for name, e := range r.Container {
			st := e.Stats
			st.Rows = 0 // counted when a size in percent is resized
			got[name] = st
		}
		return got
	}
	local := counters()
	var finds int64
	for _, st := range local {
		finds += st.Finds
	}
	if finds == 0 {
		t.Fatalf("the in-process run counted no finds: %+v", local)
	}
	if got := counters("--app-servers", "2"); !reflect.DeepEqual(got, local) {
		t.Errorf("over two app servers: counters %+v; in one process %+v", got, local)
	}
}

// ECperf's domains cannot be served as processes: --app-servers is
// refused with exit 2, saying why and which workloads can.
func TestAppServersRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "ecperf", "--app-servers", "2"}, []string{"ecperf cannot be served as processes yet", "no remote interface", "purchase-order check", "rubis, stockonline, tpcapp"}},
		{[]string{"run", "stockonline", "--balancer", "haproxy"}, []string{"--balancer haproxy", "--app-servers N"}},
	} {
		run := testsvc.Start(t, testsvc.Binary(t), tt.args...)
		code, err := run.Wait(time.Minute)
		if err != nil || code != 2 {
			t.Errorf("%v: exit %d (%v), want 2: %s", tt.args, code, err, run.Stderr())
		}
		for _, w := range tt.want {
			if !strings.Contains(run.Stderr(), w) {
				t.Errorf("%v: %q does not say %q", tt.args, run.Stderr(), w)
			}
		}
	}
}

// An app server killed mid-run: the run names it, goes on with the other
// (its terminals move there, or haproxy sends them there), checks the
// database, writes the result with the dead server's share, and exits 3.
func TestAppServerKilledMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "an app server killed mid-run")
	for _, tc := range []struct {
		name, moved string
		extra       []string
	}{
		{"spread", "moved to the survivors", nil},
		{"haproxy", "took a server that died out of its rotation", []string{"--balancer", "haproxy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.extra != nil {
				if _, err := os.Stat(balancer.Executable); err != nil {
					t.Skipf("haproxy is not installed (%v)", err)
				}
			}
			killAppServer(t, tc.moved, tc.extra...)
		})
	}
}

// killAppServer kills app server 1 of a run over two, 3 s in, and checks
// what the run did (moved: how the result says its terminals went on).
func killAppServer(t *testing.T, moved string, extra ...string) {
	args := append([]string{"run", "stockonline", "--app-servers", "2", "--persistence", "cmp",
		"--db", "sqlite:" + filepath.Join(t.TempDir(), "so.db"), "--clients", "4", "--duration", "8s", "--ramp-up", "0s"}, extra...)
	r := killServerMidRun(t, "app server 1's business tier", moved, args...)
	// Its counters to its last reading, a second or so before it died.
	if s := r.Servers[0]; !s.CountersPartial || len(s.Container) == 0 {
		t.Errorf("the dead server's counters: %+v, partial %v; want its last reading's", s.Container, s.CountersPartial)
	}
	wantMergedIsSum(t, r)
}

// TPC-App over two app servers, one killed mid-run: the other's agents
// ship what it queued and had under way (the shared durable consumers
// redeliver its unacknowledged messages), its in-flight writes are in
// doubt, and the database passes its checks.
func TestTPCAppServerKilledMidRun(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a TPC-App server killed mid-run")
	t.Parallel()
	killServerMidRun(t, "app server 1's middle tier", "moved to the survivors", "run", "tpcapp", "--app-servers", "2", "--persistence", "cmp",
		"--db", "sqlite:"+filepath.Join(t.TempDir(), "tpcapp.db"), "--image-kb", "1", "--partner-delay", "none",
		"--clients", "4", "--duration", "8s", "--ramp-up", "0s")
}

// killServerMidRun starts `tierbench args…` (a run over two app servers),
// kills its process name 3 s into the run, and checks that the run named it, went
// on with the other (moved: how), checked the database and exited 3.
func killServerMidRun(t *testing.T, name, moved string, args ...string) *result.Result {
	out := filepath.Join(t.TempDir(), "run.json")
	// Killed once the run drives, not while it starts: a loaded machine
	// took over 3 s to bring up haproxy, and a server killed before that
	// fails the start (exit 3, nothing measured), not the run.
	run := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print"}, testsvc.Binary(t), append(args, "--out", out)...)
	if err := run.WaitFor("failpoint run", 3*time.Minute); err != nil {
		t.Fatalf("%v: %s", err, run.Stderr())
	}
	pid := tierPID(run, name)
	if pid == 0 {
		t.Fatalf("the run did not start its %s: %s", name, run.Stderr())
	}
	time.Sleep(3 * time.Second) // some of the run first
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code != 3 {
		t.Fatalf("exit %d (%v), want 3: %s\n%s", code, err, run.Stdout(), run.Stderr())
	}
	want := fmt.Sprintf("the %s (pid %d", name, pid)
	if !strings.Contains(run.Stderr(), want) {
		t.Errorf("the error does not name the server (%q): %s", want, run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 2 || !strings.Contains(r.Servers[0].Died, fmt.Sprint(pid)) || r.Servers[1].Died != "" || r.Servers[0].Served == 0 || r.Servers[1].Served <= r.Servers[0].Served {
		t.Errorf("servers = %+v; want the first died with its share, the second alive and serving the rest", r.Servers)
	}
	if len(r.Servers) != 2 {
		t.FailNow() // the callers read both servers
	}
	if f := r.Summary.Failure; f == nil || f.Phase != "run" || !strings.Contains(f.Effect, "went on with the other app servers") || !strings.Contains(f.Effect, moved) {
		t.Errorf("failure = %+v; want the run's, saying it went on", f)
	}
	if r.Summary.ElapsedS < 7 {
		t.Errorf("the run stopped after %.1f s; want it to go on to its 8 s", r.Summary.ElapsedS)
	}
	if len(r.Checks) == 0 {
		t.Error("no checks ran")
	}
	wantChecksPassed(t, r)
	return r
}

// drive --target URL1,URL2 spreads the terminals over two business tiers
// served elsewhere on one database: each serves a share, the result's
// counters are exactly the sum of the two servers' (each read from its
// serve at the drive's start and end), and the database behind them
// passes its checks.
func TestDriveTwoTargets(t *testing.T) {
	t.Parallel()
	bin, dsn, token, urls, _ := twoServedStockOnline(t)
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "stockonline", "--target", strings.Join(urls, ","), "--token-file", token, "--db", dsn,
		"--clients", "4", "--iterations", "2", "--out", out)
	if code, err := drive.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("drive exited %d (%v): %s\n%s", code, err, drive.Stdout(), drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 2 || r.Servers[0].URL != urls[0] || r.Servers[1].URL != urls[1] || r.Servers[0].Served == 0 || r.Servers[1].Served == 0 {
		t.Fatalf("servers = %+v; want both targets, each serving", r.Servers)
	}
	wantMergedIsSum(t, r)
	if len(r.Checks) == 0 {
		t.Error("no checks ran with --db")
	}
	wantChecksPassed(t, r)
}

// A container in another process keeps its counters: one terminal's
// deterministic deck gives exactly the same container and database
// counters run in one process, with the business tier apart (--tiers 2),
// and over two app servers (all on the first, the merge adding the idle
// second's zeros).
func TestCountersAcrossProcessesMatchOneProcess(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	type counted struct {
		Container map[string]container.Stats
		Database  store.Stats
	}
	counters := func(extra ...string) counted {
		out := filepath.Join(t.TempDir(), "run.json")
		args := append([]string{"run", "stockonline", "--persistence", "cmp", "--db", "sqlite:" + filepath.Join(t.TempDir(), "so.db"),
			"--clients", "1", "--server-threads", "1", "--iterations", "2", "--out", out}, extra...)
		run := testsvc.Start(t, bin, args...)
		if code, err := run.Wait(3 * time.Minute); err != nil || code != 0 {
			t.Fatalf("%v: exit %d (%v): %s", extra, code, err, run.Stderr())
		}
		r, err := result.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		got := counted{Container: map[string]container.Stats{}, Database: r.Database}
		for name, e := range r.Container {
			st := e.Stats
			// Rows are counted when a size in percent is resized.
			st.Rows = 0
			got.Container[name] = st
		}
		return got
	}
	local := counters()
	if local.Container["Holding"].Finds == 0 || local.Database.Statements == 0 {
		t.Fatalf("the in-process run counted no Holding finds: %+v", local)
	}
	for _, extra := range [][]string{{"--tiers", "2"}, {"--app-servers", "2"}} {
		got := counters(extra...)
		if !reflect.DeepEqual(got, local) {
			t.Errorf("%v: counters %+v; in one process %+v", extra, got, local)
		}
	}
}

// RUBiS over two app servers, each a business tier with its own web tier
// (--tiers 3): the browsers' sessions each stay on one server, both
// serve, the container counters are the servers' exact sum, and the
// database passes its checks.
func TestRubisOverTwoAppServers(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run.json")
	run := testsvc.Start(t, testsvc.Binary(t), "run", "rubis", "--app-servers", "2", "--tiers", "3", "--style", "facade", "--protocol", "grpc",
		"--persistence", "cmp", "--db", "sqlite:"+filepath.Join(t.TempDir(), "rubis.db"),
		"--clients", "4", "--iterations", "20", "--think-scale", "0", "--out", out)
	if code, err := run.Wait(3 * time.Minute); err != nil || code != 0 {
		t.Fatalf("run exited %d (%v): %s\n%s", code, err, run.Stdout(), run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 2 || r.Servers[0].Served == 0 || r.Servers[1].Served == 0 {
		t.Fatalf("servers = %+v; want two, each serving", r.Servers)
	}
	// Terminal i on server i mod 2 for its whole session: each serves
	// the pages of two of the four browsers, 20 iterations each.
	for _, s := range r.Servers {
		if s.Served != 2*20 {
			t.Errorf("%s served %d pages; want 40 (two browsers' sessions)", s.Name, s.Served)
		}
	}
	wantMergedIsSum(t, r)
	if r.Tiers == nil || r.Tiers.Processes != 5 || r.Tiers.Protocol != "grpc" {
		t.Errorf("tiers = %+v; want 5 processes over grpc", r.Tiers)
	}
	if len(r.Checks) == 0 {
		t.Error("no checks ran")
	}
	wantChecksPassed(t, r)
}

// drive rubis --target URL1,URL2 spreads the browsers over two sites
// served elsewhere, one session per browser on one site; each site's
// counters are read over HTTP with the token, and summed.
func TestDriveTwoRubisSites(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	dsn, token := loadedWithToken(t, bin, "rubis")
	var urls []string
	for i := range 2 {
		url := serveURL(t, bin, `serving rubis \(scale \d+\) on (http://\S+) `,
			"serve", "rubis", "--db", dsn, "--persistence", "cmp", "--listen", "127.0.0.1:0", "--token-file", token,
			"--app-servers", "2", "--app-server", strconv.Itoa(i))
		urls = append(urls, url)
		// The counters need the token.
		resp, err := http.Get(url + appservers.EntitiesPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the counters without the token: %s, want 401", resp.Status)
		}
	}
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "rubis", "--target", strings.Join(urls, ","), "--token-file", token,
		"--clients", "4", "--iterations", "15", "--think-scale", "0", "--out", out)
	if code, err := drive.Wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("drive exited %d (%v): %s\n%s", code, err, drive.Stdout(), drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 2 || r.Servers[0].Served != 30 || r.Servers[1].Served != 30 {
		t.Fatalf("servers = %+v; want two, each serving its two browsers' 15 pages", r.Servers)
	}
	wantMergedIsSum(t, r)
	var finds int64
	for _, e := range r.Container {
		finds += e.Finds
	}
	if finds == 0 {
		t.Errorf("no container counters from the sites: %+v", r.Container)
	}
	if r.Tiers != nil {
		t.Errorf("a drive of sites has their tiers, not its own: %+v", r.Tiers)
	}
}
