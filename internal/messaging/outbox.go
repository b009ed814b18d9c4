package messaging

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/store"
)

// outboxBatch is how many rows the relay reads, publishes and deletes at a
// time: large enough that a backlog costs few round trips, small enough
// that a crash republishes little.
const outboxBatch = 100

// Outbox relays the ids a transaction commits into an outbox table to a
// Queue. Publishing inside the transaction would announce work that may
// still roll back, and publishing after the commit loses the message if
// the process dies in between; a row written by the transaction and
// relayed afterwards has neither problem. A row is deleted only after its
// publish was acknowledged, so a failure between the two republishes it;
// the stream's de-duplication (message id = prefix and row id) drops the
// copy within one prefix (see OutboxConfig).
type Outbox struct {
	db     *store.DB
	q      *Queue
	table  string
	prefix string // of message ids
	sel    *store.Stmt
	del    *store.Stmt
	kick   chan struct{}
	// running (capacity 1) admits one relay pass at a time, or rows could
	// go out twice; a channel, not a mutex, so that a pass waiting for
	// another (the drain's behind Run's) gives up when its context ends.
	running chan struct{}

	published  atomic.Int64
	duplicates atomic.Int64
	inDoubt    atomic.Int64
	batches    atomic.Int64
	errors     atomic.Int64
	lastErr    atomic.Pointer[error]
}

// OutboxStats counts what an Outbox has relayed.
type OutboxStats struct {
	// Published is the number of rows the stream stored as new messages.
	Published int64
	// Duplicates is the number of rows the stream had already (a relay
	// stopped between publish and delete): dropped by its de-duplication.
	Duplicates int64
	// InDoubt is the number of publishes that got no answer from the
	// stream (a timeout, a connection lost, a leader being elected): the
	// stream may or may not have stored the message. Its row stays and is
	// published again by a later pass under the same message id, which
	// the stream drops if the first one was stored (counted in
	// Duplicates then).
	InDoubt int64
	// Batches is the number of non-empty batches relayed.
	Batches int64
	// Errors is the number of relay passes that failed (Run's or
	// RelayOnce's), not counting those cut short by their context.
	Errors int64
}

// String says what the relay did, for a check's detail: a publish in
// doubt was retried under its message id, and the copies those retries
// produced were dropped by the stream.
func (s OutboxStats) String() string {
	return fmt.Sprintf("%d published, %d in doubt (no answer from the stream: published again under the same message id), %d dropped by the stream as copies",
		s.Published, s.InDoubt, s.Duplicates)
}

// OutboxConfig names the outbox table and the relay's message ids.
type OutboxConfig struct {
	// Table and IDColumn: the table whose int64 ids are relayed.
	Table, IDColumn string
	// MessageIDPrefix goes before each row's id in the message id. Within
	// one prefix the stream drops a republished id (a relay that failed
	// between publish and delete, retried) as a copy. A relay whose ids can
	// repeat across processes (a table reloaded from 1, rows written again
	// after a crash) needs a prefix of its own per process, or the stream
	// would drop new messages as copies of old ones; the copies a restart
	// then republishes are the idempotent receiver's to absorb.
	MessageIDPrefix string
}

// NewOutbox prepares the relay of cfg's table to q. Rows already in the
// table (left by a process killed after its commit but before the relay)
// go out with the first pass.
func NewOutbox(ctx context.Context, db *store.DB, q *Queue, cfg OutboxConfig) (*Outbox, error) {
	for _, n := range []struct{ field, v string }{{"Table", cfg.Table}, {"IDColumn", cfg.IDColumn}} {
		if !isIdentifier(n.v) {
			return nil, fmt.Errorf("messaging: outbox %s = %q; want an SQL identifier (letters, digits, _)", n.field, n.v)
		}
	}
	table, idColumn := cfg.Table, cfg.IDColumn
	o := &Outbox{db: db, q: q, table: table, prefix: cfg.MessageIDPrefix, kick: make(chan struct{}, 1), running: make(chan struct{}, 1)}
	var err error
	o.sel, err = db.Prepare(ctx, store.Statement{
		Name: "outbox-select-" + table,
		SQL:  fmt.Sprintf("SELECT %[2]s FROM %[1]s WHERE %[2]s > ? ORDER BY %[2]s LIMIT %[3]d", table, idColumn, outboxBatch),
	})
	if err != nil {
		return nil, fmt.Errorf("messaging: outbox %s: %w", table, err)
	}
	o.del, err = db.Prepare(ctx, store.Statement{
		Name: "outbox-delete-" + table,
		SQL:  fmt.Sprintf("DELETE FROM %s WHERE %s = ?", table, idColumn),
	})
	if err != nil {
		return nil, fmt.Errorf("messaging: outbox %s: %w", table, err)
	}
	return o, nil
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// RelayOnce publishes and deletes every row of the table, in id order, in
// batches, and returns how many it relayed. Rows are deleted by id, never
// by range: a transaction holding a lower id may commit after a higher one
// was read, and its row must stay for the next pass. A pass under way
// (Run's) is waited for, until ctx ends.
func (o *Outbox) RelayOnce(ctx context.Context) (int, error) {
	select {
	case o.running <- struct{}{}:
	case <-ctx.Done():
		return 0, fmt.Errorf("messaging: outbox %s: wait for the relay pass under way: %w", o.table, context.Cause(ctx))
	}
	defer func() { <-o.running }()
	n, err := o.relayAll(ctx)
	if err != nil && ctx.Err() == nil {
		o.errors.Add(1)
		o.lastErr.Store(&err)
	}
	return n, err
}

func (o *Outbox) relayAll(ctx context.Context) (int, error) {
	total := 0
	after := int64(math.MinInt64)
	ids := make([]int64, 0, outboxBatch)
	for {
		ids = ids[:0]
		var err error
		ids, err = o.read(ctx, after, ids)
		if err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		if err := o.relay(ctx, ids); err != nil {
			return total, err
		}
		o.batches.Add(1)
		total += len(ids)
		after = ids[len(ids)-1]
		if len(ids) < outboxBatch {
			return total, nil
		}
	}
}

func (o *Outbox) read(ctx context.Context, after int64, ids []int64) ([]int64, error) {
	rows, err := o.db.Query(ctx, o.sel, after)
	if err != nil {
		return nil, fmt.Errorf("messaging: outbox %s: read: %w", o.table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("messaging: outbox %s: read: %w", o.table, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("messaging: outbox %s: read: %w", o.table, err)
	}
	return ids, nil
}

// relay publishes a batch, then deletes the rows of the ids published; on
// a publish error the ids acknowledged before it are still deleted.
func (o *Outbox) relay(ctx context.Context, ids []int64) error {
	done := 0
	var perr error
	for _, id := range ids {
		s := strconv.FormatInt(id, 10)
		// Fault tests kill the process here: the row is committed, its
		// message not yet published.
		failpoint.Hit(ctx, "outbox-publish")
		dup, err := o.q.Publish(ctx, o.prefix+s, []byte(s))
		if err != nil {
			if ctx.Err() == nil && InDoubt(err) {
				o.inDoubt.Add(1)
			}
			perr = fmt.Errorf("messaging: outbox %s: %w", o.table, err)
			break
		}
		if dup {
			o.duplicates.Add(1)
		} else {
			o.published.Add(1)
		}
		done++
	}
	if done == 0 {
		return perr
	}
	// One transaction per batch: on PostgreSQL the queued deletes and the
	// commit travel in one round trip.
	if err := o.db.InTx(ctx, func(tx *store.Tx) error {
		for _, id := range ids[:done] {
			tx.Queue(o.del, id)
		}
		return nil
	}); err != nil {
		// The rows stay and go out again on the next pass; de-duplication
		// drops the copies.
		return fmt.Errorf("messaging: outbox %s: delete %d relayed rows: %w", o.table, done, err)
	}
	return perr
}

// Run relays until ctx is done: a pass, then a wait for interval or a
// Kick. A failed pass is counted (Stats.Errors, LastErr) and retried after
// the wait; the rows it left are relayed then.
func (o *Outbox) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		o.RelayOnce(ctx) // a failed pass is counted there and retried after the wait
		t.Reset(interval)
		select {
		case <-ctx.Done():
			return
		case <-o.kick:
		case <-t.C:
		}
	}
}

// Kick asks Run for a pass soon, without blocking: a commit just wrote a
// row. Kicks during a pass coalesce into one more pass.
func (o *Outbox) Kick() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Stats is a snapshot of the counters.
func (o *Outbox) Stats() OutboxStats {
	return OutboxStats{
		Published:  o.published.Load(),
		Duplicates: o.duplicates.Load(),
		InDoubt:    o.inDoubt.Load(),
		Batches:    o.batches.Load(),
		Errors:     o.errors.Load(),
	}
}

// LastErr is the error of the latest failed relay pass, or nil.
func (o *Outbox) LastErr() error {
	if p := o.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// InDoubt reports whether a failed Publish may have stored its message
// all the same: the stream did not answer (no acknowledgement, no
// responder while a leader is elected, a connection lost on the way), as
// opposed to answering with a refusal. Publishing again under the same
// message id settles it: the stream drops the copy if the first got in.
func InDoubt(err error) bool {
	if err == nil {
		return false
	}
	var api *jetstream.APIError
	return !errors.As(err, &api)
}
