package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReplicaReads is what a read-only transaction routed to a replica does
// about its terminal's own earlier writes.
type ReplicaReads string

const (
	// Eventual: the read runs on the replica as it is; one that may have
	// missed the terminal's last write is counted (a read-your-writes
	// violation).
	Eventual ReplicaReads = "eventual"
	// Causal: the read waits until its replica has replayed the
	// terminal's last commit, or, past CausalWait, runs on the primary.
	Causal ReplicaReads = "causal"
)

// ReplicaReadModes lists the values of --replica-reads, for messages.
const ReplicaReadModes = "eventual (a read may miss the terminal's own last write, counted), causal (a read waits until its replica has replayed the terminal's last commit)"

// CausalWait is how long a causal read waits for its replica, unless
// ReplicaOptions say otherwise, before it goes to the primary instead.
const CausalWait = time.Second

// ReplicaOptions are how reads use the replicas.
type ReplicaOptions struct {
	// Reads: empty is Eventual.
	Reads ReplicaReads
	// CausalWait: zero is the package's CausalWait.
	CausalWait time.Duration
	// Rejoin is how often the replicas found lost are probed to be taken
	// back (see RejoinInterval): zero is RejoinInterval, negative never.
	Rejoin time.Duration
}

// Terminal is one client's position for read-your-writes: where the WAL
// stood after its last committed write. A terminal's transactions carry it
// in their context (WithTerminal); without one, reads are routed but not
// checked.
type Terminal struct{ lsn atomic.Uint64 }

type terminalKey struct{}

// WithTerminal gives ctx's transactions t's position.
func WithTerminal(ctx context.Context, t *Terminal) context.Context {
	return context.WithValue(ctx, terminalKey{}, t)
}

// TerminalOf is ctx's terminal (WithTerminal); nil when it has none.
// The remote layer carries it across a tier boundary (decision 0045).
func TerminalOf(ctx context.Context) *Terminal {
	t, _ := ctx.Value(terminalKey{}).(*Terminal)
	return t
}

// Position is where the WAL stood after the terminal's last committed
// write, in bytes from 0/0; 0 when it has written nothing.
func (t *Terminal) Position() uint64 { return t.lsn.Load() }

// Advance moves the terminal's position to at, unless it is past it
// already: a position the client carried from an earlier request (RUBiS's
// browsers carry theirs in a cookie, see FormatLSN).
func (t *Terminal) Advance(at uint64) {
	for {
		old := t.lsn.Load()
		if at <= old || t.lsn.CompareAndSwap(old, at) {
			return
		}
	}
}

// FormatLSN writes a position as PostgreSQL writes an LSN: the high and
// low 32 bits in hexadecimal, 16/B374D848.
func FormatLSN(at uint64) string {
	return strconv.FormatUint(at>>32, 16) + "/" + strconv.FormatUint(at&0xFFFFFFFF, 16)
}

// ParseLSN reads a position FormatLSN wrote (or PostgreSQL printed).
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if ok {
		h, err1 := strconv.ParseUint(hi, 16, 32)
		l, err2 := strconv.ParseUint(lo, 16, 32)
		if err1 == nil && err2 == nil {
			return h<<32 | l, nil
		}
	}
	return 0, fmt.Errorf("%q is not a WAL position (want HI/LO in hexadecimal, as 16/B374D848)", s)
}

// replicaSet is the primary's replicas and how reads are routed to them.
type replicaSet struct {
	list  []*replica
	next  atomic.Uint64
	reads ReplicaReads
	wait  time.Duration
	// position reads the primary's WAL position after a commit.
	position     *Stmt
	replay       *Stmt
	primaryReads atomic.Int64
	positions    atomic.Int64
	lag          lagSampler
	// stopRejoin stops the probes of the lost replicas (nil when Rejoin
	// is negative).
	stopRejoin func()
}

// replica is one standby: its own connections and counters (a DB of its
// own), and what routing learnt of it.
type replica struct {
	db   *DB
	name string
	// replayed is the highest replay position it was seen at.
	replayed atomic.Uint64
	reads    atomic.Int64
	probes   atomic.Int64
	missed   atomic.Int64
	waits    atomic.Int64
	waitNs   atomic.Int64
	fellBack atomic.Int64

	mu sync.Mutex
	// lostAt is when it was lost, zero while it is live; outages are its
	// losses in order, the last one open while it is lost.
	lostAt  time.Time
	outages []outage
	// mark is the primary's WAL position at the last probe of it while
	// lost (0: not probed since it was lost): it is back once it replays
	// up to there.
	mark uint64
}

// outage is one loss of a replica: when, when it came back, and its reads
// counter then and at its next loss (ended).
type outage struct {
	lost, back        time.Time
	readsAt, readsEnd int64
	ended             bool
}

var (
	// The positions as bytes from the start of the WAL: comparable
	// integers, decoded like any bigint.
	walPosition = Statement{Name: "wal-position", Dialects: map[Dialect]string{
		Postgres: "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8",
	}}
	replayPosition = Statement{Name: "replay-position", Dialects: map[Dialect]string{
		Postgres: "SELECT COALESCE((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8, 0)",
	}}
	inRecovery = Statement{Name: "in-recovery", Dialects: map[Dialect]string{
		Postgres: "SELECT pg_is_in_recovery()",
	}}
)

// AttachReplicas opens dsns as db's read replicas (hot standbys of the
// primary db is opened on), each with as many thread sessions as db, and
// routes db's read-only transactions to them (DB.ReadOnly). A replica that
// does not answer is ErrUnreachable, naming it; one that is not a standby
// (the primary itself, say) a UsageError.
func (b *Backends) AttachReplicas(ctx context.Context, db *DB, dsns []DSN, opts ReplicaOptions) error {
	if len(dsns) == 0 {
		return nil
	}
	if db.Dialect() != Postgres {
		return &UsageError{Err: fmt.Errorf("--replica: read replicas are PostgreSQL hot standbys; --db is %s", db.Dialect())}
	}
	rs := &replicaSet{reads: cmp.Or(opts.Reads, Eventual), wait: cmp.Or(opts.CausalWait, CausalWait)}
	var err error
	if rs.position, err = db.Prepare(ctx, walPosition); err != nil {
		return err
	}
	for _, d := range dsns {
		r, err := b.openReplica(ctx, db, d)
		if err != nil {
			for _, r := range rs.list {
				r.db.Close()
			}
			return err
		}
		rs.list = append(rs.list, r)
	}
	if rs.replay, err = rs.list[0].db.Prepare(ctx, replayPosition); err != nil {
		return err
	}
	if opts.Rejoin >= 0 {
		if rs.stopRejoin, err = startRejoin(ctx, db, rs, cmp.Or(opts.Rejoin, RejoinInterval)); err != nil {
			return err
		}
	}
	db.replicas = rs
	return nil
}

func (b *Backends) openReplica(ctx context.Context, primary *DB, d DSN) (*replica, error) {
	if d.Dialect != Postgres {
		return nil, &UsageError{Err: fmt.Errorf("--replica %s: a replica of a PostgreSQL primary is postgres://USER@HOST:PORT/DB", d)}
	}
	db, err := b.Open(ctx, d, Options{Threads: primary.Threads(), Isolation: primary.Isolation()})
	if err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return nil, &UsageError{Err: fmt.Errorf("--replica %s: %v", d, strings.TrimPrefix(ue.Error(), "--db "))}
		}
		return nil, fmt.Errorf("--replica %s: %w", d, err)
	}
	s, err := db.Prepare(ctx, inRecovery)
	var standby bool
	if err == nil {
		err = db.QueryRow(ctx, s).Scan(&standby)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: --replica %s: %v", ErrUnreachable, d, err)
	}
	if !standby {
		db.Close()
		return nil, &UsageError{Err: fmt.Errorf("--replica %s is not a hot standby (pg_is_in_recovery() is false): give the standbys of --db %s, not a primary", d, primary.DSN())}
	}
	r := &replica{db: db, name: d.String()}
	db.replicaOf = r
	return r, nil
}

// Replicas is the number of read replicas attached.
func (db *DB) Replicas() int {
	if db.replicas == nil {
		return 0
	}
	return len(db.replicas.list)
}

// ReadOnly is the session a read-only transaction of server thread i runs
// on: a live replica's, in turn, or the primary's thread session when db
// has none live. A replica that has not replayed the terminal's last
// commit (see WithTerminal) is counted as a read-your-writes violation
// (eventual reads) or waited for, up to CausalWait, then left for the
// primary (causal). A session of a replica that fails with a lost
// connection marks the replica lost and fails its transaction with
// ErrNodeLost, retryable: run again, it goes elsewhere.
func (db *DB) ReadOnly(ctx context.Context, i int) *Session {
	rs := db.replicas
	if rs == nil || i < 0 || i >= len(db.threads) {
		return db.Thread(i)
	}
	var want uint64
	if t := TerminalOf(ctx); t != nil {
		want = t.lsn.Load()
	}
	n := uint64(len(rs.list))
	start := rs.next.Add(1)
	for k := range n {
		r := rs.list[(start+k)%n]
		if r.isLost() {
			continue
		}
		s := r.db.threads[i]
		if want == 0 || r.replayed.Load() >= want {
			r.reads.Add(1)
			return s
		}
		caughtUp, err := rs.catchUp(ctx, r, s, want)
		if err != nil {
			continue // lost (marked by its classify) or cancelled: another
		}
		if caughtUp {
			r.reads.Add(1)
			return s
		}
		if rs.reads == Eventual {
			r.missed.Add(1)
			r.reads.Add(1)
			return s
		}
		r.fellBack.Add(1)
		break
	}
	rs.primaryReads.Add(1)
	return db.threads[i]
}

// catchUp reads r's replay position over s; under causal reads it polls,
// with a short backoff, until r has replayed want or rs.wait passes.
func (rs *replicaSet) catchUp(ctx context.Context, r *replica, s *Session, want uint64) (bool, error) {
	var began time.Time
	pause := 200 * time.Microsecond
	for {
		var at int64
		r.probes.Add(1)
		if err := r.db.classify(s.x.QueryRow(ctx, rs.replay.p, nil).Scan(&at)); err != nil {
			return false, err
		}
		r.saw(uint64(at))
		if uint64(at) >= want {
			if !began.IsZero() {
				r.waits.Add(1)
				r.waitNs.Add(int64(time.Since(began)))
			}
			return true, nil
		}
		if rs.reads != Causal {
			return false, nil
		}
		if began.IsZero() {
			began = time.Now()
		} else if time.Since(began) >= rs.wait {
			r.waits.Add(1)
			r.waitNs.Add(int64(time.Since(began)))
			return false, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// saw records that r had replayed up to at.
func (r *replica) saw(at uint64) {
	for {
		old := r.replayed.Load()
		if at <= old || r.replayed.CompareAndSwap(old, at) {
			return
		}
	}
}

func (r *replica) isLost() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.lostAt.IsZero()
}

// lose marks r lost, once, and returns err as ErrNodeLost: the
// transaction only read, so run again elsewhere it loses nothing.
func (r *replica) lose(err error) error {
	r.mu.Lock()
	if r.lostAt.IsZero() {
		now := time.Now().UTC()
		r.lostAt, r.mark = now, 0
		if n := len(r.outages); n > 0 {
			r.outages[n-1].readsEnd, r.outages[n-1].ended = r.reads.Load(), true
		}
		r.outages = append(r.outages, outage{lost: now})
	}
	r.mu.Unlock()
	return Classified(ErrNodeLost, fmt.Errorf("replica %s: %w", r.name, err))
}

// wrote records, for ctx's terminal, where the primary's WAL stands after
// a write that x (a thread's executor) just committed.
func (db *DB) wrote(ctx context.Context, x Querier) {
	rs := db.replicas
	if rs == nil {
		return
	}
	t := TerminalOf(ctx)
	if t == nil {
		return
	}
	var at int64
	rs.positions.Add(1)
	if err := x.QueryRow(ctx, rs.position.p, nil).Scan(&at); err != nil {
		// The commit stands; the terminal's next read is checked against
		// its previous write only.
		return
	}
	t.Advance(uint64(at))
}

func (rs *replicaSet) close() {
	rs.lag.stop()
	if rs.stopRejoin != nil {
		rs.stopRejoin()
	}
	for _, r := range rs.list {
		r.db.Close()
	}
}

// AwaitReplicas waits until every live replica has replayed what the
// primary had written when it was called (the population a load wrote,
// say), so that a run's first reads find it; a replica still behind after
// timeout is an error naming it.
func (db *DB) AwaitReplicas(ctx context.Context, timeout time.Duration) error {
	rs := db.replicas
	if rs == nil {
		return nil
	}
	var want int64
	if err := db.QueryRow(ctx, rs.position).Scan(&want); err != nil {
		return fmt.Errorf("primary's WAL position: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for _, r := range rs.list {
		for {
			var at int64
			if err := r.db.QueryRow(ctx, rs.replay).Scan(&at); err != nil {
				return fmt.Errorf("--replica %s: %w", r.name, err)
			}
			r.saw(uint64(at))
			if at >= want {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("--replica %s: still %d bytes of WAL behind the primary after %v", r.name, want-at, timeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}
