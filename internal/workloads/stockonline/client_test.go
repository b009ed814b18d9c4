package stockonline

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tierbench/tierbench/internal/workload"
)

func TestStockCode(t *testing.T) {
	for id, want := range map[int64]string{1: "AAAA", 2: "AAAB", 26: "AAAZ", 27: "AABA", 26 * 26 * 26 * 26: "ZZZZ", 26*26*26*26 + 1: "BAAAA"} {
		if got := StockCode(id); got != want {
			t.Errorf("StockCode(%d) = %q, want %q", id, got, want)
		}
	}
	seen := make(map[string]bool)
	for id := int64(1); id <= 300_000; id++ {
		c := StockCode(id)
		if seen[c] || len(c) > 8 {
			t.Fatalf("StockCode(%d) = %q repeats or overflows VARCHAR(8)", id, c)
		}
		seen[c] = true
	}
}

// Whatever a Buy bought, its paired Sell sells: same account, stock and
// amount, whatever came between.
func TestSellRepeatsItsPairedBuy(t *testing.T) {
	pop := populationAt(2)
	c := newClient(pop, rand.New(rand.NewPCG(1, 2)))
	steps := []workload.Step{
		{Op: BuyStock, Pair: 0}, {Op: BuyStock, Pair: 2}, {Op: QueryByID, Pair: -1},
		{Op: SellStock, Pair: 2}, {Op: BuyStock, Pair: 1}, {Op: GetHoldingStatement, Pair: -1},
		{Op: SellStock, Pair: 0}, {Op: SellStock, Pair: 1},
	}
	bought := make(map[int]call)
	for _, s := range steps {
		k := c.choose(s)
		switch s.Op {
		case BuyStock:
			bought[s.Pair] = k
			if k.account < 1 || k.account > pop.accounts || k.stock < 1 || k.stock > pop.items || k.amount < 1 || k.amount > maxTradeSize {
				t.Errorf("buy out of range: %+v", k)
			}
		case SellStock:
			b := bought[s.Pair]
			if k.account != b.account || k.stock != b.stock || k.amount != b.amount {
				t.Errorf("sell of pair %d = %+v, want the buy's %+v", s.Pair, k, b)
			}
		}
	}
	if bought[0] == bought[1] || bought[1] == bought[2] {
		t.Error("different buys chose the same trade")
	}
}

// Accounts and stocks are drawn uniformly from the population (no
// locality, section 3.5): Pearson's chi-square test of every account's and
// every stock's count against equal shares, for each operation that draws
// one, at a significance of 0.001. The seed is fixed, so the outcome is too;
// a bias such as a hot set fails by far (last sub-test).
func TestChoicesAreUniformOverThePopulation(t *testing.T) {
	pop := populationAt(1)
	// 100 expected draws per account or stock: well above the 5 the
	// chi-square approximation needs.
	const perValue = 100
	account := func(k call) int64 { return k.account }
	stock := func(k call) int64 { return k.stock }
	for _, tt := range []struct {
		name  string
		step  workload.Step
		value func(call) int64
		size  int64
	}{
		{"UpdateAccount's account", workload.Step{Op: UpdateAccount, Pair: -1}, account, pop.accounts},
		{"BuyStock's account", workload.Step{Op: BuyStock, Pair: 0}, account, pop.accounts},
		{"GetHoldingStatement's account", workload.Step{Op: GetHoldingStatement, Pair: -1}, account, pop.accounts},
		{"QueryById's stock", workload.Step{Op: QueryByID, Pair: -1}, stock, pop.items},
		{"QueryByCode's stock", workload.Step{Op: QueryByCode, Pair: -1}, stock, pop.items},
		{"BuyStock's stock", workload.Step{Op: BuyStock, Pair: 0}, stock, pop.items},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(pop, rand.New(rand.NewPCG(9, 9)))
			counts := make([]int64, tt.size)
			for range perValue * tt.size {
				v := tt.value(c.choose(tt.step))
				if v < 1 || v > tt.size {
					t.Fatalf("chose %d, outside the population 1..%d", v, tt.size)
				}
				counts[v-1]++
			}
			// An off-by-one that never draws the last value moves the
			// statistic by only about perValue; it shows as a value never
			// drawn (a chance of e^-100 for a uniform draw).
			if i := slices.Index(counts, 0); i >= 0 {
				t.Errorf("value %d of 1..%d never chosen in %d draws", i+1, tt.size, perValue*tt.size)
			}
			chi2, limit := chiSquare(counts), chiSquareCritical(len(counts)-1)
			if chi2 > limit {
				t.Errorf("chi-square %.0f over %d values exceeds %.0f, its 0.1%% critical value: the choice is not uniform", chi2, tt.size, limit)
			}
			t.Logf("chi-square %.0f, critical value %.0f", chi2, limit)
		})
	}
	t.Run("a hot set fails it", func(t *testing.T) {
		// A chooser that sends 2% of its draws to the first 1% of the
		// accounts, as a locality bug might.
		rng := rand.New(rand.NewPCG(9, 9))
		counts := make([]int64, pop.accounts)
		for range perValue * pop.accounts {
			v := rng.Int64N(pop.accounts)
			if rng.IntN(50) == 0 {
				v = rng.Int64N(pop.accounts / 100)
			}
			counts[v]++
		}
		chi2, limit := chiSquare(counts), chiSquareCritical(len(counts)-1)
		if chi2 <= limit {
			t.Errorf("chi-square %.0f of a hot-set chooser within the critical value %.0f: the test cannot see a bias", chi2, limit)
		}
		t.Logf("chi-square %.0f, critical value %.0f", chi2, limit)
	})
}

// chiSquare is Pearson's statistic of counts against equal expected counts.
func chiSquare(counts []int64) float64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	expected := float64(n) / float64(len(counts))
	var sum float64
	for _, c := range counts {
		d := float64(c) - expected
		sum += d * d / expected
	}
	return sum
}

// chiSquareCritical is the value a chi-square variable of df degrees of
// freedom exceeds with probability 0.001, by Wilson and Hilferty's cube-root
// normal approximation (within a few parts in 10,000 at thousands of degrees
// of freedom; 3244 at 2999). 3.0902 is the standard normal's upper 0.1%
// point.
func chiSquareCritical(df int) float64 {
	const z = 3.090232306167813
	k := float64(df)
	h := 2 / (9 * k)
	return k * math.Pow(1-h+z*math.Sqrt(h), 3)
}
