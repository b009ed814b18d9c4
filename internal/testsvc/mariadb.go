package testsvc

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// MariaDBServer is a private MariaDB server: its own data directory and
// port, user root without a password, database test. Kill, Start and
// Restart are called from the test's goroutine; DSN and PID from any.
type MariaDBServer struct {
	server
	port int
}

// MariaDB installs a data directory in a fresh temporary directory
// (mariadb-install-db; as OS user mysql when the test runs as root),
// starts mariadbd on it listening on 127.0.0.1 at a free port, with its
// socket and tmpdir in that directory, plus the server options in args (e.g.
// "--log-bin=binlog"), and waits until it accepts connections. The server
// is killed when the test ends. Without the binaries the test skips.
func MariaDB(t testing.TB, args ...string) *MariaDBServer {
	t.Helper()
	if testing.Short() {
		// make test-race: a private server's fault tests are make test's.
		t.Skipf("-short (make test-race): the private %s server's tests are make test's", "MariaDB")
	}
	install := lookPath("mariadb-install-db", "mysql_install_db")
	bin := lookPath("/usr/sbin/mariadbd", "mariadbd", "/usr/sbin/mysqld", "mysqld")
	if install == "" || bin == "" {
		unavailable(t, "MariaDB binaries (mariadb-install-db, mariadbd) not found on PATH or in /usr/sbin")
	}
	cred := runAs(t, "mysql")
	dir := serverDir(t, "tierbench-mariadb-", cred)
	data, tmp := installMariaDB(t, install, dir, cred)
	m := &MariaDBServer{}
	m.server = server{
		t: t, name: "mariadbd", dir: dir, logPath: filepath.Join(dir, "mariadb.log"), cred: cred,
		command: func() (string, []string) {
			return bin, append([]string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp,
				"--port=" + strconv.Itoa(m.port), "--bind-address=127.0.0.1",
				"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
				"--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
				"--innodb-flush-log-at-trx-commit=2", "--innodb-use-native-aio=0"}, args...)
		},
		ready: m.ready,
	}
	m.startFirst(func() { m.port = FreePort(t) })
	return m
}

// installMariaDB makes a data directory, data, and a private tmpdir, tmp,
// under dir, as cred's user.
func installMariaDB(t testing.TB, install, dir string, cred *syscall.Credential) (data, tmp string) {
	t.Helper()
	data = filepath.Join(dir, "data")
	// A private tmpdir: mariadbd deletes every #sql* file of its tmpdir
	// when it starts, which in the default /tmp would include the
	// temporary tables of other servers (the machine's shared one, other
	// tests' private ones, a bootstrap under way).
	tmp = filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatalf("testsvc: %v", err)
	}
	if cred != nil {
		if err := os.Chown(tmp, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("testsvc: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Options install-db does not know itself (--tmpdir) go on to the
	// bootstrap server.
	out, err := runTool(ctx, dir, cred, install, "--no-defaults", "--datadir="+data, "--tmpdir="+tmp,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve")
	if err != nil {
		t.Fatalf("testsvc: %s: %v\n%s", install, err, out)
	}
	return data, tmp
}

// ready connects as root and makes sure database test exists.
func (m *MariaDBServer) ready(ctx context.Context) error {
	cfg := gomysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port))
	cfg.Timeout = probeTimeout
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS test")
	return err
}

// DSN of database test as root, in tierbench's form.
func (m *MariaDBServer) DSN() string {
	return fmt.Sprintf("mysql://root@127.0.0.1:%d/test", m.port)
}

// Port the server listens on.
func (m *MariaDBServer) Port() int { return m.port }
