// Package stockonline is the Stock-Online workload of Brebner & Ran,
// "Entity Bean A, B, C's" (Middleware 2001), sections 3.1-3.8: an online
// stock broker whose subscribers create and update accounts, query prices,
// buy and sell stock and ask for holding statements.
//
// Files, named as in every workload package: workload.go (the Workload,
// its operations and defaults), schema.go (and schema/*.sql per dialect),
// load.go (Table 1's population), mix.go (Table 2's deck), client.go (the
// random choices of a client and the facade they call), direct.go (the
// seven transactions as direct SQL), entities.go and beans.go (the same
// transactions as a session facade over entity beans, section 3.6),
// check.go (consistency after a run); remote.go and served.go put the
// session bean in a process of its own, its clients calling it over
// internal/remote, as the paper deploys it (stockonlinepb/broker.proto;
// its http protocol in docs/openapi/stockonline.yaml).
//
// It depends on workload, config, container, store and remote only; the
// driver and the runner depend on it, never the reverse.
package stockonline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// The seven transactions of section 3.3; the order is their operation id.
const (
	CreateAccount = iota
	UpdateAccount
	QueryByID
	QueryByCode
	BuyStock
	SellStock
	GetHoldingStatement
	numOps
)

var opNames = [numOps]string{
	CreateAccount:       "CreateAccount",
	UpdateAccount:       "UpdateAccount",
	QueryByID:           "QueryById",
	QueryByCode:         "QueryByCode",
	BuyStock:            "BuyStock",
	SellStock:           "SellStock",
	GetHoldingStatement: "GetHoldingStatement",
}

// Business exceptions (section 3.3: handled, not crashed on).
var (
	ErrUnknownAccount      = workload.Business("unknown account")
	ErrUnknownStock        = workload.Business("unknown stock")
	ErrInsufficientCredit  = workload.Business("insufficient credit")
	ErrNoHolding           = workload.Business("no holding of that stock")
	ErrInsufficientHolding = workload.Business("insufficient holding")
)

// Workload is Stock-Online.
type Workload struct{}

var _ workload.Workload = Workload{}

// New returns the workload for the registry.
func New() Workload { return Workload{} }

func (Workload) Info() workload.Info {
	return workload.Info{
		Name:       "stockonline",
		Title:      "Stock-Online: online stock broking",
		Reference:  "Brebner & Ran, Entity Bean A, B, C's (Middleware 2001), sections 3-4",
		Operations: opNames[:],
		Mix:        Mix(),
		Options:    DefaultOptions,
		Example:    "--clients 20 --mix UpdateAccount=1 --warmup",
		Metric:     workload.Metric{Name: "TPS", Per: time.Second},
		Defaults: config.Defaults{
			Clients:       100,
			ServerThreads: 10,
			Iterations:    10,
		},
		Persistence: []container.Persistence{container.CMP, container.BMP, container.BMPChecked, container.Direct},
		Entities:    entityTypes,
	}
}

// Start readies a run: direct SQL, or a fresh entity container (its
// caches warmed under --warmup, as in the paper's routine); then takes the
// baseline the checks compare against.
func (Workload) Start(ctx context.Context, db *store.DB, p workload.RunParams) (workload.Run, error) {
	r := &run{pop: populationAt(max(p.Scale, 1))}
	var err error
	if r.beans, r.ctr, err = newBusiness(ctx, db, p); err != nil {
		return nil, err
	}
	if r.checker, err = newChecker(ctx, db); err != nil {
		return nil, err
	}
	return r, nil
}

// newBusiness makes the session beans, one per server thread of db: on
// direct SQL, or on a fresh entity container (nil for direct SQL), its
// caches warmed under --warmup. A run in one process and a business tier
// served alone (ServeBusiness) build them alike.
func newBusiness(ctx context.Context, db *store.DB, p workload.RunParams) ([]facade, *container.Container, error) {
	if !p.Persistence.Container() {
		beans, err := newDirect(ctx, db)
		return beans, nil, err
	}
	ctr, err := p.NewContainer(ctx, db, entityTypes)
	if err != nil {
		return nil, nil, err
	}
	if optionsOf(p.Options).Warmup {
		for _, t := range warmed {
			if err := ctr.Warm(ctx, ctr.Home(t.Name)); err != nil {
				return nil, nil, fmt.Errorf("warm-up of %s: %w", t.Name, err)
			}
		}
		ctr.ResetStats()
	}
	return newBeans(ctr, db.Threads()), ctr, nil
}

// run is Stock-Online readied for one run.
type run struct {
	pop   population
	beans []facade
	ctr   *container.Container // nil for direct SQL
	*checker
}

var _ workload.EntityRun = (*run)(nil)

// EntityStats are the container's counters; none for direct SQL.
func (r *run) EntityStats() []workload.EntityStats { return workload.ContainerStats(r.ctr) }

func (r *run) NewClient(_, _ int, rng *rand.Rand) workload.Client {
	return localClient{client: newClient(r.pop, rng), beans: r.beans}
}
