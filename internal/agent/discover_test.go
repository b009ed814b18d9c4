package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsServer runs a real NATS server in the test's process on a random
// port and returns a connection to it.
func natsServer(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(startNATS(t).ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startNATS runs a real NATS server in the test's process on a random
// port, until the test ends.
func startNATS(t *testing.T) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// Discovery finds idle agents of the coordinator's version, measures their
// clocks, and leaves those of another version out, naming them when too
// few remain.
func TestDiscoverKeepsOneVersion(t *testing.T) {
	nc := natsServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	never := func(context.Context, Task, func(Recorder)) ([]byte, error) {
		return nil, errors.New("not in this test")
	}
	for _, h := range []Hello{{ID: "b", Host: "h2", Version: "v1"}, {ID: "a", Host: "h1", Version: "v1"}, {ID: "old", Host: "h3", Version: "v0"}} {
		agentConn := natsServerConn(t, nc)
		go Serve(ctx, agentConn, h, never, &strings.Builder{})
	}
	time.Sleep(100 * time.Millisecond) // the agents subscribe
	agents, err := Discover(ctx, nc, 2, 5*time.Second, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 2 || agents[0].ID != "a" || agents[1].ID != "b" {
		t.Fatalf("discovered %+v, want a and b, by ID", agents)
	}
	for _, a := range agents {
		if a.RTT <= 0 || a.RTT > time.Second || a.Offset > a.RTT || a.Offset < -a.RTT {
			t.Errorf("agent %s: offset %v, RTT %v; on one host the offset is within the round trip", a.ID, a.Offset, a.RTT)
		}
	}
	_, err = Discover(ctx, nc, 3, 1200*time.Millisecond, "v1")
	if err == nil || !strings.Contains(err.Error(), "2 of 3 agents") || !strings.Contains(err.Error(), "old on h3 (tierbench v0)") {
		t.Errorf("three agents of v1 asked for: %v; want 2 of 3, naming the v0 agent", err)
	}
}

// natsServerConn is another connection to nc's server, as an agent on
// another host has its own.
func natsServerConn(t *testing.T, nc *nats.Conn) *nats.Conn {
	t.Helper()
	c, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
