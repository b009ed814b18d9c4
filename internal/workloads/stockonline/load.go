package stockonline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// populationSizes is Table 1 at scale 1.
const (
	accountsPerScale    = 3000
	itemsPerScale       = 3000
	holdingsPerAccount  = 10
	maxHoldingStatement = 20
)

// The value ranges of the population and of clients' choices, in cents and
// shares. The paper does not give them; these make a small share of buys
// fail the credit check, so that exception path is exercised.
const (
	minCredit     = 100_000   // $1,000
	maxCredit     = 5_000_000 // $50,000
	minPrice      = 100       // $1
	maxPrice      = 10_000    // $100
	maxInitAmount = 1000
	maxTradeSize  = 100
)

// bytesPerScale is the loaded database per unit of scale, measured on
// SQLite: 0.83 MB at scale 1, 3.2 MB at scale 4.
const bytesPerScale = 800_000

// maxScale: 30 million accounts, about 8 GB loaded.
const maxScale = 10_000

func footprintAt(scale int) workload.Footprint {
	return workload.Footprint{DBBytes: workload.PerUnit(max(scale, 1), bytesPerScale)}
}

// population is the initial database at a scale.
type population struct {
	accounts int64
	items    int64
}

func populationAt(scale int) population {
	return population{accounts: accountsPerScale * int64(scale), items: itemsPerScale * int64(scale)}
}

// populationSeedStream keeps the population's random stream apart from the
// clients' streams of the same seed.
const populationSeedStream = 0x5eed_0001

// Load recreates the four tables and writes Table 1's population times the
// scale, reproducibly from the seed.
func (Workload) Load(ctx context.Context, db *store.DB, p workload.LoadParams) (workload.LoadReport, error) {
	return loadPopulation(ctx, db, p.Seed, populationAt(max(p.Scale, 1)))
}

// loadPopulation is Load of any population, not only a whole scale's: the
// package's tests that need a few accounts and stocks load a tenth of
// Table 1 with it (testPopulation), in a tenth of the time.
func loadPopulation(ctx context.Context, db *store.DB, seed uint64, pop population) (workload.LoadReport, error) {
	began := time.Now()
	ddl, err := schemaScript(db.Dialect(), "")
	if err != nil {
		return workload.LoadReport{}, err
	}
	if err := db.ExecScript(ctx, ddl); err != nil {
		return workload.LoadReport{}, fmt.Errorf("create schema: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, populationSeedStream))
	report := workload.LoadReport{Tables: make(map[string]int64)}
	tables := []struct {
		name    string
		columns []string
		rows    store.RowSource
	}{
		{"SubAccount", []string{"sub_accno", "sub_name", "sub_address", "sub_credit"}, &accountRows{n: pop.accounts, rng: rng}},
		{"StockItem", []string{"stock_id", "stock_code", "company_name", "current_value", "high_value", "low_value"}, &itemRows{n: pop.items, rng: rng}},
		{"StockHolding", []string{"sub_accno", "stock_id", "amount"}, newHoldingRows(pop, rng)},
	}
	for _, t := range tables {
		n, err := db.BulkInsert(ctx, t.name, t.columns, t.rows)
		if err != nil {
			return report, err
		}
		report.Tables[t.name] = n
		report.Rows += n
	}
	report.Tables["StockTransaction"] = 0
	after, err := schemaScript(db.Dialect(), "_after_load")
	if err != nil {
		return report, err
	}
	if err := db.ExecScript(ctx, after); err != nil {
		return report, fmt.Errorf("after load: %w", err)
	}
	report.Duration = time.Since(began)
	return report, nil
}

// StockCode is the mnemonic of stock id: four or more letters, unique per id
// (1 is AAAA, 2 is AAAB, …).
func StockCode(id int64) string {
	var buf [12]byte
	i := len(buf)
	n := id - 1
	for digits := 0; digits < 4 || n > 0; digits++ {
		i--
		buf[i] = byte('A' + n%26)
		n /= 26
	}
	return string(buf[i:])
}

func credit(rng *rand.Rand) int64 { return minCredit + rng.Int64N(maxCredit-minCredit+1) }

type accountRows struct {
	n, i int64
	rng  *rand.Rand
	row  [4]any
}

func (r *accountRows) Next() bool {
	if r.i == r.n {
		return false
	}
	r.i++
	r.row = [4]any{r.i, fmt.Sprintf("Subscriber %d", r.i), fmt.Sprintf("%d Market Street, Canberra", r.i), credit(r.rng)}
	return true
}

func (r *accountRows) Values() []any { return r.row[:] }

type itemRows struct {
	n, i int64
	rng  *rand.Rand
	row  [6]any
}

func (r *itemRows) Next() bool {
	if r.i == r.n {
		return false
	}
	r.i++
	price := minPrice + r.rng.Int64N(maxPrice-minPrice+1)
	high := price + r.rng.Int64N(price/10+1)
	low := price - r.rng.Int64N(price/10+1)
	r.row = [6]any{r.i, StockCode(r.i), fmt.Sprintf("Company %d", r.i), price, high, low}
	return true
}

func (r *itemRows) Values() []any { return r.row[:] }

// holdingRows gives each account ten distinct random stocks: the sparse
// compound key of section 3.7 (0.33% of account × stock pairs exist).
type holdingRows struct {
	pop     population
	rng     *rand.Rand
	account int64
	stocks  []int64 // this account's stocks not yet emitted
	row     [3]any
}

func newHoldingRows(pop population, rng *rand.Rand) *holdingRows {
	return &holdingRows{pop: pop, rng: rng}
}

func (r *holdingRows) Next() bool {
	if len(r.stocks) == 0 {
		if r.account == r.pop.accounts {
			return false
		}
		r.account++
		r.stocks = r.distinctStocks()
	}
	stock := r.stocks[0]
	r.stocks = r.stocks[1:]
	r.row = [3]any{r.account, stock, 1 + r.rng.Int64N(maxInitAmount)}
	return true
}

func (r *holdingRows) Values() []any { return r.row[:] }

func (r *holdingRows) distinctStocks() []int64 {
	out := make([]int64, 0, holdingsPerAccount)
	for len(out) < holdingsPerAccount {
		s := 1 + r.rng.Int64N(r.pop.items)
		dup := false
		for _, have := range out {
			dup = dup || have == s
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}
