package rubis

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// The tiers as processes of their own: `serve rubis --tier business`
// serves the business tier of the run's style over the remote layer,
// `serve rubis --tier web --business URL` the pages over a business tier
// served elsewhere. A run with --tiers 3 starts one of each.

// ServeBusiness registers on s the business tier of p's style over db:
// session beans holding the SQL (session), a session facade over entity
// beans on the container (facade), the container's entity beans
// themselves (entity; the interactions run in the web tier).
func (Workload) ServeBusiness(ctx context.Context, db *store.DB, s grpc.ServiceRegistrar, p workload.RunParams) (func() error, error) {
	switch style := p.Config.StyleOf(); style {
	case "session":
		d, err := NewDirect(ctx, db)
		if err != nil {
			return nil, err
		}
		ServeAuction(s, d, p.Threads)
	case "facade":
		beans, err := openContainer(ctx, db, p.Entities, p.Warmup)
		if err != nil {
			return nil, err
		}
		ServeAuction(s, beans, p.Threads)
	case "entity":
		beans, err := openContainer(ctx, db, p.Entities, p.Warmup)
		if err != nil {
			return nil, err
		}
		e := ServeEntities(s, beans.ctr, p.Threads)
		return func() error { e.Close(); return nil }, nil
	default:
		return nil, config.Usage(fmt.Errorf("--style %s has no business tier apart from the web tier; serve it whole (tierbench serve rubis --style %s), or give the business tier a style that has one: %s", style, style, strings.Join(config.RemoteStyles, ", ")))
	}
	return func() error { return nil }, nil
}

// WebTier readies the pages alone, over the business tier that business
// reaches (a *remote.Conn to a tier ServeBusiness serves, in p's style):
// it holds no database, and its Tiers are the remote calls its pages made.
func (Workload) WebTier(_ context.Context, business grpc.ClientConnInterface, p workload.RunParams) (workload.Front, error) {
	style := p.Config.StyleOf()
	var a Auction
	switch style {
	case "session", "facade":
		a = RemoteAuction(business)
	case "entity":
		a = NewRemoteBeans(business)
	default:
		return nil, config.Usage(fmt.Errorf("--style %s has no business tier to call; a web tier over --business takes --style %s", style, strings.Join(config.RemoteStyles, ", ")))
	}
	return webTier{Site: NewSite(a, SiteOptions{Threads: p.Threads, Remote: true}), style: style, protocol: p.Config.Protocol}, nil
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
