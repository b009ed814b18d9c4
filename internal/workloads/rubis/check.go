package rubis

import (
	"context"
	"fmt"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/browser"
)

// The interactions are the browser's states: an interaction's index is its
// operation id.
const numInteractions = browser.NumStates

// Interactions are the operations' names.
var Interactions = browser.StateNames

// writes are the tables each writing interaction adds one row to.
var writes = []struct {
	op    int
	table string
}{
	{browser.RegisterUser, "users"}, {browser.StoreBuyNow, "buy_now"}, {browser.StoreBid, "bids"},
	{browser.StoreComment, "comments"}, {browser.RegisterItem, "items"},
}

var checkStatements = struct {
	bids, quantity, ratings, nicknames store.Statement
}{
	// max_bid is the highest maximum bid (the PHP StoreBid raises it to
	// the new bid's maxBid when higher), 0 for an item without bids.
	bids: store.Statement{Name: "rubis-check-bids", SQL: `SELECT COUNT(*) FROM items i WHERE i.nb_of_bids <> (SELECT COUNT(*) FROM bids b WHERE b.item_id = i.id)
		OR i.max_bid <> COALESCE((SELECT MAX(b.max_bid) FROM bids b WHERE b.item_id = i.id), 0)`},
	quantity: store.Statement{Name: "rubis-check-quantity", SQL: "SELECT id, quantity FROM items"},
	// Every rating starts at 0 and moves only with a comment about the
	// user (the population keeps the same rule).
	ratings: store.Statement{Name: "rubis-check-ratings", SQL: `SELECT COUNT(*) FROM users u
		WHERE u.rating <> COALESCE((SELECT SUM(c.rating) FROM comments c WHERE c.to_user_id = u.id), 0)`},
	nicknames: store.Statement{Name: "rubis-check-nicknames", SQL: "SELECT COUNT(*) FROM (SELECT nickname FROM users GROUP BY nickname HAVING COUNT(*) > 1) d"},
}

// buyNowSums is each item's buy_now quantities.
var buyNowSums = store.Statement{Name: "rubis-check-buy-now", SQL: "SELECT item_id, SUM(qty) FROM buy_now GROUP BY item_id"}

// checker holds the database's state before the run and compares the state
// after it with what the browsers did.
type checker struct {
	db *store.DB
	// rows are the row counts of the written tables before the run.
	rows map[string]int64
	// quantity is each item's quantity plus what it had sold before the
	// run: its initial quantity, which StoreBuyNow may only share out.
	quantity map[int64]int64
}

func newChecker(ctx context.Context, db *store.DB) (*checker, error) {
	c := &checker{db: db, rows: make(map[string]int64)}
	for _, w := range writes {
		n, err := c.count(ctx, w.table)
		if err != nil {
			return nil, err
		}
		c.rows[w.table] = n
	}
	var err error
	c.quantity, err = c.initialQuantities(ctx)
	return c, err
}

func (c *checker) count(ctx context.Context, table string) (int64, error) {
	s := store.Statement{Name: "rubis-count-" + table, SQL: "SELECT COUNT(*) FROM " + table}
	var n int64
	if err := c.scalar(ctx, s, &n); err != nil {
		return 0, err
	}
	return n, nil
}

func (c *checker) scalar(ctx context.Context, s store.Statement, dst *int64) error {
	p, err := c.db.Prepare(ctx, s)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	if err := c.db.QueryRow(ctx, p).Scan(dst); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// pairs reads (id, value) rows.
func (c *checker) pairs(ctx context.Context, s store.Statement) (map[int64]int64, error) {
	p, err := c.db.Prepare(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	rows, err := c.db.Query(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer rows.Close()
	out := make(map[int64]int64)
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		out[id] = v
	}
	return out, rows.Err()
}

// initialQuantities is each item's quantity plus its buy_now quantities.
func (c *checker) initialQuantities(ctx context.Context) (map[int64]int64, error) {
	q, err := c.pairs(ctx, checkStatements.quantity)
	if err != nil {
		return nil, err
	}
	sold, err := c.pairs(ctx, buyNowSums)
	if err != nil {
		return nil, err
	}
	for id, n := range sold {
		q[id] += n
	}
	return q, nil
}

// Check compares the database after the run with the baseline and the
// browsers' counts of successful interactions. A write in doubt may or may
// not be in the database: the counts allow for either and say how many
// were.
func (c *checker) Check(ctx context.Context, done workload.Outcomes) ([]workload.Check, error) {
	succeeded, inDoubt := done.Succeeded, done.InDoubtOrZero()
	var checks []workload.Check
	add := func(name string, passed bool, format string, args ...any) {
		checks = append(checks, workload.Check{Name: name, Passed: passed, Detail: fmt.Sprintf(format, args...)})
	}
	q := &checkStatements

	var bad int64
	if err := c.scalar(ctx, q.bids, &bad); err != nil {
		return nil, err
	}
	add("bids-match-items", bad == 0, "%d items whose nb_of_bids or max_bid differ from their bids (want 0)", bad)

	now, err := c.initialQuantities(ctx)
	if err != nil {
		return nil, err
	}
	current, err := c.pairs(ctx, q.quantity)
	if err != nil {
		return nil, err
	}
	// An item's quantity plus what it sold is its initial quantity,
	// whatever the run sold of it: more is a sale that took nothing from
	// the quantity, less a quantity taken without a sale.
	var negative, unpaid, lost int64
	for id, n := range current {
		if n < 0 {
			negative++
		}
		if before, ok := c.quantity[id]; ok && now[id] > before {
			unpaid++
		} else if ok && now[id] < before {
			lost++
		}
	}
	add("no-overselling", negative == 0 && unpaid == 0 && lost == 0,
		"%d items with a negative quantity, %d that sold more than their quantity gave, %d whose quantity fell without a sale (want 0, 0, 0)", negative, unpaid, lost)

	if err := c.scalar(ctx, q.ratings, &bad); err != nil {
		return nil, err
	}
	add("ratings-match-comments", bad == 0, "%d users whose rating is not the sum of the comments about them (want 0)", bad)

	if err := c.scalar(ctx, q.nicknames, &bad); err != nil {
		return nil, err
	}
	add("nicknames-unique", bad == 0, "%d nicknames held by more than one user (want 0)", bad)

	for _, w := range writes {
		n, err := c.count(ctx, w.table)
		if err != nil {
			return nil, err
		}
		want := c.rows[w.table] + succeeded[w.op]
		ok, note := workload.Reconcile(n-want, inDoubt[w.op])
		add(w.table+"-match-"+Interactions[w.op], ok, "%d %s rows = %d before + %d successful %s (want %d)%s",
			n, w.table, c.rows[w.table], succeeded[w.op], Interactions[w.op], want, note)
	}
	return checks, nil
}
