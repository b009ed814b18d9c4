package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/sqldb"
)

// Cluster is the backend of a --db that names several nodes of a
// multi-master cluster (MariaDB Galera): server thread i writes on node
// i mod N, the shared work (loads, checks) on the first live node. A node
// whose connections fail and that does not answer a probe is lost: every
// executor on it moves to the next live node, and the transactions it cut
// are handed back to be run again (store.ErrNodeLost) when they had not
// sent their COMMIT, in doubt when they had; a SELECT outside a
// transaction runs again on a survivor itself. A lost node is probed until
// it serves again (a Galera node: Synced and ready); then the executors
// whose node it is move back to it.
type Cluster struct {
	nodes     []*node
	isolation store.Isolation
	galera    bool
	shared    *mover
	threads   []*mover
	lockConn  *sql.Conn
	lockDB    *sql.DB
	idle      int // the threads' pools' idle connections
	dsn       store.DSN

	mu     sync.Mutex
	losses []store.NodeLoss
	// stmts are every statement prepared, to prepare on a node that
	// comes back.
	stmts []*clusterStmt

	// stopWatch stops the probes of the lost nodes (watch).
	stopWatch func()
}

var (
	_ store.Backend    = (*Cluster)(nil)
	_ store.NodeLosses = (*Cluster)(nil)
	_ store.NodeCutter = (*Cluster)(nil)
)

// RejoinInterval is how often a lost node is probed for its return.
var RejoinInterval = 250 * time.Millisecond

// node is one server of the cluster with its two pools: the threads'
// one, and the shared work's, whose reads wait until the node has applied
// every write the cluster committed before them (wsrep_sync_wait), so that
// a check after the run sees all of it.
type node struct {
	index     int
	addr      string
	connector driver.Connector
	threads   sqldb.DB
	shared    sqldb.DB
	// probes is a pool without wsrep_sync_wait, whose reads a node cut
	// from the primary component would hold until they time out.
	probes         *sql.DB
	down           atomic.Bool
	loss           int // index in Cluster.losses once down
	probe          sync.Mutex
	conflicts      sync.Mutex
	seenConflicts  int64
	conflictsKnown bool
}

// clusterStmt is a statement prepared on each node's pools; nil on a node
// that was down when it was prepared, until the node comes back.
type clusterStmt struct {
	q  string
	on []atomic.Pointer[nodeStmt]
	// reads: a SELECT, which run in its own implicit transaction writes
	// nothing, so a node lost under it costs only running it again.
	reads bool
}

type nodeStmt struct{ threads, shared store.Prepared }

// openCluster connects to every node, learns whether they run Galera, and
// builds their pools. Nodes down already are lost from the start; all of
// them down is ErrUnreachable.
func openCluster(ctx context.Context, dsn store.DSN, opts store.Options) (store.Backend, error) {
	c := &Cluster{isolation: opts.Isolation, idle: opts.Threads, dsn: dsn}
	setIsolation := "SET SESSION TRANSACTION ISOLATION LEVEL " + opts.Isolation.SQL()
	var live []*node
	var lastErr error
	for i, host := range dsn.Hosts() {
		cfg, err := driverConfig(dsn, host)
		if err != nil {
			return nil, &store.UsageError{Err: fmt.Errorf("--db %s: %v", dsn, err)}
		}
		n := &node{index: i, addr: cfg.Addr}
		c.nodes = append(c.nodes, n)
		probe, err := connector(cfg, nil)
		if err != nil {
			return nil, &store.UsageError{Err: fmt.Errorf("--db %s: %v", dsn, err)}
		}
		var on sql.NullString
		db := sql.OpenDB(probe)
		err = db.QueryRowContext(ctx, "SELECT @@wsrep_on").Scan(&on)
		db.Close()
		var me *gomysql.MySQLError
		switch {
		case err == nil:
			c.galera = c.galera || on.String == "1" || on.String == "ON"
		case errors.As(err, &me): // MySQL: no wsrep variables
		default:
			lastErr = err
			n.down.Store(true)
			c.lose(n)
			continue
		}
		live = append(live, n)
	}
	if len(live) == 0 {
		return nil, fmt.Errorf("%w: %s: no node answers: %v", store.ErrUnreachable, dsn, lastErr)
	}
	for _, n := range c.nodes {
		cfg, _ := driverConfig(dsn, n.addr)
		tc, _ := connector(cfg, []string{setIsolation})
		sharedSet := []string{setIsolation}
		if c.galera {
			sharedSet = append(sharedSet, "SET SESSION wsrep_sync_wait = 1")
		}
		sc, _ := connector(cfg, sharedSet)
		n.connector = tc
		pc, _ := connector(cfg, nil)
		n.probes = sql.OpenDB(pc)
		n.probes.SetMaxIdleConns(1)
		inDoubt, statementDoubt := commitInDoubt, statementInDoubt
		if c.galera {
			inDoubt, statementDoubt = galeraCommitInDoubt, galeraStatementInDoubt
		}
		n.threads = sqldb.DB{SQL: sql.OpenDB(tc), CommitInDoubt: inDoubt, StatementInDoubt: statementDoubt}
		n.shared = sqldb.DB{SQL: sql.OpenDB(sc), CommitInDoubt: inDoubt, StatementInDoubt: statementDoubt}
		n.threads.SQL.SetMaxOpenConns(opts.Threads)
		n.threads.SQL.SetMaxIdleConns(opts.Threads)
		// The shared work (loads, checks, a workload's agents) may be as
		// busy as on a single server, whose pool it shares with the
		// threads there.
		n.shared.SQL.SetMaxOpenConns(opts.Threads + 1)
		n.shared.SQL.SetMaxIdleConns(2)
	}
	c.shared = &mover{c: c, shared: true, home: live[0].index}
	c.shared.cur.Store(int32(live[0].index))
	for i := range opts.Threads {
		m := &mover{c: c, home: i % len(c.nodes)}
		m.cur.Store(int32(m.home))
		c.threads = append(c.threads, m)
	}
	if c.galera {
		for _, n := range live {
			n.certified(ctx) // the baseline of its conflict counters
		}
	}
	c.stopWatch = store.Every(RejoinInterval, c.watch)
	return c, nil
}

func connector(cfg *gomysql.Config, set []string) (driver.Connector, error) {
	conn, err := gomysql.NewConnector(cfg)
	if err != nil || len(set) == 0 {
		return conn, err
	}
	return isolatingConnector{Connector: conn, set: set}, nil
}

func (c *Cluster) Dialect() store.Dialect     { return store.MySQL }
func (c *Cluster) Isolation() store.Isolation { return c.isolation }
func (c *Cluster) Shared() store.Executor     { return c.shared }

func (c *Cluster) Thread(i int) store.Executor {
	if i < 0 || i >= len(c.threads) {
		return c.shared
	}
	return c.threads[i]
}

// NodesLost are the nodes lost so far, with what they took with them.
func (c *Cluster) NodesLost() []store.NodeLoss {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.losses) == 0 {
		return nil
	}
	return append([]store.NodeLoss(nil), c.losses...)
}

func (c *Cluster) ServerVersion(ctx context.Context) (string, error) {
	n := c.shared.node()
	v, err := serverVersion(ctx, n.shared.SQL)
	if err != nil {
		return "", c.after(n, err, lostOutside)
	}
	if c.galera {
		v += fmt.Sprintf(" galera, %d nodes", len(c.nodes))
	}
	return v, nil
}

func (c *Cluster) Prepare(ctx context.Context, q string) (store.Prepared, error) {
	stmt := &clusterStmt{q: q, on: make([]atomic.Pointer[nodeStmt], len(c.nodes)),
		reads: store.IsSelect(q)}
	prepared := false
	var lastErr error
	for _, n := range c.nodes {
		if n.down.Load() {
			continue
		}
		on, err := n.prepare(ctx, q)
		for wait := 0; err != nil && prepared && noSuchTable(err) && wait < 100; wait++ {
			// A table just created on another node: Galera runs DDL on
			// every node in the same order, but this one may not have
			// applied it yet.
			time.Sleep(100 * time.Millisecond)
			on, err = n.prepare(ctx, q)
		}
		if err != nil {
			if !connectionError(err) || !c.lost(n) {
				return nil, err
			}
			lastErr = err
			continue
		}
		stmt.on[n.index].Store(on)
		prepared = true
	}
	if !prepared {
		return nil, lastErr
	}
	c.mu.Lock()
	c.stmts = append(c.stmts, stmt)
	c.mu.Unlock()
	return stmt, nil
}

// noSuchTable: errno 1146, ER_NO_SUCH_TABLE.
func noSuchTable(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

// prepare prepares q on n's two pools.
func (n *node) prepare(ctx context.Context, q string) (*nodeStmt, error) {
	t, err := n.threads.Prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	s, err := n.shared.Prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	return &nodeStmt{threads: t, shared: s}, nil
}

func (c *Cluster) ExecScript(ctx context.Context, script string) error {
	n := c.shared.node()
	return c.after(n, n.shared.ExecScript(ctx, script), lostOutside)
}

func (c *Cluster) BulkInsert(ctx context.Context, table string, columns []string, src store.RowSource) (int64, error) {
	n := c.shared.node()
	rows, err := n.shared.InsertBatches(ctx, table, columns, src, rowsPerInsert)
	return rows, c.after(n, err, lostOutside)
}

// Classify is the single server's; node losses and certification
// failures are classified where they are seen (after), on their node.
func (c *Cluster) Classify(err error) error { return classify(err) }

func (c *Cluster) Close() error {
	c.stopWatch()
	var first error
	for _, n := range c.nodes {
		for _, db := range []*sql.DB{n.threads.SQL, n.shared.SQL, n.probes} {
			if db == nil {
				continue
			}
			if err := db.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	if c.lockConn != nil {
		unlock(c.lockConn, c.lockDB)
	}
	return first
}

// where a failure happened, for what a node loss does to it.
type where int

const (
	// lostInTx: in a transaction before its COMMIT: nothing committed,
	// run it again elsewhere.
	lostInTx where = iota
	// lostOutside: a statement in its own implicit transaction: a write
	// whose connection broke once it was sent may have committed, and
	// comes as ErrInDoubt (sqldb.DB.StatementInDoubt); anything else
	// fails.
	lostOutside
)

// after classifies err, a failure on node n: a node loss (the node does
// not answer a probe) is recorded and, before a COMMIT, handed back as
// retryable; a deadlock on a Galera node that its conflict counters
// explain is a certification failure.
func (c *Cluster) after(n *node, err error, w where) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrInDoubt):
		if c.lost(n) {
			c.count(n, func(l *store.NodeLoss) { l.InDoubt++ })
		}
		return err
	case connectionError(err):
		if !c.lost(n) {
			return err
		}
		if w == lostInTx {
			c.count(n, func(l *store.NodeLoss) { l.Retried++ })
			return store.Classified(store.ErrNodeLost, store.Classified(store.ErrConnectionLost, err))
		}
		c.count(n, func(l *store.NodeLoss) { l.Failed++ })
		return err
	}
	var me *gomysql.MySQLError
	if c.galera && errors.As(err, &me) && me.Number == errLockDeadlock && n.certified(context.Background()) {
		return store.Classified(store.ErrCertification, err)
	}
	return err
}

// connectionError: the connection failed, or the node refuses work (a
// Galera node cut from the primary component answers 1047, "WSREP has
// not yet prepared node for application use"). A timeout is not one: the
// survivors of a node's death stall until the cluster evicts it (5 s,
// evs.suspect_timeout), and a slow node is not a lost one.
func connectionError(err error) bool {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == errServerShutdown || me.Number == errConnKilled || me.Number == errUnknownCom
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}

// galeraCommitInDoubt: on a Galera node a COMMIT refused with 1047 or 1180 (the
// node left the primary component while the COMMIT was out) may have
// been replicated before it left, and committed by the others: measured,
// a Stock-Online trade so refused and run again was in the database
// twice. It is in doubt, as a COMMIT whose connection broke.
func galeraCommitInDoubt(err error) bool {
	var me *gomysql.MySQLError
	return commitInDoubt(err) || errors.As(err, &me) && (me.Number == errUnknownCom || me.Number == errDuringCommit)
}

// galeraStatementInDoubt is galeraCommitInDoubt for a statement outside a
// transaction, which commits as it runs: its connection lost with the
// node (a Stock-Online CreateAccount so cut was in the database, measured
// in CI on 3 December 2026), or the node refusing it as it leaves the
// primary component.
func galeraStatementInDoubt(err error) bool {
	var me *gomysql.MySQLError
	return statementInDoubt(err) || errors.As(err, &me) && (me.Number == errUnknownCom || me.Number == errDuringCommit)
}

// errDuringCommit is ER_ERROR_DURING_COMMIT, which a Galera node leaving
// the primary component answers to a COMMIT whose write set it was
// replicating ("Error while appending streaming replication fragment
// (provider status: Not connected to Primary Component)"): the others
// may have certified and committed it. Measured: a Stock-Online
// CreateAccount so refused was in the database, one account more than
// the run counted.
const errDuringCommit = 1180

// errUnknownCom is ER_UNKNOWN_COM_ERROR, which a Galera node not in the
// primary component answers to every query.
const errUnknownCom = 1047

// lost reports whether n is gone: already known, or its probe (a fresh
// connection, SELECT 1) fails. The first to find it records the loss.
func (c *Cluster) lost(n *node) bool {
	if n.down.Load() {
		return true
	}
	n.probe.Lock()
	defer n.probe.Unlock()
	if n.down.Load() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.serving(ctx, n, false)
	// A probe that timed out found the node slow (stalled by the
	// cluster's reconfiguration), not gone.
	if err == nil || !connectionError(err) {
		return false
	}
	c.lose(n)
	n.down.Store(true)
	return true
}

// errNotReady: a Galera node answers but is not ready for work (cut from
// the primary component, or still joining); a connection error.
var errNotReady = &gomysql.MySQLError{Number: errUnknownCom, Message: "WSREP has not yet prepared node for application use"}

// serving probes n on a fresh connection: nil if it serves. A Galera
// node must be ready (wsrep_ready, in the primary component); to come
// back (synced) it must also have caught up with the cluster
// (wsrep_local_state 4, Synced).
func (c *Cluster) serving(ctx context.Context, n *node, synced bool) error {
	conn, err := n.probes.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.PingContext(ctx); err != nil {
		return err
	}
	if !c.galera {
		_, err = conn.ExecContext(ctx, "SELECT 1")
		return err
	}
	status := map[string]string{}
	rows, err := conn.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state')")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		status[name] = value
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if status["wsrep_ready"] != "ON" || synced && status["wsrep_local_state"] != "4" {
		return errNotReady
	}
	return nil
}

// watch probes each lost node (every RejoinInterval: store.Every) and
// takes back one that serves again.
func (c *Cluster) watch(ctx context.Context) {
	for _, n := range c.nodes {
		if n.down.Load() {
			c.rejoin(ctx, n)
		}
	}
}

// rejoin takes n back if it serves again: it drops the connections it
// had (a restarted server's are dead), prepares on it what was prepared
// while it was away, records its return, and marks it up, so that the
// executors whose node it is move back at their next statement.
func (c *Cluster) rejoin(ctx context.Context, n *node) {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if c.serving(pctx, n, true) != nil {
		return
	}
	n.probe.Lock()
	defer n.probe.Unlock()
	n.threads.SQL.SetMaxIdleConns(0)
	n.threads.SQL.SetMaxIdleConns(c.idle)
	n.shared.SQL.SetMaxIdleConns(0)
	n.shared.SQL.SetMaxIdleConns(2)
	c.mu.Lock()
	stmts := append([]*clusterStmt(nil), c.stmts...)
	c.mu.Unlock()
	for _, s := range stmts {
		if s.on[n.index].Load() != nil {
			continue
		}
		on, err := n.prepare(pctx, s.q)
		if err != nil {
			return // not back yet: the next probe tries again
		}
		s.on[n.index].Store(on)
	}
	if c.galera {
		n.certified(pctx) // a new baseline of its conflict counters
	}
	c.mu.Lock()
	back := time.Now()
	if n.loss < len(c.losses) && c.losses[n.loss].Node == n.addr {
		c.losses[n.loss].Back = &back
	}
	c.mu.Unlock()
	n.down.Store(false)
}

// CutNode cuts node i from the others' group communication, or heals
// it: Galera's gmcast.isolate, set on the node itself (decision 0036).
// Its clients' connections stay up: once the others have evicted it
// (evs.suspect_timeout) it is a primary component of one, not ready,
// and refuses their queries; healed, it rejoins by IST.
func (c *Cluster) CutNode(ctx context.Context, i int, cut bool) (string, error) {
	if i < 0 || i >= len(c.nodes) {
		return "", fmt.Errorf("no node %d: the cluster has %d", i, len(c.nodes))
	}
	n := c.nodes[i]
	if !c.galera {
		return n.addr, fmt.Errorf("node %s runs no Galera: only a Galera node can be cut from the others", n.addr)
	}
	cfg, err := driverConfig(c.dsn, n.addr)
	if err != nil {
		return n.addr, err
	}
	conn, err := connector(cfg, nil)
	if err != nil {
		return n.addr, err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	isolate := 0
	if cut {
		isolate = 1
	}
	_, err = db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=%d'", isolate))
	return n.addr, err
}

// lose records n's loss.
func (c *Cluster) lose(n *node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.loss = len(c.losses)
	c.losses = append(c.losses, store.NodeLoss{Node: n.addr, At: time.Now()})
}

func (c *Cluster) count(n *node, f func(*store.NodeLoss)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.losses[n.loss])
}

// certified reports whether a deadlock error just seen on n was a
// certification failure: MariaDB (10.4 and later) reports a conflict with
// another node's write, at certification or by the brute-force abort of
// a local transaction by a replicated one, with the errno and text of an
// InnoDB deadlock; only the node's counters (wsrep_local_cert_failures
// and wsrep_local_bf_aborts) tell them apart. A rise of their sum since
// the last error explains this one, and is consumed whole: one conflict
// can raise both counters (a transaction brute-force aborted while it
// certifies), and the node's counters count other clients' conflicts
// too, so counting a rise of two as two errors would make the next local
// deadlock a certification failure. Conflicts that come together on one
// node are then counted as one certification failure and the others as
// deadlocks: both classes are retried alike, and the certification
// count is a lower bound (decision 0024).
func (n *node) certified(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var sum sql.NullInt64
	err := n.shared.SQL.QueryRowContext(ctx, `SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS
		WHERE VARIABLE_NAME IN ('WSREP_LOCAL_CERT_FAILURES', 'WSREP_LOCAL_BF_ABORTS')`).Scan(&sum)
	if err != nil {
		return false
	}
	n.conflicts.Lock()
	defer n.conflicts.Unlock()
	if !n.conflictsKnown {
		n.seenConflicts, n.conflictsKnown = sum.Int64, true
		return false
	}
	if sum.Int64 > n.seenConflicts {
		n.seenConflicts = sum.Int64
		return true
	}
	return false
}

// mover is an executor that runs on one node at a time: its home node,
// or while that is lost the next live one after it.
type mover struct {
	c      *Cluster
	shared bool
	home   int
	cur    atomic.Int32
}

var _ store.Executor = (*mover)(nil)

// node is the mover's node: its home, or the first live one after it;
// when every node is down it stays (the errors say so).
func (m *mover) node() *node {
	nodes := m.c.nodes
	for k := range nodes {
		n := nodes[(m.home+k)%len(nodes)]
		if !n.down.Load() {
			m.cur.Store(int32(n.index))
			return n
		}
	}
	return nodes[m.cur.Load()]
}

// on is n's pool and statement for this mover; the statement is nil when
// it is not prepared on n.
func (m *mover) on(n *node, p store.Prepared) (sqldb.DB, store.Prepared) {
	s := p.(*clusterStmt).on[n.index].Load()
	db := n.threads
	if m.shared {
		db = n.shared
	}
	if s == nil {
		return db, nil
	}
	if m.shared {
		return db, s.shared
	}
	return db, s.threads
}

func (m *mover) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	n := m.node()
	db, s := m.on(n, p)
	if s == nil {
		return store.Result{}, m.c.after(n, driver.ErrBadConn, lostOutside)
	}
	r, err := db.Exec(ctx, s, args)
	return r, m.c.after(n, err, lostOutside)
}

func (m *mover) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	n := m.node()
	db, s := m.on(n, p)
	if s == nil {
		return store.FailedRow(m.c.after(n, driver.ErrBadConn, lostOutside))
	}
	row := scanner{db.QueryRow(ctx, s, args), m.c, n, lostOutside}
	if !p.(*clusterStmt).reads {
		return row
	}
	return rereadRow{row, m, ctx, p, args}
}

// rereadRow is a SELECT's row outside a transaction: if its node turns
// out lost when the row is scanned, the SELECT runs again on a survivor
// (it wrote nothing), and the loss counts it retried, not failed. It
// keeps the call's context because a row's error comes only with Scan.
type rereadRow struct {
	first scanner
	m     *mover
	ctx   context.Context
	p     store.Prepared
	args  []any
}

func (r rereadRow) Scan(dest ...any) error {
	err := r.first.s.Scan(dest...)
	if next, again := r.m.elsewhere(r.first.n, err); again {
		db, s := r.m.on(next, r.p)
		if s == nil {
			return r.m.c.after(next, driver.ErrBadConn, lostOutside)
		}
		return scanner{db.QueryRow(r.ctx, s, r.args), r.m.c, next, lostOutside}.Scan(dest...)
	}
	return r.first.c.after(r.first.n, err, lostOutside)
}

func (m *mover) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	n := m.node()
	db, s := m.on(n, p)
	if s == nil {
		return nil, m.c.after(n, driver.ErrBadConn, lostOutside)
	}
	r, err := db.Query(ctx, s, args)
	if p.(*clusterStmt).reads {
		if next, again := m.elsewhere(n, err); again {
			n = next
			if db, s = m.on(n, p); s == nil {
				return nil, m.c.after(n, driver.ErrBadConn, lostOutside)
			}
			r, err = db.Query(ctx, s, args)
		}
	}
	if err != nil {
		return nil, m.c.after(n, err, lostOutside)
	}
	return rows{r, m.c, n, lostOutside}, nil
}

// elsewhere reports whether err, on n, is n's loss with another node
// left to run a statement again on, and which; the loss counts one
// statement retried. Only a SELECT outside a transaction is run again
// so: it wrote nothing. (One that fails later, while its rows are read,
// fails: its caller has seen some of them.)
func (m *mover) elsewhere(n *node, err error) (*node, bool) {
	if err == nil || !connectionError(err) || !m.c.lost(n) {
		return nil, false
	}
	next := m.node()
	if next == n {
		return nil, false // every node is down
	}
	m.c.count(n, func(l *store.NodeLoss) { l.Retried++ })
	return next, true
}

// Begin pins the transaction to the mover's node of the moment.
func (m *mover) Begin(ctx context.Context) (store.BackendTx, error) {
	n := m.node()
	db := n.threads
	if m.shared {
		db = n.shared
	}
	t, err := db.Begin(ctx)
	if err != nil {
		return nil, m.c.after(n, err, lostInTx)
	}
	return &clusterTx{t: t, m: m, n: n}, nil
}

// clusterTx is a transaction on one node.
type clusterTx struct {
	t store.BackendTx
	m *mover
	n *node
}

func (t *clusterTx) stmt(p store.Prepared) store.Prepared {
	_, s := t.m.on(t.n, p)
	return s
}

func (t *clusterTx) Start(ctx context.Context) error {
	return t.m.c.after(t.n, t.t.Start(ctx), lostInTx)
}

func (t *clusterTx) Exec(ctx context.Context, p store.Prepared, args []any) (store.Result, error) {
	s := t.stmt(p)
	if s == nil {
		return store.Result{}, t.m.c.after(t.n, driver.ErrBadConn, lostInTx)
	}
	r, err := t.t.Exec(ctx, s, args)
	return r, t.m.c.after(t.n, err, lostInTx)
}

func (t *clusterTx) QueryRow(ctx context.Context, p store.Prepared, args []any) store.Scanner {
	s := t.stmt(p)
	if s == nil {
		return store.FailedRow(t.m.c.after(t.n, driver.ErrBadConn, lostInTx))
	}
	return scanner{t.t.QueryRow(ctx, s, args), t.m.c, t.n, lostInTx}
}

func (t *clusterTx) Query(ctx context.Context, p store.Prepared, args []any) (store.BackendRows, error) {
	s := t.stmt(p)
	if s == nil {
		return nil, t.m.c.after(t.n, driver.ErrBadConn, lostInTx)
	}
	r, err := t.t.Query(ctx, s, args)
	if err != nil {
		return nil, t.m.c.after(t.n, err, lostInTx)
	}
	return rows{r, t.m.c, t.n, lostInTx}, nil
}

// Commit runs the queued statements on the transaction's node; a failure
// before the COMMIT is retryable when the node is lost, one of the COMMIT
// itself is in doubt (sqldb tells them apart).
func (t *clusterTx) Commit(ctx context.Context, queued []store.Queued) error {
	onNode := make([]store.Queued, len(queued))
	for i, q := range queued {
		q.P = t.stmt(q.P)
		if q.P == nil {
			t.t.Rollback(ctx)
			return t.m.c.after(t.n, driver.ErrBadConn, lostInTx)
		}
		onNode[i] = q
	}
	return t.m.c.after(t.n, t.t.Commit(ctx, onNode), lostInTx)
}

// Rollback on a lost node has nothing to undo: the server went with it.
func (t *clusterTx) Rollback(ctx context.Context) error {
	err := t.t.Rollback(ctx)
	if err != nil && t.n.down.Load() {
		return nil
	}
	return err
}

type scanner struct {
	s store.Scanner
	c *Cluster
	n *node
	w where
}

func (s scanner) Scan(dest ...any) error { return s.c.after(s.n, s.s.Scan(dest...), s.w) }

type rows struct {
	store.BackendRows
	c *Cluster
	n *node
	w where
}

func (r rows) Scan(dest ...any) error { return r.c.after(r.n, r.BackendRows.Scan(dest...), r.w) }
func (r rows) Err() error             { return r.c.after(r.n, r.BackendRows.Err(), r.w) }
