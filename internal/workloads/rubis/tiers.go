package rubis

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/invoker"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/workload"
)

// stopGrace bounds how long a stopping business tier waits for the calls
// under way.
const stopGrace = 10 * time.Second

// businessTier is the business tier of a style with a remote boundary
// (session, facade, entity), served on a loopback port of the site's own
// process: the calls between the tiers cross a real socket and protocol,
// counted by the remote layer.
type businessTier struct {
	srv    *remote.Server
	conn   *remote.Conn
	served chan error
	// afterStop releases what the served interface holds (the entity
	// style's open transactions) once the server has stopped.
	afterStop func()
	closing   sync.Once
	closed    error
}

// startBusinessTier serves style's business tier over a (serveStyle) on a
// free loopback port over protocol, each call on one of threads server
// threads invoking its bean as d says, and connects to it with a
// connection per thread. Under facade-remote, entityCalls (when set)
// counts the facade's calls to its entity beans. positions: a's database
// has read replicas, and the calls carry their commit positions
// (remote.ServerOptions).
func startBusinessTier(style string, a Auction, threads int, protocol remote.Protocol, d container.Dispatch, entityCalls *remote.Meter, positions bool) (*businessTier, error) {
	return startTierMetered(func(s *remote.Server) (func(), error) {
		return serveStyle(invoker.Registrar(s, d), style, a, threads, protocol, entityCalls, positions)
	}, threads, remote.ServerOptions{Positions: positions}, protocol, nil)
}

// startTier serves what register registers (its afterStop run once the
// server has stopped) as startBusinessTier does.
func startTier(register func(*remote.Server) (afterStop func(), err error), threads int, protocol remote.Protocol) (*businessTier, error) {
	return startTierMetered(register, threads, remote.ServerOptions{}, protocol, nil)
}

// startTierMetered is startTier, its server made with o, whose connection
// counts into calls (when set) the calls made with a context that carries
// no meter.
func startTierMetered(register func(*remote.Server) (afterStop func(), err error), threads int, o remote.ServerOptions, protocol remote.Protocol, calls *remote.Meter) (*businessTier, error) {
	srv := remote.NewServer(protocol, o)
	remote.RegisterPing(srv)
	afterStop, err := register(srv)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		afterStop()
		return nil, fmt.Errorf("business tier: %w", err)
	}
	b := &businessTier{srv: srv, served: make(chan error, 1), afterStop: afterStop}
	go func() { b.served <- srv.Serve(ln) }()
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if b.conn, err = remote.DialReady(ctx, protocol, ln.Addr().String(), remote.DialOptions{Conns: threads, Meter: calls}); err != nil {
		b.close()
		return nil, fmt.Errorf("business tier: %w", err)
	}
	return b, nil
}

// close stops the tier once the calls under way are done; once closed,
// it returns the first close's result.
func (b *businessTier) close() error {
	b.closing.Do(func() {
		if b.conn != nil {
			b.conn.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		b.srv.Stop(ctx)
		b.closed = <-b.served
		b.afterStop()
	})
	return b.closed
}

// tiering is how a site's middle tier is split: its style, and the
// protocol between its tiers when it has a remote boundary.
type tiering struct {
	style    string
	protocol string
	business *businessTier
	// entityCalls: under facade-remote, the calls of the business tier's
	// facade to its entity beans.
	entityCalls *remote.Meter
}

// split puts a behind a remote boundary when the run's style has one: the
// Auction the web tier calls is then a client of style's business tier
// over a, served (serveStyle, auctionOver).
func split(c config.Run, o Options, a Auction, threads int, positions bool) (Auction, tiering, error) {
	t := tiering{style: o.StyleOf(c)}
	if !slices.Contains(RemoteStyles, t.style) {
		return a, t, nil
	}
	var err error
	if t.style == FacadeRemote {
		t.entityCalls = new(remote.Meter)
	}
	if t.business, err = startBusinessTier(t.style, a, threads, remote.Protocol(o.Protocol), c.Dispatch, t.entityCalls, positions); err != nil {
		return nil, t, err
	}
	t.protocol = o.Protocol
	return auctionOver(t.style, t.business.conn), t, nil
}

func (t tiering) close() error {
	if t.business == nil {
		return nil
	}
	return t.business.close()
}

// Tiers of a run are its site's.
func (r *run) Tiers() workload.Tiers {
	if s, ok := r.site.(workload.TieredRun); ok {
		return s.Tiers()
	}
	return workload.Tiers{}
}

var _ workload.TieredRun = (*run)(nil)
