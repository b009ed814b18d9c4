package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// Every workload loads into one database beside the others, in any order,
// again and again: no table or index name of one stands where another's
// goes (RUBiS's index on comments was once named item, TPC-App's table).
func TestWorkloadsShareADatabase(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	storetest.Each(t, func(t *testing.T, dsn string) {
		t.Parallel() // each backend's loads in turn, the backends side by side
		for _, w := range []string{"rubis", "tpcapp", "stockonline", "ecperf", "rubis", "tpcapp"} {
			args := []string{"load", w, "--db", dsn}
			if w == "tpcapp" {
				args = append(args, "--image-kb", "1")
			}
			load := testsvc.Start(t, bin, args...)
			if code, err := load.Wait(2 * time.Minute); err != nil || code != 0 {
				t.Fatalf("load %s after the others exited %d (%v): %s", w, code, err, load.Stderr())
			}
		}
	})
}

// TPC-App SIGKILLed after CreateOrders committed their orders and outbox
// rows and before the relay published them: the next run on the database
// ships those orders, once, and its checks pass.
func TestTPCAppKilledBetweenCommitAndPublishShipsEveryOrder(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a run killed between commit and publish, then run again")
	t.Parallel()
	bin := testsvc.Binary(t)
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "db.sqlite")
	tpcapp := []string{"run", "tpcapp", "--db", dsn, "--partner-delay", "none", "--image-kb", "1", "--clients", "4", "--ramp-up", "1s"}

	first := testsvc.StartEnv(t, []string{failpoint.Env + "=outbox-publish=kill"}, bin,
		append(tpcapp, "--duration", "60s", "--out", filepath.Join(dir, "killed.json"))...)
	if err := first.WaitFor("failpoint outbox-publish: killing the process", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, err := first.Wait(30 * time.Second); err == nil {
		t.Fatalf("the first run exited %d; it was to be killed", code)
	}
	left := count(t, dsn, "SELECT COUNT(*) FROM ship_outbox")
	if left == 0 {
		t.Fatal("the killed run left no outbox row: it was not killed between commit and publish")
	}
	unshipped := count(t, dsn, "SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM shipment s WHERE s.sh_o_id = o.o_id)")

	out := filepath.Join(dir, "next.json")
	next := testsvc.Start(t, bin, append(tpcapp, "--no-load", "--duration", "5s", "--out", out)...)
	if code, err := next.Wait(3 * time.Minute); err != nil || code != 0 {
		t.Fatalf("the next run exited %d (%v): %s\n%s", code, err, next.Stdout(), next.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed after the kill: %s", c.Name, c.Detail)
		}
	}
	if n := count(t, dsn, "SELECT COUNT(*) FROM ship_outbox"); n != 0 {
		t.Errorf("%d outbox rows left after the next run, want 0 (%d were left by the killed one)", n, left)
	}
	if n := count(t, dsn, "SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM shipment s WHERE s.sh_o_id = o.o_id)"); n != 0 {
		t.Errorf("%d orders without a shipment after the next run's drain (%d after the kill)", n, unshipped)
	}
	t.Logf("the killed run left %d outbox rows and %d orders unshipped; the next one shipped them", left, unshipped)
}

// serve tpcapp and drive tpcapp in two processes, over each front: every
// request of the drive answered, none an error, and the server stops
// cleanly on SIGTERM.
func TestServeAndDriveTPCApp(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	for _, front := range []string{"soap", "json"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "tpcapp.sqlite")
			load := testsvc.Start(t, bin, "load", "tpcapp", "--db", dsn, "--image-kb", "1")
			if code, err := load.Wait(2 * time.Minute); err != nil || code != 0 {
				t.Fatalf("load exited %d (%v): %s", code, err, load.Stderr())
			}
			srv := testsvc.Start(t, bin, "serve", "tpcapp", "--db", dsn, "--listen", "127.0.0.1:0", "--partner-delay", "none")
			if err := srv.WaitFor("serving tpcapp ", time.Minute); err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`serving tpcapp .* on (http://\S+) \(health`).FindStringSubmatch(srv.Stdout())
			if m == nil {
				t.Fatalf("serve printed no URL: %q", srv.Stdout())
			}
			const clients, iterations = 4, 25
			out := filepath.Join(t.TempDir(), "drive.json")
			drive := testsvc.Start(t, bin, "drive", "tpcapp", "--target", m[1], "--front", front,
				"--clients", "4", "--iterations", "25", "--out", out)
			if code, err := drive.Wait(2 * time.Minute); err != nil || code != 0 {
				t.Fatalf("drive exited %d (%v): %s\n%s", code, err, drive.Stdout(), drive.Stderr())
			}
			r, err := result.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var done, errs int64
			for _, op := range r.Operations {
				done += op.Count
				errs += op.Errors
			}
			if done != clients*iterations || errs != 0 {
				t.Errorf("%d requests done, %d errors; want %d, 0", done, errs, clients*iterations)
			}
			srv.Signal(syscall.SIGTERM)
			if code, err := srv.Wait(time.Minute); err != nil || code != 0 {
				t.Errorf("serve exited %d (%v) on SIGTERM: %s", code, err, srv.Stderr())
			}
		})
	}
}

// A run whose payment gateway answers slower than the response-time
// limits allow is measured, and invalid: CreateOrder waits 5.5 s for PGE,
// past its 5 s at p90, while ProductDetail, which calls no partner, holds.
func TestTPCAppResponseTimeLimits(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	out := filepath.Join(t.TempDir(), "slow.json")
	run := testsvc.Start(t, bin, "run", "tpcapp", "--image-kb", "1", "--clients", "6", "--duration", "12s", "--ramp-up", "0s",
		"--partner-delay", "fixed:5500ms", "--out", out)
	code, err := run.Wait(2 * time.Minute)
	if err != nil || code != 1 {
		t.Fatalf("run exited %d (%v), want 1 (invalid): %s", code, err, run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Validity == nil || r.Validity.Passed || r.Validity.ResponseTimesPassed {
		t.Fatalf("validity %+v, want a failed response-time rule", r.Validity)
	}
	want := map[string]bool{"CreateOrder p90 ≤ 5s": false, "ProductDetail p90 ≤ 3s": true}
	for _, rule := range r.Validity.Rules {
		if passed, ok := want[rule.Name]; ok {
			if rule.Passed != passed {
				t.Errorf("rule %s passed %v, want %v: %s", rule.Name, rule.Passed, passed, rule.Detail)
			}
			delete(want, rule.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("rules not judged: %v", want)
	}
}

// --mix weights: the run sends the named methods only, in about their
// proportion; a bad mix is refused before anything runs.
func TestTPCAppMixFlag(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	out := filepath.Join(t.TempDir(), "mix.json")
	run := testsvc.Start(t, bin, "run", "tpcapp", "--image-kb", "1", "--clients", "4", "--duration", "5s", "--ramp-up", "1s",
		"--partner-delay", "none", "--mix", "OrderStatus=1,ProductDetail=3", "--out", out)
	if code, err := run.Wait(2 * time.Minute); err != nil || code != 1 {
		// 1: a run that never sends NewCustomer and the rest is no valid
		// TPC-App run (their response-time rules have nothing to judge);
		// it is measured and kept all the same.
		t.Fatalf("run exited %d (%v), want 1: %s", code, err, run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	status, detail := r.Operations["OrderStatus"].Count, r.Operations["ProductDetail"].Count
	for name, op := range r.Operations {
		if name != "OrderStatus" && name != "ProductDetail" && op.Count != 0 {
			t.Errorf("%s ran %d times, want none", name, op.Count)
		}
	}
	if status == 0 || detail < 2*status || detail > 4*status {
		t.Errorf("OrderStatus %d, ProductDetail %d: want about 1 to 3", status, detail)
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	bad := testsvc.Start(t, bin, "run", "tpcapp", "--mix", "bidding")
	if code, err := bad.Wait(time.Minute); err != nil || code != 2 || !regexp.MustCompile(`methods: NewCustomer`).MatchString(bad.Stderr()) {
		t.Errorf("--mix bidding exited %d (%v): %s", code, err, bad.Stderr())
	}
}

// The shipping notification emulator as its own process: a run told of
// it (--sne) sends it one notice with a label for every order shipped,
// the emulator's own count on stopping is the run's, and the result
// records both sides.
func TestTPCAppNoticesToSNEAlone(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	dir := t.TempDir()
	sne := testsvc.Start(t, bin, "emulator", "sne", "--listen", "127.0.0.1:0", "--delay", "none", "--quiet")
	if err := sne.WaitFor("listening on http://", time.Minute); err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(sne.Stdout())[1]
	out := filepath.Join(dir, "r.json")
	run := testsvc.Start(t, bin, "run", "tpcapp", "--db", "sqlite:"+filepath.Join(dir, "db.sqlite"), "--sne", url, "--partner-delay", "none",
		"--item-images", "none", "--clients", "4", "--duration", "3s", "--ramp-up", "1s", "--out", out)
	// Exit 1 only for the response-time limits, which a 3 s run with one
	// NewCustomer in a hundred may miss: the checks must pass (below).
	if code, err := run.Wait(3 * time.Minute); err != nil || (code != 0 && !strings.Contains(run.Stderr(), "INVALID (")) {
		t.Fatalf("run exited %d (%v): %s\n%s", code, err, run.Stdout(), run.Stderr())
	}
	if err := sne.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code, err := sne.Wait(time.Minute); err != nil || code != 0 {
		t.Fatalf("sne exited %d (%v): %s", code, err, sne.Stderr())
	}
	m := regexp.MustCompile(`sne stopped: requests (\d+) \(approved (\d+), declined 0, duplicates 0\), failed on purpose 0, rejected 0, labels (\d+) bytes`).FindStringSubmatch(sne.Stdout())
	if m == nil {
		t.Fatalf("no stopped line with the counts: %s", sne.Stdout())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var counts map[string]int64
	for _, p := range r.Partners {
		if p.Name == "sne" && p.URL == url && !p.InProcess {
			counts = p.Counts
		}
	}
	acked := counts["run_notices_acknowledged"]
	if acked == 0 || m[1] != strconv.FormatInt(acked, 10) || m[2] != m[1] || m[3] != strconv.FormatInt(counts["run_label_bytes"], 10) || counts["label_bytes"] != counts["run_label_bytes"] {
		t.Errorf("the emulator received %s notices (%s accepted, %s label bytes); the run's result says %v", m[1], m[2], m[3], counts)
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	if r.Summary.SIPSPerAppServer == nil || *r.Summary.SIPSPerAppServer != r.Summary.Metric.Value {
		t.Errorf("sips_per_app_server %v, want SIPS %v (one app server)", r.Summary.SIPSPerAppServer, r.Summary.Metric.Value)
	}
}
