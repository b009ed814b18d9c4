package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp"
)

// runAllCLI is runCLI with every workload registered.
func runAllCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIWith(t, []workload.Workload{stockonline.New(), ecperf.New(), rubis.New(), tpcapp.New()}, args...)
}

// Every file a command reads is a regular file of a bounded size, checked
// before it is read: /dev/zero, a named pipe or a huge file used to be
// read until the kernel killed the process (23 GB), or to block.
func TestInputFilesAreBoundedBeforeTheyAreRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Sparse: 2 GiB on no disk.
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(2 << 30)
		f.Close()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "/dev/zero", "--clients", "1..1000"}, "/dev/zero is not a regular file (a device): give a result file"},
		{[]string{"model", huge}, "huge.json is 2 GiB, more than a result file may be (at most 1 GiB)"},
		{[]string{"report", "/dev/zero"}, "/dev/zero is not a regular file (a device): give a result file"},
		{[]string{"report", fifo}, "fifo is not a regular file (a named pipe): give a result file"},
		{[]string{"report", huge}, "huge.json is 2 GiB, more than a result file may be (at most 1 GiB)"},
		{[]string{"run", "stockonline", "-f", "/dev/zero"}, "-f /dev/zero: /dev/zero is not a regular file (a device): give a configuration file"},
		{[]string{"run", "stockonline", "-f", fifo}, "is not a regular file (a named pipe): give a configuration file"},
		{[]string{"run", "stockonline", "-f", huge}, "huge.json is 2 GiB, more than a configuration file may be (at most 1 MiB)"},
		{[]string{"sweep", "/dev/zero"}, "/dev/zero is not a regular file (a device): give a sweep file"},
		{[]string{"run", "rubis", "--mix", "/dev/zero"}, "--mix: /dev/zero is not a regular file (a device): give a transition table"},
		{[]string{"run", "tpcapp", "--session-length", fifo}, "--session-length: " + fifo + " is not a regular file (a named pipe)"},
		{[]string{"serve", "stockonline", "--token-file", "/dev/zero", "--db", "sqlite:" + filepath.Join(dir, "so.db")}, "--token-file: /dev/zero is not a regular file (a device): give a token file"},
	} {
		began := time.Now()
		code, _, stderr := runAllCLI(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want 2 saying %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("%s took %v to refuse", strings.Join(tc.args, " "), d)
		}
	}
}

// Every count and scale is checked against what it implies before any
// work: a --mix count of 999999999999 grew to 23 GB, --ir 100000000
// started loading.
func TestCountsAndScalesAreBoundedBeforeAnyWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "stockonline", "--mix", "BuyStock=999999999999,SellStock=999999999999"},
			`--mix "BuyStock=999999999999,SellStock=999999999999": count 999999999999 of BuyStock: at most 1000000`},
		{[]string{"run", "stockonline", "--mix", "BuyStock=500000,SellStock=500000", "--clients", "1000000"},
			"--mix BuyStock=500000,SellStock=500000 deals 1000000 operations an iteration to each of 1000000 clients: about 52184.6 GiB (54719 KiB a client), but this machine has"},
		{[]string{"run", "tpcapp", "--mix", "CreateOrder=999999999999"}, `--mix "CreateOrder=999999999999": weight 999999999999 of CreateOrder: at most 1000000`},
		{[]string{"run", "ecperf", "--ir", "100000000"}, "--ir 100000000 implies ~4.18 TiB of rows and 800000001 terminals; at most 10000 (~439 MiB of rows and 80001 terminals)"},
		{[]string{"load", "ecperf", "--scale", "100000000", "--db", "sqlite:" + filepath.Join(t.TempDir(), "e.db")}, "--scale 100000000 implies ~4.18 TiB of rows and 800000001 terminals; at most 10000"},
		{[]string{"run", "stockonline", "--scale", "9223372036854775807"}, "--scale 9223372036854775807 implies ~8 EiB of rows; at most 10000 (~7.45 GiB of rows)"},
		{[]string{"run", "rubis", "--scale", "20000"}, "--scale 20000 implies ~663 GiB of rows; at most 10000 (~332 GiB of rows)"},
		{[]string{"run", "tpcapp", "--scale", "5000"}, "--scale 5000 implies ~485 GiB of rows; at most 1000 (~97 GiB of rows)"},
		// Within the ceiling, but not within this file system.
		{[]string{"run", "tpcapp", "--scale", "1000", "--image-kb", "16384"}, "--scale 1000 loads about 15626.7 GiB, but"},
	} {
		began := time.Now()
		code, _, stderr := runAllCLI(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 2 {
			t.Errorf("%s: exit %d, %q; want 2 saying %q in one line", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("%s took %v to refuse", strings.Join(tc.args, " "), d)
		}
	}
}

// A served tier opens a session per server thread, whatever --clients a
// -f file reused from a run says: the connection limit is checked for
// them all. It was checked for min(clients, server threads), so the tier
// served with fewer sessions than the threads it claimed.
func TestServeChecksTheConnectionLimitForEveryServerThread(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.yaml")
	os.WriteFile(file, []byte("clients: 10\n"), 0o644)
	for _, dsn := range []func(testing.TB) string{storetest.Postgres, storetest.MySQL} {
		db := dsn(t)
		code, _, stderr := runAllCLI(t, "serve", "stockonline", "-f", file, "--db", db, "--server-threads", "1000", "--listen", "127.0.0.1:0")
		if code != ExitUsage || !strings.Contains(stderr, "--server-threads 1000 needs 1002 database connections") {
			t.Errorf("serve on %s: exit %d, %s", db, code, stderr)
		}
	}
}

// --server-threads 100000 with the default 100 clients ran on 101
// connections, within the server's 200, and exited 0: a run opens one
// connection per thread up to its clients. The run now says so.
func TestRunSaysServerThreadsBeyondItsClientsAreIdle(t *testing.T) {
	code, _, stderr := runCLI(t, "run", "stockonline", "--server-threads", "100000", "--clients", "2", "--iterations", "1",
		"--out", filepath.Join(t.TempDir(), "r.json"), "--quiet")
	if code != 0 || !strings.Contains(stderr, "note: --server-threads 100000 is more than --clients 2: at most 2 transactions run at once, on 3 database connections") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// model stops reading at the first interrupt (it read /dev/zero through
// SIGTERM): exit 1, as an interrupted run.
func TestModelReadingStopsOnInterrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(path, []byte(`{"schema": "tierbench/result/v1"}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := readModelResult(ctx, path)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitFailed || !strings.Contains(err.Error(), "interrupted while reading it") {
		t.Errorf("model on an interrupted context: %v", err)
	}
}
