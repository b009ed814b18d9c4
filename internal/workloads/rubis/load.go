package rubis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// load recreates the RUBiS tables and writes the population at p.Scale
// (populationAt), its dates relative to the present; see loadAt.
func load(ctx context.Context, db *store.DB, p workload.LoadParams) (workload.LoadReport, error) {
	return loadAt(ctx, db, p, time.Now())
}

// loadAt recreates the RUBiS tables and writes the population at p.Scale,
// reproducibly from p.Seed and the time base now: the same three give the
// same rows on every backend. Active auctions end between now + 1 hour and
// now + 7 days, old ones ended before now; they are dealt to the categories
// as --items-per-category says (population.withSpread). Every table goes through
// BulkInsert (COPY on PostgreSQL), its rows generated as they are sent;
// indexes are built once the rows are in.
//
// The population keeps the invariants the pages and the consistency checks
// rely on: items.nb_of_bids is the number of the item's bids and
// items.max_bid the largest of their max_bid (0 without bids), as StoreBid
// maintains them; users.rating is the sum of the ratings of the comments
// about the user (every user starting at 0, as RegisterUser creates them);
// buy_now is loaded empty, as InitDB leaves it; ids holds the next free id
// of each table.
func loadAt(ctx context.Context, db *store.DB, p workload.LoadParams, now time.Time) (workload.LoadReport, error) {
	began := time.Now()
	pop, err := populationAt(p.Scale)
	if err == nil {
		pop, err = pop.withSpread(optionsOf(p.Options).ItemsPerCategory)
	}
	if err != nil {
		return workload.LoadReport{}, err
	}
	ddl, after, err := schemaParts(db.Dialect())
	if err != nil {
		return workload.LoadReport{}, err
	}
	if err := db.ExecScript(ctx, ddl); err != nil {
		return workload.LoadReport{}, fmt.Errorf("create schema: %w", err)
	}
	if tuning := storageTuning[db.Dialect()]; tuning != "" {
		// Best effort: a server without the option loads the same rows,
		// only slower.
		_ = db.ExecScript(ctx, tuning)
	}
	report, err := bulkLoad(ctx, db, popTables(p.Seed, pop, timeBase(now)))
	if err != nil {
		return report, err
	}
	if err := db.ExecScript(ctx, after); err != nil {
		return report, fmt.Errorf("after load: %w", err)
	}
	report.Duration = time.Since(began)
	return report, nil
}

// storageTuning is DDL that speeds up the load where the server supports
// it, without changing the schema's meaning. On PostgreSQL, descriptions
// (up to 8 KB, 4 KB on average: most of the population's bytes) are
// compressed into TOAST as they arrive; lz4 does that several times faster
// than the default pglz. It needs PostgreSQL 14 built with lz4, which
// other servers speaking its protocol may lack.
var storageTuning = map[store.Dialect]string{
	store.Postgres: "ALTER TABLE items ALTER COLUMN description SET COMPRESSION lz4;\n" +
		"ALTER TABLE old_items ALTER COLUMN description SET COMPRESSION lz4;\n" +
		"ALTER TABLE comments ALTER COLUMN comment SET COMPRESSION lz4;\n",
}

// bulkLoad sends the tables' rows. old_items holds most of the bytes, so
// where the database takes concurrent writers it goes through a connection
// of its own while the other tables, in order, go through another: the
// server then works on both at once. On error the other lane is cancelled.
func bulkLoad(ctx context.Context, db *store.DB, tables []popTable) (workload.LoadReport, error) {
	report := workload.LoadReport{Tables: make(map[string]int64)}
	var heavy, rest []popTable
	for _, t := range tables {
		if t.name == "old_items" && !db.SingleWriter() {
			heavy = append(heavy, t)
		} else {
			rest = append(rest, t)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	counts := make([]int64, len(tables))
	var wg sync.WaitGroup
	lane := func(lane []popTable, counts []int64) {
		defer wg.Done()
		for i, t := range lane {
			n, err := db.BulkInsert(ctx, t.name, t.columns, t.rows)
			counts[i] = n
			if err != nil {
				cancel(err)
				return
			}
		}
	}
	wg.Add(2)
	go lane(heavy, counts[:len(heavy)])
	go lane(rest, counts[len(heavy):])
	wg.Wait()
	for i, t := range append(heavy, rest...) {
		report.Tables[t.name] = counts[i]
		report.Rows += counts[i]
	}
	if err := context.Cause(ctx); err != nil {
		return report, err
	}
	return report, nil
}

// timeBase is now as the population stores it: UTC, whole seconds, which
// every dialect's date type holds exactly.
func timeBase(now time.Time) time.Time { return now.UTC().Truncate(time.Second) }

// popTable is a table of the population and the source of its rows.
type popTable struct {
	name    string
	columns []string
	rows    store.RowSource
}

var itemColumns = []string{"id", "name", "description", "initial_price", "quantity", "reserve_price", "buy_now",
	"nb_of_bids", "max_bid", "start_date", "end_date", "seller", "category"}

// popTables are the tables in loading order. Each source has its own
// generator, so none depends on another's progress. The users' ratings
// are summed from the comments before any row goes out.
func popTables(seed uint64, pop population, now time.Time) []popTable {
	gen := func() *generator { return newGenerator(pop, seed, now) }
	bids := gen().bidCount()
	return []popTable{
		{"categories", []string{"id", "name"}, namesRows(categoryNames[:])},
		{"regions", []string{"id", "name"}, namesRows(regionNames[:])},
		{"users", []string{"id", "firstname", "lastname", "nickname", "password", "email", "rating", "balance", "creation_date", "region"},
			userRows(gen(), gen().userRatings())},
		{"old_items", itemColumns, itemRows(gen(), 1, pop.OldItems)},
		{"items", itemColumns, itemRows(gen(), pop.FirstActiveItem(), pop.Items())},
		{"bids", []string{"id", "user_id", "item_id", "qty", "bid", "max_bid", "date"}, bidRows(gen())},
		{"comments", []string{"id", "from_user_id", "to_user_id", "item_id", "rating", "date", "comment"}, commentRows(gen())},
		{"buy_now", []string{"id", "buyer_id", "item_id", "qty", "date"}, &rowSource{next: func([]any) bool { return false }}},
		// buyNow is spelled in lower case: PostgreSQL folded the unquoted
		// name, and COPY quotes the names it is given.
		{"ids", []string{"id", "category", "region", "users", "item", "comment", "bid", "buynow"},
			idsRows(pop, bids)},
	}
}

// rowSource adapts a function that fills the next row to store.RowSource;
// the row slice is reused from row to row.
type rowSource struct {
	row  []any
	next func(row []any) bool
}

func (s *rowSource) Next() bool    { return s.next(s.row) }
func (s *rowSource) Values() []any { return s.row }

// namesRows are (id, name) rows, ids from 1 in list order.
func namesRows(names []string) *rowSource {
	i := 0
	return &rowSource{row: make([]any, 2), next: func(row []any) bool {
		if i == len(names) {
			return false
		}
		i++
		row[0], row[1] = int64(i), names[i-1]
		return true
	}}
}

func userRows(g *generator, ratings []int32) *rowSource {
	id := int64(0)
	zero := any(float64(0))
	return &rowSource{row: make([]any, 10), next: func(row []any) bool {
		if id == g.pop.Users {
			return false
		}
		id++
		row[0], row[1], row[2], row[3], row[4] = id, firstname(id), lastname(id), nickname(id), password(id)
		row[5], row[6], row[7], row[8], row[9] = email(id), int64(ratings[id]), zero, g.userSince(id), regionOf(id)
		return true
	}}
}

// itemRows are items first..last, old or active by their id.
func itemRows(g *generator, first, last int64) *rowSource {
	id := first - 1
	var buf [maxBidsPerItem]bid
	return &rowSource{row: make([]any, len(itemColumns)), next: func(row []any) bool {
		if id == last {
			return false
		}
		id++
		it := g.item(id)
		_, maxBid := g.bids(&it, &buf)
		row[0], row[1], row[2], row[3] = id, itemName(id), descriptionText[:it.descriptionLen], float64(it.initialPrice)
		row[4], row[5], row[6] = it.quantity, float64(it.reservePrice), float64(it.buyNow)
		row[7], row[8], row[9], row[10] = int64(it.nbBids), float64(maxBid), it.start, it.end
		row[11], row[12] = it.seller, g.pop.categoryOf(id)
		return true
	}}
}

// bidRows are the active items' bids, numbered from 1 in item order.
func bidRows(g *generator) *rowSource {
	item := g.pop.FirstActiveItem() - 1
	var buf [maxBidsPerItem]bid
	var pending []bid
	id := int64(0)
	return &rowSource{row: make([]any, 7), next: func(row []any) bool {
		for len(pending) == 0 {
			if item == g.pop.Items() {
				return false
			}
			item++
			it := g.item(item)
			pending, _ = g.bids(&it, &buf)
		}
		b := pending[0]
		pending = pending[1:]
		id++
		row[0], row[1], row[2], row[3] = id, b.user, b.itemID, b.qty
		row[4], row[5], row[6] = float64(b.bid), float64(b.maxBid), b.at
		return true
	}}
}

// commentRows are comment i about item i, to its seller, for every item.
func commentRows(g *generator) *rowSource {
	id := int64(0)
	return &rowSource{row: make([]any, 7), next: func(row []any) bool {
		if id == g.pop.Comments() {
			return false
		}
		id++
		it := g.item(id)
		c := g.comment(id)
		row[0], row[1], row[2], row[3] = id, c.from, it.seller, id
		row[4], row[5], row[6] = c.rating, g.commentDate(&it), c.text
		return true
	}}
}

// idsRows is the single row of ids (id 1): the next id of each table, for
// the implementations that hand out ids themselves rather than through
// the database's sequences.
func idsRows(pop population, bids int64) *rowSource {
	done := false
	return &rowSource{row: make([]any, 8), next: func(row []any) bool {
		if done {
			return false
		}
		done = true
		row[0], row[1], row[2], row[3] = int64(1), int64(numCategories+1), int64(numRegions+1), pop.Users+1
		row[4], row[5], row[6], row[7] = pop.Items()+1, pop.Comments()+1, bids+1, int64(1)
		return true
	}}
}
