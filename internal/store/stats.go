package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Stats are the database counters of a run.
type Stats struct {
	Statements            int64 `json:"statements"`
	Transactions          int64 `json:"transactions"`
	Commits               int64 `json:"commits"`
	Rollbacks             int64 `json:"rollbacks"`
	Deadlocks             int64 `json:"deadlocks"`
	SerializationFailures int64 `json:"serialization_failures"`
	LockTimeouts          int64 `json:"lock_timeouts"`
	UniqueViolations      int64 `json:"unique_violations"`
	ConnectionsLost       int64 `json:"connections_lost"`
	// InDoubt counts commits whose outcome is unknown (ErrInDoubt); they
	// count neither as commits nor as rollbacks, nor as connections lost.
	InDoubt int64 `json:"in_doubt"`
	// CertificationFailures counts ErrCertification: transactions a
	// multi-master cluster aborted for a conflict with another node.
	CertificationFailures int64 `json:"certification_failures,omitempty"`
	// NodesLost are the cluster nodes lost during the run, in order.
	NodesLost []NodeLoss `json:"nodes_lost,omitempty"`
	// Replicas are the read replicas' counters, when the primary has any
	// (--replica).
	Replicas *ReplicaSummary `json:"replicas,omitempty"`
}

// NodeLoss is a cluster node found gone (its connections failed and it did
// not answer a probe): when, and what became of the transactions it was
// running. Its connections moved to the surviving nodes.
type NodeLoss struct {
	Node string    `json:"node"`
	At   time.Time `json:"at"`
	// InDoubt: commits sent to the node whose answer was lost with it
	// (ErrInDoubt; they may or may not have committed).
	InDoubt int64 `json:"in_doubt"`
	// Retried: transactions cut before their COMMIT, handed back as
	// ErrNodeLost to be run again on a survivor, and SELECTs outside a
	// transaction, run again there by the store itself.
	Retried int64 `json:"retried"`
	// Failed: statements outside a transaction lost with the node
	// (ErrConnectionLost), not retried: their outcome is unknown.
	Failed int64 `json:"failed"`
	// Back is when the node was found serving again (a Galera node:
	// Synced and ready) and the threads that had run on it moved back;
	// nil if it did not come back during the run.
	Back *time.Time `json:"back,omitempty"`
}

// NodeLosses is implemented by a backend over several nodes.
type NodeLosses interface {
	NodesLost() []NodeLoss
}

// NodeCutter is implemented by a backend over the nodes of a cluster
// that can cut one of them from the others (a Galera node from the
// group's communication) and heal it: CutNode cuts node i (from 0, in
// the DSN's order) when cut is true, heals it when false, and returns
// its address.
type NodeCutter interface {
	CutNode(ctx context.Context, i int, cut bool) (addr string, err error)
}

// CutNode cuts node i of the database's cluster from the others, or
// heals it (NodeCutter); a database of one server has no node to cut.
func (db *DB) CutNode(ctx context.Context, i int, cut bool) (string, error) {
	nc, ok := db.backend.(NodeCutter)
	if !ok {
		return "", errors.New("the database is not a cluster of nodes that can be cut from each other")
	}
	return nc.CutNode(ctx, i, cut)
}

// Sub gives the counts between an earlier snapshot and s.
func (s Stats) Sub(earlier Stats) Stats {
	return Stats{
		Statements:            s.Statements - earlier.Statements,
		Transactions:          s.Transactions - earlier.Transactions,
		Commits:               s.Commits - earlier.Commits,
		Rollbacks:             s.Rollbacks - earlier.Rollbacks,
		Deadlocks:             s.Deadlocks - earlier.Deadlocks,
		SerializationFailures: s.SerializationFailures - earlier.SerializationFailures,
		LockTimeouts:          s.LockTimeouts - earlier.LockTimeouts,
		UniqueViolations:      s.UniqueViolations - earlier.UniqueViolations,
		ConnectionsLost:       s.ConnectionsLost - earlier.ConnectionsLost,
		InDoubt:               s.InDoubt - earlier.InDoubt,
		CertificationFailures: s.CertificationFailures - earlier.CertificationFailures,
		// A loss is an event, not a count: those of the later snapshot
		// stand (a run's baseline is taken before any).
		NodesLost: s.NodesLost,
		Replicas:  s.Replicas.sub(earlier.Replicas),
	}
}

// counters are padded to 128 bytes, two whole cache lines, so that the
// thread sessions' counters, which sit side by side, share no line.
type counters struct {
	statements, transactions, commits, rollbacks   atomic.Int64
	deadlocks, serializationFailures, lockTimeouts atomic.Int64
	uniqueViolations, connectionsLost, inDoubt     atomic.Int64
	certificationFailures                          atomic.Int64
	_                                              [5]int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Statements:            c.statements.Load(),
		Transactions:          c.transactions.Load(),
		Commits:               c.commits.Load(),
		Rollbacks:             c.rollbacks.Load(),
		Deadlocks:             c.deadlocks.Load(),
		SerializationFailures: c.serializationFailures.Load(),
		LockTimeouts:          c.lockTimeouts.Load(),
		UniqueViolations:      c.uniqueViolations.Load(),
		ConnectionsLost:       c.connectionsLost.Load(),
		InDoubt:               c.inDoubt.Load(),
		CertificationFailures: c.certificationFailures.Load(),
	}
}

// add is s plus t, counter by counter.
func (s Stats) add(t Stats) Stats {
	return s.Sub(Stats{}.Sub(t))
}

// Stats is a snapshot of the counters since Open: the shared session's
// and every thread session's.
func (db *DB) Stats() Stats {
	s := db.stats.snapshot()
	for i := range db.threadStats {
		s = s.add(db.threadStats[i].snapshot())
	}
	if nl, ok := db.backend.(NodeLosses); ok {
		s.NodesLost = nl.NodesLost()
	}
	if db.replicas != nil {
		s.Replicas = db.replicas.summary()
	}
	return s
}
