package coherence

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// The fixture: a table of accounts whose three first are the hot ones,
// and its entity type with an equality finder (byName, whose entries a
// write names) and a range finder (richerThan, whose entries every write
// of credit invalidates).

func account() *container.Type {
	return &container.Type{
		Name: "Account", Table: "acct",
		Key:     []container.Column{{Name: "id", Kind: container.Int}},
		Fields:  []container.Column{{Name: "name", Kind: container.String}, {Name: "credit", Kind: container.Int}},
		Version: "version", Updated: true,
		Finders: []container.Finder{
			{Name: "byName", Where: "name = ?"},
			{Name: "richerThan", Where: "credit > ?", OrderBy: "id", Many: true},
		},
	}
}

const fCredit = 1

const schema = `DROP TABLE IF EXISTS acct;
CREATE TABLE acct (id BIGINT PRIMARY KEY, name VARCHAR(32) NOT NULL, credit BIGINT NOT NULL, version BIGINT NOT NULL DEFAULT 0);
INSERT INTO acct (id, name, credit) VALUES (1, 'one', 100), (2, 'two', 200), (3, 'three', 300), (4, 'four', 400);`

var hotNames = map[int64]string{1: "one", 2: "two", 3: "three"}

func initialCredit(key int64) int64 { return key * 100 }

// testNATS is the broker of the tests: TIERBENCH_TEST_NATS, or the
// development machines' at 127.0.0.1:4222; each test's run name keeps
// its subjects apart. Unreachable, the test skips (fails under
// TIERBENCH_REQUIRE_SERVICES=1).
func testNATS(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TIERBENCH_TEST_NATS")
	if u == "" {
		u = "nats://127.0.0.1:4222"
	}
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(u, "nats://"), 2*time.Second)
	if err != nil {
		if os.Getenv("TIERBENCH_REQUIRE_SERVICES") == "1" {
			t.Fatalf("NATS at %s unreachable: %v", u, err)
		}
		t.Skipf("NATS at %s unreachable (%v); set TIERBENCH_TEST_NATS", u, err)
	}
	c.Close()
	return u
}

// node is one app server: its own connection pool, container and bus.
type node struct {
	name string
	db   *store.DB
	ctr  *container.Container
	h    *container.Home
	bus  *Bus
}

// clusterOpts shape a test cluster.
type clusterOpts struct {
	servers, threads int
	// noClusterLocks leaves out the locking reads across servers.
	noClusterLocks bool
	deadline       time.Duration
	// noFinders declares the account type without its finders.
	noFinders bool
	// lazyClaims leaves the claims of the account type to the first
	// reads (otherwise every server claims it, and has every answer,
	// before newCluster returns).
	lazyClaims bool
}

// newCluster starts opts.servers app servers over dsn's database, each
// with its own pool and container, coherent over the NATS at url, and
// waits until each may serve from memory.
func newCluster(t *testing.T, dsn, url string, s container.Settings, opts clusterOpts) []*node {
	t.Helper()
	ctx := context.Background()
	run := fmt.Sprintf("test-%s-%d", t.Name(), time.Now().UnixNano())
	var nodes []*node
	for n := range opts.servers {
		db := storetest.Open(t, dsn, store.Options{Threads: opts.threads})
		if n == 0 {
			if err := db.ExecScript(ctx, schema); err != nil {
				t.Fatal(err)
			}
		}
		typ := account()
		if opts.noFinders {
			typ.Finders = nil
		}
		ctr, err := container.New(ctx, db, []*container.Type{typ}, map[string]container.Settings{typ.Name: s})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("s%d", n)
		bus, err := Open(ctx, Options{URL: url, Run: run, Name: name, Servers: opts.servers, Deadline: opts.deadline, Heartbeat: opts.deadline / 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bus.Close() })
		bus.attach(ctr, !opts.noClusterLocks)
		nodes = append(nodes, &node{name: name, db: db, ctr: ctr, h: ctr.Home(typ.Name), bus: bus})
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range nodes {
		for !n.bus.synced() {
			if time.Now().After(deadline) {
				t.Fatalf("%s not in sync with its %d peers after 10s: %+v", n.name, opts.servers-1, n.bus.Counts())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !opts.lazyClaims {
		var buses []*Bus
		for _, n := range nodes {
			buses = append(buses, n.bus)
		}
		claimAll(t, "Account", buses...)
	}
	return nodes
}

// synced reports whether the bus lets its containers serve from memory.
func (b *Bus) synced() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inSync
}

// The history: every committed transaction's reads and writes, stamped
// with a logical clock shared by the servers (one process) and the wall
// clock, for the ages of stale reads.
type history struct {
	mu      sync.Mutex
	clock   int64
	writes  []write
	reads   []read
	finders []finderRead
	// lastKey is the last key newKey gave a created account.
	lastKey int64
}

// firstCreated is the first key of the accounts the transactions create
// (the schema's are 1-4); absent is a created account's credit before
// its creation.
const (
	firstCreated = 10
	absent       = -1
)

// newKey is a key no account has yet.
func (h *history) newKey() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastKey = max(h.lastKey+1, firstCreated)
	return h.lastKey
}

type stamp struct {
	logical int64
	at      time.Time
}

type write struct {
	key, read, wrote int64
	began, ended     stamp
}

type read struct {
	server       string
	key, value   int64
	began, ended stamp
}

type finderRead struct {
	server       string
	threshold    int64
	keys         []int64
	began, ended stamp
}

func (h *history) now() stamp {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clock++
	return stamp{logical: h.clock, at: time.Now()}
}

// promise is what a mode promises of the reads.
type promise struct {
	// noStale: no read returns data older than a commit that returned
	// before its transaction began.
	noStale bool
	// maxAge bounds a stale read's age otherwise: how long before its
	// transaction began the newer data was committed.
	maxAge time.Duration
}

// verdict is the check of a history.
type verdict struct {
	problems []string
	// stale are the stale reads' ages (finder results included).
	stale []time.Duration
}

// check compares the history with the serial model, the database, and
// the mode's promise.
// oneStaleReadIf fails t unless the checker found nothing and the last
// read came from the database (sound: faulty false), or, with fault
// switched on (faulty true), exactly one stale read, served from memory:
// the checker's proof that it catches what the mechanism prevents.
func (v verdict) oneStaleReadIf(t *testing.T, faulty, hit bool, fault string) {
	t.Helper()
	switch {
	case !faulty && (len(v.problems) > 0 || hit):
		t.Errorf("sound: the checker found %q, the last read a cache hit: %v; want none, and a read from the database", v.problems, hit)
	case faulty && (len(v.problems) != 1 || !strings.Contains(v.problems[0], "the mode promises none") || !hit):
		t.Errorf("%s: the checker found %q, the last read a cache hit: %v; want one stale read, a hit", fault, v.problems, hit)
	}
}

func (h *history) check(t *testing.T, db *store.DB, p promise) verdict {
	t.Helper()
	var v verdict
	fail := func(format string, args ...any) { v.problems = append(v.problems, fmt.Sprintf(format, args...)) }
	committed := map[int64][]write{}
	for _, w := range h.writes {
		committed[w.key] = append(committed[w.key], w)
	}
	for key := int64(1); key <= 3; key++ {
		chain := committed[key]
		sortWrites(chain)
		state := initialCredit(key)
		for _, w := range chain {
			if w.read != state {
				fail("account %d: a committed transaction read %d and wrote %d, but the committed credit before it was %d (lost update)", key, w.read, w.wrote, state)
			}
			state = w.wrote
		}
		var got int64
		if err := db.QueryRow(context.Background(), prepare(t, db, fmt.Sprintf("SELECT credit FROM acct WHERE id = %d", key))).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != state {
			fail("account %d: the database holds %d, the serial model of %d committed writes %d", key, got, len(chain), state)
		}
	}
	// supersededAt is when the first write newer than value committed
	// before began returned: the read is stale since then.
	supersededAt := func(key, value int64, began stamp) (time.Time, bool) {
		var at time.Time
		for _, w := range committed[key] {
			if w.ended.logical < began.logical && w.wrote > value && (at.IsZero() || w.ended.at.Before(at)) {
				at = w.ended.at
			}
		}
		return at, !at.IsZero()
	}
	stale := func(age time.Duration, format string, args ...any) {
		v.stale = append(v.stale, age)
		switch {
		case p.noStale:
			fail(format+" (stale read; the mode promises none)", args...)
		case age > p.maxAge:
			fail(format+" (stale read %v old; the mode promises at most %v)", append(args, age.Round(time.Millisecond), p.maxAge)...)
		}
	}
	for _, r := range h.reads {
		known := r.value == initialCredit(r.key)
		for _, w := range committed[r.key] {
			known = known || w.wrote == r.value
		}
		if !known {
			fail("%s read credit %d of account %d, which no committed transaction wrote", r.server, r.value, r.key)
			continue
		}
		if at, ok := supersededAt(r.key, r.value, r.began); ok {
			stale(r.began.at.Sub(at), "%s read credit %d of account %d after a newer one was committed", r.server, r.value, r.key)
		}
	}
	// The finders' results are checked for the hot accounts and the
	// created ones (account 4 is never written).
	watched := []int64{1, 2, 3}
	for _, w := range h.writes {
		if w.read == absent {
			watched = append(watched, w.key)
		}
	}
	for _, f := range h.finders {
		for _, key := range watched {
			held := false
			for _, k := range f.keys {
				held = held || k == key
			}
			// The newest a writer begun before the finder ended could show.
			by := int64(absent)
			if key < firstCreated {
				by = initialCredit(key)
			}
			for _, w := range committed[key] {
				if w.began.logical < f.ended.logical && w.wrote > by {
					by = w.wrote
				}
			}
			if held && by <= f.threshold {
				fail("%s: richerThan(%d) returned account %d, whose credits visible before it ended were at most %d (a phantom)", f.server, f.threshold, key, by)
			}
			if !held {
				if at, ok := supersededAt(key, f.threshold, f.began); ok {
					stale(f.began.at.Sub(at), "%s: richerThan(%d) left out account %d", f.server, f.threshold, key)
				}
			}
		}
	}
	return v
}

func sortWrites(ws []write) {
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && ws[j].wrote < ws[j-1].wrote; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}

func prepare(t *testing.T, db *store.DB, sql string) *store.Stmt {
	t.Helper()
	s, err := db.Prepare(context.Background(), store.Statement{Name: sql, SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
