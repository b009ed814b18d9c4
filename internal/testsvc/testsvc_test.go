package testsvc_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/testsvc"
)

func TestPostgresSurvivesRestart(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private PostgreSQL killed and restarted")
	t.Parallel()
	ctx := context.Background()
	pg := testsvc.Postgres(t)
	c, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "create table kept (id int primary key); insert into kept values (1)"); err != nil {
		t.Fatal(err)
	}
	before := pg.PID()
	pg.Restart()
	if pg.PID() == before || pg.PID() == 0 {
		t.Errorf("PID %d after restart, %d before; want a new one", pg.PID(), before)
	}
	if _, err := c.Exec(ctx, "select 1"); err == nil {
		t.Error("a connection to the killed server still works")
	}
	c2, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("connect after restart: %v", err)
	}
	defer c2.Close(ctx)
	var n int
	if err := c2.QueryRow(ctx, "select count(*) from kept").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows committed before the kill: %d, %v; want 1", n, err)
	}
	pg.Kill()
	if pg.PID() != 0 {
		t.Errorf("PID %d after Kill, want 0", pg.PID())
	}
	pg.Kill() // a second Kill does nothing
}

func TestNATSRestart(t *testing.T) {
	t.Parallel()
	srv := testsvc.NATS(t)
	if !strings.HasPrefix(srv.URL(), "nats://127.0.0.1:") {
		t.Errorf("URL = %q", srv.URL())
	}
	roundTrip := func() {
		t.Helper()
		nc, err := nats.Connect(srv.URL(), nats.Timeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := nc.JetStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.AccountInfo(); err != nil {
			t.Fatalf("JetStream: %v", err)
		}
	}
	roundTrip()
	before := srv.PID()
	srv.Restart()
	if srv.PID() == before {
		t.Errorf("PID unchanged by Restart")
	}
	roundTrip()
}

func TestMariaDBRestart(t *testing.T) {
	testsvc.SkipUnlessLong(t, "a private MariaDB installed, killed and restarted")
	t.Parallel()
	m := testsvc.MariaDB(t)
	cfg, err := gomysql.ParseDSN("root@tcp(127.0.0.1:" + strconv.Itoa(m.Port()) + ")/test?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := gomysql.NewConnector(cfg)
	db := sql.OpenDB(conn)
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE kept (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	m.Restart()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM kept").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows committed before the kill: %d, %v; want 1", n, err)
	}
}

func TestBinaryVersion(t *testing.T) {
	t.Parallel()
	p := testsvc.Start(t, testsvc.Binary(t), "--version")
	if err := p.WaitFor("tierbench version", time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(time.Minute); err != nil || code != 0 {
		t.Fatalf("tierbench --version exited %d, %v; want 0", code, err)
	}
	if again := testsvc.Binary(t); again != testsvc.Binary(t) {
		t.Errorf("Binary built twice: %s, %s", again, testsvc.Binary(t))
	}
}

func TestProcSignalAndOutput(t *testing.T) {
	t.Parallel()
	p := testsvc.Start(t, "/bin/sh", "-c", `echo out; echo err >&2; echo ready; exec sleep 60`)
	if err := p.WaitFor("ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor("err", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(10 * time.Millisecond); err == nil {
		t.Fatal("Wait returned before the child exited")
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait(10 * time.Second)
	if err == nil || code != -1 || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("after SIGTERM: code %d, %v; want -1 and killed by terminated", code, err)
	}
	if p.Stdout() != "out\nready\n" || p.Stderr() != "err\n" {
		t.Errorf("stdout %q, stderr %q", p.Stdout(), p.Stderr())
	}
	if err := p.WaitFor("never written", 10*time.Second); err == nil {
		t.Error("WaitFor of text an exited child never wrote succeeded")
	}
}

func TestProcExitCode(t *testing.T) {
	t.Parallel()
	p := testsvc.Start(t, "/bin/sh", "-c", "exit 3")
	if code, err := p.Wait(10 * time.Second); err != nil || code != 3 {
		t.Errorf("exit 3: code %d, %v", code, err)
	}
}

func TestFreePort(t *testing.T) {
	t.Parallel()
	if p := testsvc.FreePort(t); p <= 0 || p > 65535 {
		t.Errorf("FreePort = %d", p)
	}
}

// TestShareRunsEachCellOnceAcrossMakeTestAndTestAll: make test (unset)
// and make test-all (rest) together run every cell of a 3-slice matrix
// exactly once in each slice; TIERBENCH_LONG=1 runs them all at once.
func TestShareRunsEachCellOnceAcrossMakeTestAndTestAll(t *testing.T) {
	const slices, cells = 3, 7
	runs := map[[2]int]int{}
	for _, mode := range []string{"", "rest"} {
		t.Setenv(testsvc.LongEnv, mode)
		for s := range slices {
			for i := range cells {
				if testsvc.Share(s, slices, i) {
					runs[[2]int{s, i}]++
				}
			}
		}
	}
	for s := range slices {
		for i := range cells {
			if n := runs[[2]int{s, i}]; n != 1 {
				t.Errorf("cell %d of slice %d ran %d times over make test and make test-all, want 1", i, s, n)
			}
		}
	}
	t.Setenv(testsvc.LongEnv, "1")
	for s := range slices {
		for i := range cells {
			if !testsvc.Share(s, slices, i) {
				t.Errorf("TIERBENCH_LONG=1 skipped cell %d of slice %d", i, s)
			}
		}
	}
}
