package testsvc

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// GaleraNodes is the size of the cluster Galera starts: three, the
// smallest that keeps a quorum when one node is killed.
const GaleraNodes = 3

// GaleraCluster is a private three-node MariaDB Galera cluster
// (multi-master) on loopback, as deploy/local/galera starts one, but in a
// temporary directory and on free ports (SQL, group communication, IST
// and SST for each node), so that it collides with neither the script's
// cluster nor another test's.
type GaleraCluster struct {
	nodes []*GaleraNode
}

// GaleraNode is one mariadbd of a GaleraCluster. Kill crashes it (SIGKILL
// by PID); Start brings it back, rejoining the cluster by a state
// transfer from a survivor.
type GaleraNode struct {
	server
	index int
	port  int
	// gcomm is the group communication port; IST and SST listen on the
	// two after it in ports.
	gcomm, ist, sst int
	cluster         *GaleraCluster
	// bootstrap: the next start founds the cluster (node 0's first).
	bootstrap bool
}

// Galera starts a three-node cluster: node 0 bootstraps it, the others
// join by state transfer (rsync), and each is waited for until it is
// Synced; database test exists. The nodes run as OS user mysql when the
// test runs as root (a state transfer's rsync daemon started by root
// serves its files as nobody), and are killed by PID when the test ends.
// Without mariadbd, mariadb-install-db, the Galera library or rsync the
// test skips (fails with TIERBENCH_REQUIRE_SERVICES=1). A start takes
// 10-40 s on a busy machine: share one cluster among a package's tests.
func Galera(t testing.TB) *GaleraCluster {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short (make test-race): the private %s's tests are make test's", "Galera cluster")
	}
	install := lookPath("mariadb-install-db", "mysql_install_db")
	bin := lookPath("/usr/sbin/mariadbd", "mariadbd")
	provider := lookPath(os.Getenv("GALERA_PROVIDER"), "/usr/lib/galera/libgalera_smm.so", "/usr/lib/galera-4/libgalera_smm.so")
	if install == "" || bin == "" {
		unavailable(t, "MariaDB binaries (mariadb-install-db, mariadbd) not found on PATH or in /usr/sbin (apt-get install mariadb-server)")
	}
	if provider == "" {
		unavailable(t, "the Galera library libgalera_smm.so not found under /usr/lib/galera (apt-get install galera-4)")
	}
	if lookPath("rsync") == "" || lookPath("wsrep_sst_rsync") == "" {
		unavailable(t, "rsync or wsrep_sst_rsync not found on PATH (apt-get install rsync galera-4)")
	}
	cred := runAs(t, "mysql")
	dir := serverDir(t, "tierbench-galera-", cred)
	c := &GaleraCluster{}
	var gcomms []string
	for i := range GaleraNodes {
		n := &GaleraNode{index: i, cluster: c, bootstrap: i == 0,
			port: FreePort(t), gcomm: FreePort(t), ist: FreePort(t), sst: FreePort(t)}
		gcomms = append(gcomms, net.JoinHostPort("127.0.0.1", strconv.Itoa(n.gcomm)))
		c.nodes = append(c.nodes, n)
	}
	address := "gcomm://" + strings.Join(gcomms, ",")
	// One install, copied before any node starts (a node's own state,
	// its UUID, must not be copied): a joiner's data directory is
	// replaced by the state transfer anyway, and an install costs seconds.
	first := filepath.Join(dir, "node0")
	mkdirAs(t, first, cred)
	data0, _ := installMariaDB(t, install, first, cred)
	for _, n := range c.nodes[1:] {
		nd := filepath.Join(dir, "node"+strconv.Itoa(n.index))
		if out, err := exec.Command("cp", "-a", first, nd).CombinedOutput(); err != nil {
			t.Fatalf("testsvc: copy %s: %v\n%s", data0, err, out)
		}
	}
	for _, n := range c.nodes {
		nd := filepath.Join(dir, "node"+strconv.Itoa(n.index))
		data, tmp := filepath.Join(nd, "data"), filepath.Join(nd, "tmp")
		n.server = server{
			t: t, name: fmt.Sprintf("mariadbd (Galera node %d)", n.index), dir: nd,
			logPath: filepath.Join(nd, "galera.log"), cred: cred,
			command: func() (string, []string) {
				args := []string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp,
					"--port=" + strconv.Itoa(n.port), "--bind-address=127.0.0.1",
					"--socket=" + filepath.Join(nd, "mysqld.sock"), "--pid-file=" + filepath.Join(nd, "mysqld.pid"),
					"--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
					"--innodb-flush-log-at-trx-commit=2", "--innodb-use-native-aio=0",
					"--binlog-format=ROW", "--default-storage-engine=InnoDB", "--innodb-autoinc-lock-mode=2",
					"--wsrep-on=ON", "--wsrep-provider=" + provider, "--wsrep-cluster-name=tierbench-test",
					"--wsrep-cluster-address=" + address, "--wsrep-node-name=node" + strconv.Itoa(n.index),
					"--wsrep-node-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.gcomm)),
					fmt.Sprintf("--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=32M", n.gcomm, n.ist),
					"--wsrep-sst-method=rsync",
					"--wsrep-sst-receive-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.sst))}
				if n.bootstrap {
					args = append(args, "--wsrep-new-cluster")
				}
				return bin, args
			},
			ready: n.ready,
		}
		t.Cleanup(n.Kill)
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
		n.bootstrap = false // a restart joins the survivors
	}
	return c
}

// mkdirAs makes dir, owned by cred's user when cred is not nil.
func mkdirAs(t testing.TB, dir string, cred *syscall.Credential) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("testsvc: %v", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("testsvc: %v", err)
		}
	}
}

// ready: the node is Synced with the cluster (a joiner has finished its
// state transfer) and database test exists.
func (n *GaleraNode) ready(ctx context.Context) error {
	db := n.open()
	defer db.Close()
	var name, state string
	if err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state); err != nil {
		return err
	}
	if state != "Synced" {
		return fmt.Errorf("node %d is %s, not Synced", n.index, state)
	}
	_, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS test")
	return err
}

func (n *GaleraNode) open() *sql.DB {
	cfg := gomysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = n.Addr()
	cfg.Timeout = probeTimeout
	conn, _ := gomysql.NewConnector(cfg) // a config of constants
	return sql.OpenDB(conn)
}

// Addr is the node's SQL address, 127.0.0.1:PORT.
func (n *GaleraNode) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// DSN of database test on this node alone, in tierbench's form.
func (n *GaleraNode) DSN() string { return "mysql://root@" + n.Addr() + "/test" }

// Nodes of the cluster, node 0 (the founder) first.
func (c *GaleraCluster) Nodes() []*GaleraNode { return c.nodes }

// Node i of the cluster.
func (c *GaleraCluster) Node(i int) *GaleraNode { return c.nodes[i] }

// DSN names every node, as a multi-master --db:
// mysql://root@127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2/test.
func (c *GaleraCluster) DSN() string {
	var hosts []string
	for _, n := range c.nodes {
		hosts = append(hosts, n.Addr())
	}
	return "mysql://root@" + strings.Join(hosts, ",") + "/test"
}

// Status is the node's global status variable name (wsrep_local_state,
// wsrep_local_commits, …), read on a fresh connection; an error when the
// node does not answer.
func (n *GaleraNode) Status(name string) (string, error) {
	db := n.open()
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var k, v string
	// SHOW takes no placeholder; name is the test's own constant.
	err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+strings.ReplaceAll(name, "'", "")+"'").Scan(&k, &v)
	return v, err
}

// Query runs q on the node and scans its one row into dest; q names its
// tables with their database (test.T).
func (n *GaleraNode) Query(q string, dest ...any) error {
	db := n.open()
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return db.QueryRowContext(ctx, q).Scan(dest...)
}
