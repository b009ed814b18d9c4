package runner

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// ReplicaCatchUp bounds how long a run waits, after its load, for the
// replicas to replay the population.
const ReplicaCatchUp = 2 * time.Minute

// attachReplicas opens cfg's --replica standbys beside db, the primary,
// which then routes its read-only transactions to them. checksOnly: db is
// the pool of a run whose tiers run the transactions in processes of
// their own; it routes none, so it never probes a lost replica to take
// it back.
func (r *Runner) attachReplicas(ctx context.Context, db *store.DB, cfg config.Run, checksOnly bool) error {
	if len(cfg.Replicas) == 0 {
		return nil
	}
	o := store.ReplicaOptions{Reads: cfg.ReplicaReads}
	if checksOnly {
		o.Rejoin = -1
	}
	err := r.Backends.AttachReplicas(ctx, db, cfg.Replicas, o)
	var ue *store.UsageError
	if errors.As(err, &ue) {
		return config.Usage(ue.Err)
	}
	return err
}

// replicaTerminals gives each client of run a store.Terminal in the
// context of its operations, so that the store can tell a read that may
// miss the client's own last write; a run without replicas is run as it is.
func replicaTerminals(run workload.Run, db *store.DB) workload.Run {
	if db == nil || db.Replicas() == 0 {
		return run
	}
	return terminalRun{run}
}

// terminalRun is a Run whose clients carry their terminals.
type terminalRun struct{ workload.Run }

func (t terminalRun) NewClient(group, id int, rng *rand.Rand) workload.Client {
	c := t.Run.NewClient(group, id, rng)
	tc := &terminalClient{Client: c}
	if ch, ok := c.(workload.Chooser); ok {
		return terminalChooser{tc, ch}
	}
	return tc
}

// terminalClient runs its client's operations with its terminal in their
// context; the context is made once for each the driver passes (it passes
// the same one to a terminal's every operation).
type terminalClient struct {
	workload.Client
	t           store.Terminal
	parent, ctx context.Context
}

func (c *terminalClient) Do(ctx context.Context, step workload.Step) error {
	if ctx != c.parent {
		c.parent, c.ctx = ctx, store.WithTerminal(ctx, &c.t)
	}
	return c.Client.Do(c.ctx, step)
}

// terminalChooser keeps a Chooser's Next.
type terminalChooser struct {
	*terminalClient
	ch workload.Chooser
}

func (c terminalChooser) Next() (int, time.Duration) { return c.ch.Next() }
