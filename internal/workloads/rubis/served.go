package rubis

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/invoker"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// The tiers as processes of their own: `serve rubis --tier business`
// serves the business tier of the run's style over the remote layer,
// `serve rubis --tier web --business URL` the pages over a business tier
// served elsewhere. A run with --tiers 3 starts one of each.

// ServeBusiness registers on s the business tier of p's style over db
// (serveStyle): its business logic is the container's beans, or under
// session the direct SQL.
func (Workload) ServeBusiness(ctx context.Context, db *store.DB, s grpc.ServiceRegistrar, p workload.RunParams) (func() error, error) {
	style := optionsOf(p.Options).StyleOf(p.Common)
	if !slices.Contains(RemoteStyles, style) {
		return nil, config.Usage(fmt.Errorf("--style %s has no business tier apart from the web tier; serve it whole (tierbench serve rubis --style %s), or give the business tier a style that has one: %s", style, style, strings.Join(RemoteStyles, ", ")))
	}
	var a Auction
	var err error
	if style == "session" {
		a, err = NewServlets(ctx, db)
	} else {
		a, err = openContainer(ctx, db, p, optionsOf(p.Options).warm)
	}
	if err != nil {
		return nil, err
	}
	afterStop, err := serveStyle(invoker.Registrar(s, p.Common.Dispatch), style, a, p.Threads, remote.Protocol(optionsOf(p.Options).Protocol), nil, db.Replicas() > 0)
	if err != nil {
		return nil, err
	}
	if beans, ok := a.(*Facade); ok && beans.ctr != nil && p.ServedEntities != nil {
		p.ServedEntities(beans.EntityStats)
	}
	return func() error { afterStop(); return nil }, nil
}

// serveStyle registers on s the remote interface of style's business tier
// over a: the Auction itself (session, facade: one call per interaction),
// or the entity beans of its container (entity: a is the container's
// Facade, and the interactions run in the web tier), or under
// facade-remote the Auction of a facade over an entity tier of its own,
// whose calls entityCalls (when set) counts; that entity tier carries the
// calls' commit positions when positions is set (the database has read
// replicas; s's own server is told so by whoever made it). afterStop
// releases what the interface holds, once the server has stopped.
func serveStyle(s grpc.ServiceRegistrar, style string, a Auction, threads int, protocol remote.Protocol, entityCalls *remote.Meter, positions bool) (afterStop func(), err error) {
	if style != "entity" && style != FacadeRemote {
		ServeAuction(s, a, threads)
		return func() {}, nil
	}
	beans, ok := a.(*Facade)
	if !ok || beans.ctr == nil {
		return nil, fmt.Errorf("--style %s serves the entity container's beans: run it on --persistence cmp or bmp", style)
	}
	if style == FacadeRemote {
		return serveFacadeOverRemoteEntities(s, beans, threads, protocol, entityCalls, positions)
	}
	e := ServeEntities(s, beans.ctr, threads)
	return e.Close, nil
}

// FacadeRemote is the style of the session facade whose entity beans it
// reaches through the communication layer, not in process: what the seed's
// facade was on containers without optimized local calls (JBoss and
// JOnAS over RMI, where a session bean's call to an entity bean of the
// same container went through the RMI stack).
const FacadeRemote = "facade-remote"

// serveFacadeOverRemoteEntities registers on s the facade (one call per
// interaction, as under facade) whose entity beans are an Entities tier
// of their own, served over protocol on a loopback port of this process:
// each of the facade's finders, getters, setters, creates, begins and
// commits is a call of the layer, counted into calls (when set). The
// entity tier stops after s (afterStop).
func serveFacadeOverRemoteEntities(s grpc.ServiceRegistrar, beans *Facade, threads int, protocol remote.Protocol, calls *remote.Meter, positions bool) (afterStop func(), err error) {
	entities, err := startTierMetered(func(s *remote.Server) (func(), error) {
		return ServeEntities(s, beans.ctr, threads).Close, nil
	}, threads, remote.ServerOptions{Positions: positions}, protocol, calls)
	if err != nil {
		return nil, fmt.Errorf("the facade's entity tier: %w", err)
	}
	ServeAuction(s, NewRemoteEntityFacade(entities.conn), threads)
	return func() { entities.close() }, nil
}

// auctionOver is the web tier's Auction under style, over the business
// tier behind conn (which serveStyle serves in the same style).
// (facade-remote's web tier is the facade's: its entity tier is the
// business tier's affair.)
func auctionOver(style string, conn grpc.ClientConnInterface) Auction {
	if style == "entity" {
		return NewRemoteEntityFacade(conn)
	}
	return RemoteAuction(conn)
}

// WebTier readies the pages alone, over the business tier that business
// reaches (a *remote.Conn to a tier ServeBusiness serves, in p's style):
// it holds no database, and its Tiers are the remote calls its pages made.
func (Workload) WebTier(_ context.Context, business grpc.ClientConnInterface, p workload.RunParams) (workload.Front, error) {
	style := optionsOf(p.Options).StyleOf(p.Common)
	if !slices.Contains(RemoteStyles, style) {
		return nil, config.Usage(fmt.Errorf("--style %s has no business tier to call; a web tier over --business takes --style %s", style, strings.Join(RemoteStyles, ", ")))
	}
	// Positions: whether the business tier's database has replicas, its
	// replies say (SiteOptions.Positions).
	site := NewSite(auctionOver(style, business), SiteOptions{Threads: p.Threads, Remote: true, Positions: true})
	return webTier{Site: site, style: style, protocol: optionsOf(p.Options).Protocol}, nil
}

// webTier is the pages served over a remote business tier.
type webTier struct {
	*Site
	style, protocol string
}

func (w webTier) Close() error { return nil }

func (w webTier) Tiers() workload.Tiers {
	return workload.Tiers{Style: w.style, Protocol: w.protocol, Processes: 1, Calls: w.RemoteCalls()}
}

// Checker reads db before a run whose site is served elsewhere, so that
// its Check verifies the database after it.
func (Workload) Checker(ctx context.Context, db *store.DB, _ workload.RunParams) (workload.Checker, error) {
	return newChecker(ctx, db)
}

var (
	_ http.Handler          = webTier{}
	_ workload.BusinessTier = Workload{}
)
