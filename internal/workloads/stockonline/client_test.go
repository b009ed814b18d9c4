package stockonline

import (
	"math/rand/v2"
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
	c := newClient(pop, rand.New(rand.NewPCG(1, 2)), nil)
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

func TestChoicesAreUniformOverThePopulation(t *testing.T) {
	pop := populationAt(1)
	c := newClient(pop, rand.New(rand.NewPCG(9, 9)), nil)
	const n = 300_000
	var low int
	for i := 0; i < n; i++ {
		if k := c.choose(workload.Step{Op: GetHoldingStatement, Pair: -1}); k.account <= pop.accounts/2 {
			low++
		}
	}
	if f := float64(low) / n; f < 0.49 || f > 0.51 {
		t.Errorf("%.3f of accounts in the lower half, want 0.5 ± 0.01 (no locality)", f)
	}
}
