package testsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
)

// NATSServer is a private nats-server with JetStream, its store in a
// temporary directory. Kill, Start and Restart are called from the test's
// goroutine; URL and PID from any.
type NATSServer struct {
	server
	port     int
	httpPort int
	// http probes /healthz on a fresh connection each time: a kept-alive
	// one would outlive a killed server.
	http *http.Client
}

// NATS starts nats-server (/usr/sbin/nats-server or on PATH) with
// JetStream on 127.0.0.1 at a free port and waits until its monitoring
// endpoint reports it healthy. It is killed when the test ends. Without
// the binary the test skips.
func NATS(t testing.TB) *NATSServer {
	t.Helper()
	bin := lookPath("/usr/sbin/nats-server", "nats-server")
	if bin == "" {
		unavailable(t, "nats-server not found at /usr/sbin/nats-server or on PATH")
	}
	dir := serverDir(t, "tierbench-nats-", nil)
	n := &NATSServer{http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	n.server = server{
		t: t, name: "nats-server", dir: dir, logPath: filepath.Join(dir, "nats.log"),
		command: func() (string, []string) {
			return bin, []string{"-a", "127.0.0.1", "-p", strconv.Itoa(n.port), "-m", strconv.Itoa(n.httpPort),
				"-js", "-sd", filepath.Join(dir, "jetstream")}
		},
		ready: n.healthy,
	}
	n.startFirst(func() { n.port, n.httpPort = FreePort(t), FreePort(t) })
	return n
}

// healthy: the client port accepts and /healthz answers 200 (JetStream
// included).
func (n *NATSServer) healthy(ctx context.Context) error {
	if err := dialable(ctx, n.port); err != nil {
		return err
	}
	return natsHealthz(ctx, n.http, n.httpPort)
}

// natsHealthz: the server's /healthz on monitoring port httpPort answers
// 200 with status ok (JetStream up; in a cluster, its meta leader known).
func natsHealthz(ctx context.Context, client *http.Client, httpPort int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/healthz", httpPort), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s: %s", resp.Status, body)
	}
	var h struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &h) == nil && h.Status != "" && h.Status != "ok" {
		return fmt.Errorf("healthz: %s", body)
	}
	return nil
}

// URL of the server's client port, nats://127.0.0.1:PORT.
func (n *NATSServer) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }
