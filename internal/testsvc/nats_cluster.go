package testsvc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NATSClusterNode is one server of a NATSCluster: a nats-server process
// of its own, killed and started again by the test.
type NATSClusterNode struct {
	server
	Name      string // its server_name, as stream placements name it
	port      int
	routePort int
	httpPort  int
}

// NATSCluster is a private JetStream cluster of nats-server processes on
// 127.0.0.1, each with its store in a temporary directory: the cluster
// deploy/local/nats-cluster starts for users, on free ports. Killing a
// node kills its process by PID.
type NATSCluster struct {
	t     testing.TB
	Nodes []*NATSClusterNode
	http  *http.Client
}

// NATSClusterOf starts n nats-servers (/usr/sbin/nats-server or on PATH)
// with JetStream, each routed to the first (the others find each other
// through it), and waits until every node reports JetStream healthy, which in a
// cluster means it has joined the meta group and sees its leader. The
// servers are killed when the test ends. Without the binary the test
// skips.
func NATSClusterOf(t testing.TB, n int) *NATSCluster {
	t.Helper()
	if testing.Short() {
		// make test-race: a private cluster's fault tests are make test's.
		t.Skipf("-short (make test-race): the private %s's tests are make test's", "NATS cluster")
	}
	bin := lookPath("/usr/sbin/nats-server", "nats-server")
	if bin == "" {
		unavailable(t, "nats-server not found at /usr/sbin/nats-server or on PATH")
	}
	c := &NATSCluster{t: t, http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	for i := range n {
		dir := serverDir(t, "tierbench-nats-cluster-", nil)
		node := &NATSClusterNode{Name: "n" + strconv.Itoa(i)}
		// Every node routes to the first (a seed; gossip completes the
		// mesh), so that a port picked again when taken concerns one node
		// alone. JetStream wants routes configured on every node: the
		// first's points at itself, which nats-server skips.
		seed := node
		if i > 0 {
			seed = c.Nodes[0]
		}
		node.server = server{
			t: t, name: "nats-server " + node.Name, dir: dir, logPath: filepath.Join(dir, "nats.log"),
			command: func() (string, []string) {
				args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(node.port), "-m", strconv.Itoa(node.httpPort),
					"-n", node.Name, "-js", "-sd", filepath.Join(dir, "jetstream"),
					"--cluster_name", "tierbench-test", "--cluster", fmt.Sprintf("nats://127.0.0.1:%d", node.routePort)}
				return bin, append(args, "--routes", fmt.Sprintf("nats-route://127.0.0.1:%d", seed.routePort))
			},
			// The client port accepting is enough to start the next node;
			// the cluster is ready once every node is (waitHealthy).
			ready: func(ctx context.Context) error { return dialable(ctx, node.port) },
		}
		node.startFirst(func() { node.port, node.routePort, node.httpPort = FreePort(t), FreePort(t), FreePort(t) })
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		c.WaitHealthy(node)
	}
	return c
}

// NATSClusterOf3 is NATSClusterOf(t, 3), the size that survives one loss.
func NATSClusterOf3(t testing.TB) *NATSCluster { t.Helper(); return NATSClusterOf(t, 3) }

// URLs are the nodes' client URLs, comma-separated, as --broker takes them.
func (c *NATSCluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// URL of the node's client port, nats://127.0.0.1:PORT.
func (n *NATSClusterNode) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// Node is the node named name (n0, n1, …), as a stream's placement names
// its leader; the test fails when there is none.
func (c *NATSCluster) Node(name string) *NATSClusterNode {
	c.t.Helper()
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	c.t.Fatalf("testsvc: no node %q in the NATS cluster", name)
	return nil
}

// Restart starts a killed node again on its store and ports and waits
// until it has rejoined the cluster's JetStream.
func (c *NATSCluster) Restart(n *NATSClusterNode) {
	c.t.Helper()
	n.Start()
	c.WaitHealthy(n)
}

// WaitHealthy waits until the node's /healthz answers 200: JetStream up
// and, in a cluster, the meta group's leader known.
func (c *NATSCluster) WaitHealthy(n *NATSClusterNode) {
	c.t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		err := c.healthy(ctx, n.httpPort)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testsvc: %s not healthy within %v (%v); log %s ends:\n%s", n.name, startTimeout, err, n.logPath, n.logTail())
		}
		time.Sleep(pollInterval) // polling the server's health endpoint
	}
}

func (c *NATSCluster) healthy(ctx context.Context, httpPort int) error {
	return natsHealthz(ctx, c.http, httpPort)
}

// dialable: something accepts connections on port of 127.0.0.1.
func dialable(ctx context.Context, port int) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return conn.Close()
}
