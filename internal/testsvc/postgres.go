package testsvc

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// PG is a private PostgreSQL server: its own data directory and port, trust
// authentication for user postgres. Kill, Start and Restart are called
// from the test's goroutine; DSN and PID from any.
type PG struct {
	server
	bin  string
	data string
	port int
}

// Postgres initialises a database cluster in a fresh temporary directory
// (as OS user postgres when the test runs as root), starts a server on it
// listening on 127.0.0.1 at a free port, with its Unix socket in that
// directory and fsync off (a killed server keeps what it committed; a
// crashed machine would not), and waits until it accepts connections. The
// server is killed when the test ends. Without PostgreSQL's binaries
// (/usr/lib/postgresql/*/bin or PATH) the test skips.
func Postgres(t testing.TB) *PG {
	t.Helper()
	if testing.Short() {
		// make test-race: a private server's fault tests are make test's.
		t.Skipf("-short (make test-race): the private %s server's tests are make test's", "PostgreSQL")
	}
	bin := postgresBin()
	if bin == "" {
		unavailable(t, "PostgreSQL server binaries (initdb, postgres) not found under /usr/lib/postgresql/*/bin or on PATH")
	}
	cred := runAs(t, "postgres")
	dir := serverDir(t, "tierbench-pg-", cred)
	pg := &PG{bin: bin, data: filepath.Join(dir, "data")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runTool(ctx, dir, cred, filepath.Join(bin, "initdb"),
		"-D", pg.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err != nil {
		t.Fatalf("testsvc: initdb: %v\n%s", err, out)
	}
	pg.server = pgServer(t, pg, dir, cred, "postgres")
	pg.startFirst(func() { pg.port = FreePort(t) })
	return pg
}

// pgServer is the server of pg's data directory in dir, its settings
// those Postgres documents plus extra ("-c", "name=value" pairs); its
// readiness probe a query.
func pgServer(t testing.TB, pg *PG, dir string, cred *syscall.Credential, name string, extra ...string) server {
	return server{
		t: t, name: name, dir: dir, logPath: filepath.Join(dir, name+".log"), cred: cred,
		command: func() (string, []string) {
			return filepath.Join(pg.bin, "postgres"), append([]string{
				"-D", pg.data, "-p", strconv.Itoa(pg.port), "-k", dir,
				"-c", "listen_addresses=127.0.0.1",
				"-c", "fsync=off", "-c", "full_page_writes=off",
				"-c", "shared_buffers=32MB", "-c", "max_connections=60",
				"-c", "logging_collector=off", "-c", "log_min_messages=warning",
			}, extra...)
		},
		ready: func(ctx context.Context) error {
			c, err := pgconn.Connect(ctx, pg.DSN())
			if err != nil {
				return err
			}
			defer c.Close(context.Background())
			_, err = c.Exec(ctx, "select 1").ReadAll()
			return err
		},
	}
}

// postgresBin is the newest /usr/lib/postgresql/*/bin holding initdb and
// postgres, or the directory of initdb on PATH.
func postgresBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if lookPath(filepath.Join(d, "initdb")) != "" && lookPath(filepath.Join(d, "postgres")) != "" {
			return d
		}
	}
	if p := lookPath("initdb"); p != "" && lookPath(filepath.Join(filepath.Dir(p), "postgres")) != "" {
		return filepath.Dir(p)
	}
	return ""
}

// versionOf reads 15 from /usr/lib/postgresql/15/bin.
func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// DSN of the server's postgres database as user postgres.
func (pg *PG) DSN() string { return pg.DSNOf("postgres") }

// DSNOf is the DSN of the server's database db as user postgres.
func (pg *PG) DSNOf(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.port, db)
}

// Port the server listens on.
func (pg *PG) Port() int { return pg.port }
