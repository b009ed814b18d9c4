package rubis

import (
	"context"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis/browser"
)

// outcomes are successful (and in-doubt) interactions by operation.
func outcomes(succeeded, inDoubt map[int]int64) workload.Outcomes {
	o := workload.Outcomes{Succeeded: make([]int64, numInteractions), InDoubt: make([]int64, numInteractions)}
	for op, n := range succeeded {
		o.Succeeded[op] = n
	}
	for op, n := range inDoubt {
		o.InDoubt[op] = n
	}
	return o
}

// failed lists the checks that did not pass.
func failed(t *testing.T, c *checker, o workload.Outcomes) []string {
	t.Helper()
	checks, err := c.Check(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ch := range checks {
		if !ch.Passed {
			out = append(out, ch.Name)
		}
	}
	return out
}

// Each check passes on the population and fails on a database corrupted
// on purpose, each corruption undone before the next.
func TestChecksCatchCorruption(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		populate(t, dsn, testSeed, popBase)
		db := storetest.Open(t, dsn, store.Options{Threads: 1})
		q := storetest.Querier{T: t, DB: db}
		c, err := newChecker(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		none := outcomes(nil, nil)
		if f := failed(t, c, none); len(f) != 0 {
			t.Fatalf("the population fails %v", f)
		}
		item := q.Int("SELECT MIN(id) FROM items WHERE quantity > 1")
		for _, tt := range []struct {
			name          string
			corrupt, undo string
			want          []string
		}{
			{"a bid counted twice", "UPDATE items SET nb_of_bids = nb_of_bids + 1 WHERE id = ?", "UPDATE items SET nb_of_bids = nb_of_bids - 1 WHERE id = ?", []string{"bids-match-items"}},
			{"a maximum bid no bid made", "UPDATE items SET max_bid = max_bid + 1 WHERE id = ?", "UPDATE items SET max_bid = max_bid - 1 WHERE id = ?", []string{"bids-match-items"}},
			{"a quantity taken without a sale", "UPDATE items SET quantity = quantity - 1 WHERE id = ?", "UPDATE items SET quantity = quantity + 1 WHERE id = ?", []string{"no-overselling"}},
			{"a negative quantity", "UPDATE items SET quantity = -quantity WHERE id = ?", "UPDATE items SET quantity = -quantity WHERE id = ?", []string{"no-overselling"}},
			{"a sale that took nothing", "INSERT INTO buy_now (buyer_id, item_id, qty, date) VALUES (1, ?, 1, CURRENT_TIMESTAMP)", "DELETE FROM buy_now WHERE item_id = ?", []string{"no-overselling", "buy_now-match-StoreBuyNow"}},
			{"a rating no comment gave", "UPDATE users SET rating = rating + 1 WHERE id = (SELECT seller FROM items WHERE id = ?)", "UPDATE users SET rating = rating - 1 WHERE id = (SELECT seller FROM items WHERE id = ?)", []string{"ratings-match-comments"}},
		} {
			q.Exec(tt.corrupt, item)
			if f := failed(t, c, none); strings.Join(f, ",") != strings.Join(tt.want, ",") {
				t.Errorf("%s: failed %v, want %v", tt.name, f, tt.want)
			}
			q.Exec(tt.undo, item)
			if f := failed(t, c, none); len(f) != 0 {
				t.Fatalf("%s undone: still failing %v", tt.name, f)
			}
		}

		// A bid written whole is consistent, and must be one the browsers
		// counted (or one in doubt).
		q.Exec("INSERT INTO bids (user_id, item_id, qty, bid, max_bid, date) VALUES (1, ?, 1, 1000000, 1000001, CURRENT_TIMESTAMP)", item)
		q.Exec("UPDATE items SET nb_of_bids = nb_of_bids + 1, max_bid = 1000001 WHERE id = ?", item)
		if f := failed(t, c, none); strings.Join(f, ",") != "bids-match-StoreBid" {
			t.Errorf("an uncounted bid: failed %v, want bids-match-StoreBid", f)
		}
		if f := failed(t, c, outcomes(map[int]int64{browser.StoreBid: 1}, nil)); len(f) != 0 {
			t.Errorf("a counted bid: failed %v", f)
		}
		if f := failed(t, c, outcomes(nil, map[int]int64{browser.StoreBid: 2})); len(f) != 0 {
			t.Errorf("a bid in doubt that committed: failed %v", f)
		}
		if f := failed(t, c, outcomes(map[int]int64{browser.StoreBid: 2}, nil)); strings.Join(f, ",") != "bids-match-StoreBid" {
			t.Errorf("two counted bids, one row: failed %v", f)
		}

		// A nickname twice: only once its unique key is gone.
		drop := map[store.Dialect]string{
			store.SQLite:   "DROP INDEX users_nickname_key",
			store.Postgres: "ALTER TABLE users DROP CONSTRAINT users_nickname_key",
			store.MySQL:    "ALTER TABLE users DROP INDEX nickname",
		}[db.Dialect()]
		q.Exec(drop)
		q.Exec(`INSERT INTO users (firstname, lastname, nickname, password, email, rating, balance, creation_date, region)
			SELECT firstname, lastname, nickname, password, email, 0, balance, creation_date, region FROM users WHERE id = 1`)
		if f := failed(t, c, outcomes(map[int]int64{browser.StoreBid: 1, browser.RegisterUser: 1}, nil)); strings.Join(f, ",") != "nicknames-unique" {
			t.Errorf("a nickname twice: failed %v, want nicknames-unique", f)
		}
	})
}
