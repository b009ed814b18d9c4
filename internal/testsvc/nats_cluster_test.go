package testsvc

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A private cluster comes up with every node's JetStream healthy; a node
// killed by PID is down (its client port refuses) and comes back on its
// store and ports, healthy again in the cluster.
func TestNATSClusterKillAndRestartANode(t *testing.T) {
	t.Parallel()
	c := NATSClusterOf3(t)
	if urls := strings.Split(c.URLs(), ","); len(urls) != 3 || urls[1] != c.Nodes[1].URL() {
		t.Fatalf("URLs %q; want the three nodes' client URLs", c.URLs())
	}
	n := c.Node("n1")
	pid := n.PID()
	n.Kill()
	if n.PID() != 0 || dialable(context.Background(), n.port) == nil {
		t.Fatalf("n1 (pid %d) killed: PID %d, its port still accepting", pid, n.PID())
	}
	c.Restart(n)
	if n.PID() == 0 || n.PID() == pid {
		t.Fatalf("n1 restarted: PID %d (was %d); want a new process", n.PID(), pid)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, node := range c.Nodes {
		if err := natsHealthz(context.Background(), client, node.httpPort); err != nil {
			t.Errorf("%s after n1's restart: %v", node.Name, err)
		}
	}
}
