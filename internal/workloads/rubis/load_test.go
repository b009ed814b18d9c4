package rubis

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// TestLoad loads scale 1 into every backend (each test its own schema or
// database, so RUBiS's users, items, … never meet another test's tables)
// and checks the rows against the generators, the invariants the pages and
// checks rely on, and the item rules' shares. It loads over a copy of the
// other tests' population (another seed and time base): the load drops and
// recreates every table, so the rows must be this load's alone, none left
// or doubled. (The load into an empty database is the one every test
// binary makes once per backend for populate.)
func TestLoad(t *testing.T) {
	t.Parallel()
	const seed = 42
	pop := mustPopulation(t, 1)
	base := timeBase(time.Now())
	want := popChecksumsOf(t, seed, pop, base)
	loaded := make(map[string]map[string]popChecksum)
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		populate(t, dsn, testSeed, popBase)
		db := storetest.Open(t, dsn, store.Options{Threads: 1})
		report, err := loadAt(ctx, db, workload.LoadParams{Scale: 1, Seed: seed}, base)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		q := storetest.Querier{T: t, DB: db}
		checkLoadCounts(t, q, report, pop, want["bids"].Rows)
		checkLoadInvariants(t, q, pop)
		checkLoadDates(t, q, base)
		checkLoadShares(t, q, pop)
		// The kit's names and its skew (--items-per-category original),
		// as every backend stores them.
		if got, want := q.Ints("SELECT COUNT(*) FROM items GROUP BY category ORDER BY category"),
			[]int64{14, 27, 3, 29, 5, 76, 7, 6, 11, 10, 23, 11, 14, 2, 11, 31, 3, 2, 37, 8}; !slices.Equal(got, want) {
			t.Errorf("active items per category %v, want the kit's file's counts scaled: %v", got, want)
		}
		var boston, jewelry string
		if err := q.Row("SELECT r.name, c.name FROM regions r, categories c WHERE r.id = 24 AND c.id = 11").Scan(&boston, &jewelry); err != nil ||
			boston != "MA--Boston " || jewelry != "Jewelry, Gems & Watches" {
			t.Errorf("region 24 %q, category 11 %q (%v); want the kit's %q and %q", boston, jewelry, err, "MA--Boston ", "Jewelry, Gems & Watches")
		}
		got := loadedChecksums(t, q, seed, pop, base)
		for table, w := range want {
			if got[table] != w {
				t.Errorf("%s: loaded %v, generated %v", table, got[table], w)
			}
		}
		loaded[string(db.Dialect())] = got
		if db.Dialect() == store.Postgres {
			var method string
			if err := q.Row("SELECT COALESCE(pg_column_compression(description), 'none') FROM old_items WHERE LENGTH(description) > 4096 LIMIT 1").
				Scan(&method); err != nil || method != "lz4" {
				t.Logf("descriptions compressed with %q (%v): lz4 unavailable, the load is slower", method, err)
			}
		}
		checkLoadKeys(t, q, pop)
	})
	// Each backend matched the generators; say which were compared.
	names := make([]string, 0, len(loaded))
	for name := range loaded {
		names = append(names, name)
	}
	t.Logf("identical rows on %s", strings.Join(names, ", "))
}

// TestLoadBadScale checks that a bad scale is an error, before any DDL.
func TestLoadBadScale(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, storetest.SQLite(t), store.Options{Threads: 1})
	if _, err := load(context.Background(), db, workload.LoadParams{Scale: -3}); err == nil || !strings.Contains(err.Error(), "-3") {
		t.Errorf("scale -3: error %v", err)
	}
}

func checkLoadCounts(t *testing.T, q storetest.Querier, report workload.LoadReport, pop population, bids int64) {
	t.Helper()
	want := map[string]int64{
		"categories": numCategories, "regions": numRegions, "users": pop.Users,
		"old_items": pop.OldItems, "items": pop.ActiveItems, "bids": bids,
		"comments": pop.Comments(), "buy_now": 0, "ids": 1,
	}
	if bids != q.Int("SELECT SUM(nb_of_bids) FROM items") {
		t.Errorf("%d bids generated, items count %d", bids, q.Int("SELECT SUM(nb_of_bids) FROM items"))
	}
	q.WantRows(want, report.Tables, report.Rows)
	if report.Duration <= 0 {
		t.Errorf("report: duration %v", report.Duration)
	}
}

// checkLoadInvariants runs queries that count rows breaking a rule; each
// must find none.
func checkLoadInvariants(t *testing.T, q storetest.Querier, pop population) {
	t.Helper()
	for _, z := range []struct{ what, sql string }{
		{"items whose nb_of_bids is not their bid count",
			"SELECT COUNT(*) FROM items i WHERE nb_of_bids <> (SELECT COUNT(*) FROM bids b WHERE b.item_id = i.id)"},
		{"items whose max_bid is not their bids' largest max_bid",
			"SELECT COUNT(*) FROM items i WHERE max_bid <> COALESCE((SELECT MAX(b.max_bid) FROM bids b WHERE b.item_id = i.id), 0)"},
		{"old items with bids", "SELECT COUNT(*) FROM old_items WHERE nb_of_bids <> 0 OR max_bid <> 0"},
		{"bids on no active item", "SELECT COUNT(*) FROM bids WHERE item_id NOT IN (SELECT id FROM items)"},
		{"bids of unknown users", "SELECT COUNT(*) FROM bids WHERE user_id NOT IN (SELECT id FROM users)"},
		{"bids for more than the item's quantity or below its price",
			"SELECT COUNT(*) FROM bids b JOIN items i ON i.id = b.item_id WHERE b.qty > i.quantity OR b.qty < 1 OR b.bid <= i.initial_price OR b.max_bid <= b.bid"},
		{"users whose rating is not the sum of the comments about them",
			"SELECT COUNT(*) FROM users u WHERE rating <> COALESCE((SELECT SUM(c.rating) FROM comments c WHERE c.to_user_id = u.id), 0)"},
		{"users whose region is not (id - 1) mod 62 + 1", "SELECT COUNT(*) FROM users WHERE region <> (id - 1) % 62 + 1"},
		{"users of unknown regions", "SELECT COUNT(*) FROM users WHERE region NOT IN (SELECT id FROM regions)"},
		{"users with a balance", "SELECT COUNT(*) FROM users WHERE balance <> 0"},
		{"items of unknown categories or sellers", "SELECT COUNT(*) FROM items WHERE category NOT IN (SELECT id FROM categories) OR seller NOT IN (SELECT id FROM users)"},
		{"old items of unknown categories or sellers", "SELECT COUNT(*) FROM old_items WHERE category NOT IN (SELECT id FROM categories) OR seller NOT IN (SELECT id FROM users)"},
		{"items ids shared by items and old_items", "SELECT COUNT(*) FROM items i JOIN old_items o ON o.id = i.id"},
		{"comments not to their item's seller",
			"SELECT COUNT(*) FROM comments c WHERE to_user_id <> COALESCE((SELECT seller FROM items i WHERE i.id = c.item_id), (SELECT seller FROM old_items o WHERE o.id = c.item_id))"},
		{"comments of another rating than -5, -3, 0, 3, 5", "SELECT COUNT(*) FROM comments WHERE rating NOT IN (-5, -3, 0, 3, 5)"},
		{"comments from unknown users", "SELECT COUNT(*) FROM comments WHERE from_user_id NOT IN (SELECT id FROM users)"},
		{"texts of no length or too long", "SELECT COUNT(*) FROM comments WHERE LENGTH(comment) < 1 OR LENGTH(comment) > 2048"},
		{"descriptions of no length or too long", "SELECT COUNT(*) FROM old_items WHERE LENGTH(description) < 1 OR LENGTH(description) > 8192"},
		{"reserve prices below the initial price", "SELECT COUNT(*) FROM items WHERE reserve_price <> 0 AND reserve_price < initial_price"},
		{"buy-now prices below initial plus reserve", "SELECT COUNT(*) FROM items WHERE buy_now <> 0 AND buy_now < initial_price + reserve_price"},
	} {
		if n := q.Int(z.sql); n != 0 {
			t.Errorf("%d %s", n, z.what)
		}
	}
	if n := q.Int("SELECT COUNT(DISTINCT nickname) FROM users"); n != pop.Users {
		t.Errorf("%d distinct nicknames for %d users", n, pop.Users)
	}
	// A client logs in as user i knowing only i.
	const someone = 4711
	if id := q.Int("SELECT id FROM users WHERE nickname = ? AND password = ?", nickname(someone), password(someone)); id != someone {
		t.Errorf("%s/%s is user %d", nickname(someone), password(someone), id)
	}
	var category, region, users, item, comment, bid, buyNow int64
	if err := q.Row("SELECT category, region, users, item, comment, bid, buyNow FROM ids WHERE id = 1").
		Scan(&category, &region, &users, &item, &comment, &bid, &buyNow); err != nil {
		t.Fatalf("ids: %v", err)
	}
	nextBid := q.Int("SELECT COALESCE(MAX(id), 0) + 1 FROM bids")
	if category != numCategories+1 || region != numRegions+1 || users != pop.Users+1 || item != pop.Items()+1 ||
		comment != pop.Comments()+1 || bid != nextBid || buyNow != 1 {
		t.Errorf("ids holds %d %d %d %d %d %d %d, not the next ids", category, region, users, item, comment, bid, buyNow)
	}
}

// checkLoadDates checks that every active auction is open for at least
// minTimeLeft after the time base and at most 7 days, and every old one
// closed before it, comparing in the database as the pages' searches do.
func checkLoadDates(t *testing.T, q storetest.Querier, base time.Time) {
	t.Helper()
	week := base.Add(maxAuctionDays * 24 * time.Hour)
	for _, z := range []struct {
		what string
		sql  string
		args []any
	}{
		{"active items ending within an hour of the time base", "SELECT COUNT(*) FROM items WHERE end_date < ?", []any{base.Add(time.Hour)}},
		{"active items ending after a week", "SELECT COUNT(*) FROM items WHERE end_date > ?", []any{week}},
		{"active items starting after the time base", "SELECT COUNT(*) FROM items WHERE start_date > ?", []any{base}},
		{"old items not ended", "SELECT COUNT(*) FROM old_items WHERE end_date >= ?", []any{base}},
		{"bids after the time base", "SELECT COUNT(*) FROM bids WHERE date > ?", []any{base}},
		{"users registered after the time base", "SELECT COUNT(*) FROM users WHERE creation_date > ?", []any{base}},
	} {
		if n := q.Int(z.sql, z.args...); n != 0 {
			t.Errorf("%d %s", n, z.what)
		}
	}
	if n := q.Int("SELECT COUNT(*) FROM items WHERE end_date >= ?", base); n != q.Int("SELECT COUNT(*) FROM items") {
		t.Errorf("a search at the time base finds %d open auctions of %d", n, q.Int("SELECT COUNT(*) FROM items"))
	}
}

// checkLoadShares checks InitDB's item rules over the loaded rows of both
// item tables.
func checkLoadShares(t *testing.T, q storetest.Querier, pop population) {
	t.Helper()
	var counts [3]int64
	for i, cond := range []string{"quantity = 1", "reserve_price > 0", "buy_now > 0"} {
		counts[i] = q.Int("SELECT COUNT(*) FROM items WHERE "+cond) + q.Int("SELECT COUNT(*) FROM old_items WHERE "+cond)
	}
	checkShares(t, pop.Items(), counts)
}

// checkLoadKeys checks the constraints and sequences built after the load:
// nicknames stay unique, and new rows get ids after the loaded ones.
func checkLoadKeys(t *testing.T, q storetest.Querier, pop population) {
	t.Helper()
	at := time.Now().UTC().Truncate(time.Second)
	insertUser := "INSERT INTO users (firstname, lastname, nickname, password, email, rating, balance, creation_date, region) " +
		"VALUES ('A', 'B', ?, 'p', 'e', 0, 0, ?, 1)"
	for _, tc := range []struct {
		table  string
		after  int64
		insert string
		args   []any
	}{
		{"users", pop.Users, insertUser, []any{"newcomer", at}},
		{"items", pop.Items(), "INSERT INTO items (name, description, initial_price, quantity, reserve_price, buy_now, nb_of_bids, max_bid, " +
			"start_date, end_date, seller, category) VALUES ('n', 'd', 1, 1, 0, 0, 0, 0, ?, ?, 1, 1)", []any{at, at}},
		{"bids", q.Int("SELECT MAX(id) FROM bids"), "INSERT INTO bids (user_id, item_id, qty, bid, max_bid, date) VALUES (1, ?, 1, 1, 1, ?)",
			[]any{pop.FirstActiveItem(), at}},
		{"comments", pop.Comments(), "INSERT INTO comments (from_user_id, to_user_id, item_id, rating, date, comment) VALUES (1, 1, 1, 0, ?, 'c')", []any{at}},
		{"buy_now", 0, "INSERT INTO buy_now (buyer_id, item_id, qty, date) VALUES (1, 1, 1, ?)", []any{at}},
	} {
		q.Exec(tc.insert, tc.args...)
		if got := q.Int("SELECT MAX(id) FROM " + tc.table); got != tc.after+1 {
			t.Errorf("%s: the new row's id is %d, want %d", tc.table, got, tc.after+1)
		}
	}
	// Last: a failed insert may use up a sequence value.
	if _, err := q.DB.Exec(context.Background(), q.Stmt(insertUser), nickname(1), at); !errors.Is(err, store.ErrUniqueViolation) {
		t.Errorf("a second %s: %v, want a unique violation", nickname(1), err)
	}
}

// loadedChecksums reads every table back in id order, each column scanned
// as the generator typed it.
func loadedChecksums(t *testing.T, q storetest.Querier, seed uint64, pop population, base time.Time) map[string]popChecksum {
	t.Helper()
	out := make(map[string]popChecksum)
	for _, tbl := range popTables(seed, pop, base) {
		h := newRowHasher()
		if !tbl.rows.Next() { // an empty table: its checksum is that of no rows
			out[tbl.name] = h.sum()
			continue
		}
		proto := tbl.rows.Values()
		dest := make([]any, len(proto))
		values := make([]any, len(proto))
		for i, v := range proto {
			switch v.(type) {
			case int64:
				dest[i] = new(int64)
			case float64:
				dest[i] = new(float64)
			case string:
				dest[i] = new(string)
			case time.Time:
				dest[i] = new(time.Time)
			}
		}
		rows, err := q.DB.Query(context.Background(), q.Stmt("SELECT "+strings.Join(tbl.columns, ", ")+" FROM "+tbl.name+" ORDER BY id"))
		if err != nil {
			t.Fatalf("read %s: %v", tbl.name, err)
		}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				t.Fatalf("read %s: %v", tbl.name, err)
			}
			for i, d := range dest {
				switch d := d.(type) {
				case *int64:
					values[i] = *d
				case *float64:
					values[i] = *d
				case *string:
					values[i] = *d
				case *time.Time:
					values[i] = *d
				}
			}
			if err := h.add(values); err != nil {
				t.Fatalf("%s: %v", tbl.name, err)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			t.Fatalf("read %s: %v", tbl.name, err)
		}
		out[tbl.name] = h.sum()
	}
	return out
}
