package stockonline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/invoker"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Stock-Online split as the paper deploys it: the session bean in the
// application server's process, the clients in another calling it
// remotely.

var _ workload.Served = Workload{}

// ServeBusiness registers the Broker service on s, answered by the beans
// a run in one process would use (direct SQL or the entity container, per
// p.Persistence), each call on one of p.Threads server threads (all of
// db's when 0).
func (Workload) ServeBusiness(ctx context.Context, db *store.DB, s grpc.ServiceRegistrar, p workload.RunParams) (func() error, error) {
	beans, ctr, err := newBusiness(ctx, db, p)
	if err != nil {
		return nil, err
	}
	threads := p.Threads
	if threads <= 0 {
		threads = len(beans)
	}
	if threads > len(beans) {
		return nil, fmt.Errorf("stockonline: %d server threads, but the database has sessions for %d", threads, len(beans))
	}
	serveBroker(invoker.Registrar(s, p.Common.Dispatch), beans, threads)
	if ctr != nil && p.ServedEntities != nil {
		p.ServedEntities(func() []workload.EntityStats { return workload.ContainerStats(ctr) })
	}
	// The beans hold statements prepared on db and the container's caches,
	// both released with db and the beans themselves: nothing to close
	// before.
	return func() error { return nil }, nil
}

// Checker reads the baseline of the consistency checks.
func (Workload) Checker(ctx context.Context, db *store.DB, _ workload.RunParams) (workload.Checker, error) {
	return newChecker(ctx, db)
}

// RemoteClients readies terminals that make the choices of a run in one
// process, each transaction one call to the business tier behind conn.
// p.Scale must be the loaded database's: the clients draw accounts and
// stocks from its population without reading it.
func (Workload) RemoteClients(_ context.Context, conn grpc.ClientConnInterface, p workload.RunParams) (workload.Run, error) {
	return &remoteRun{pop: populationAt(max(p.Scale, 1)), conn: conn, protocol: optionsOf(p.Options).Protocol}, nil
}

// remoteRun is Stock-Online's terminals against a remote business tier.
type remoteRun struct {
	pop      population
	conn     grpc.ClientConnInterface
	protocol string

	mu      sync.Mutex
	clients []*remoteClient
}

var _ workload.TieredRun = (*remoteRun)(nil)

func (r *remoteRun) NewClient(_, _ int, rng *rand.Rand) workload.Client {
	c := &remoteClient{client: newClient(r.pop, rng), bean: newRemoteBean(r.conn)}
	r.mu.Lock()
	r.clients = append(r.clients, c)
	r.mu.Unlock()
	return c
}

// Check has nothing to check: the database is the business tier's (see
// Checker).
func (r *remoteRun) Check(context.Context, workload.Outcomes) ([]workload.Check, error) {
	return nil, nil
}

// Tiers are the clients' calls by operation, summed over the clients; safe
// while they run.
func (r *remoteRun) Tiers() workload.Tiers {
	t := workload.Tiers{Style: "session", Protocol: r.protocol, Processes: 2, Calls: make([]workload.RemoteCalls, numOps)}
	for op := range t.Calls {
		t.Calls[op].Name = opNames[op]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		for op := range t.Calls {
			counts := c.meters[op].Counts()
			// Each operation is one call.
			t.Calls[op].Pages += counts.Calls
			t.Calls[op].Counts = t.Calls[op].Counts.Add(counts)
		}
	}
	return t
}

// remoteClient is a terminal whose transactions are remote calls, each
// counted into its operation's Meter. Meters are the client's own, so
// terminals never contend for one; Tiers sums them.
type remoteClient struct {
	*client
	// bean is the client's own: the business tier chooses the thread.
	bean   facade
	meters [numOps]remote.Meter
}

func (c *remoteClient) Do(ctx context.Context, step workload.Step) error {
	if step.Op < 0 || step.Op >= numOps {
		return fmt.Errorf("stockonline: no operation %d", step.Op)
	}
	return c.do(remote.WithMeter(ctx, &c.meters[step.Op]), c.bean, step)
}
