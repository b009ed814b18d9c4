package stockonline

import (
	"fmt"

	"github.com/tierbench/tierbench/internal/workload"
)

// Mix is Table 2: one iteration is 43 transactions, shuffled, with every
// Buy paired with a Sell of the same account and stock later in the same
// iteration ("whatever is bought is sold again").
func Mix() workload.Mix {
	return workload.Mix{
		Kind: workload.Deck,
		Cards: []workload.Card{
			{Op: CreateAccount, Count: 1},
			{Op: BuyStock, Count: 3},
			{Op: SellStock, Count: 3},
			{Op: UpdateAccount, Count: 1},
			{Op: QueryByID, Count: 15},
			{Op: QueryByCode, Count: 15},
			{Op: GetHoldingStatement, Count: 5},
		},
		Pairs: []workload.Pair{{First: BuyStock, Second: SellStock}},
	}
}

// MixTable2 is --mix's name for Table 2's deck, the default.
const MixTable2 = "table-2"

// ParseMix reads --mix: table-2 for Table 2's deck, or counts OP=N,… of
// one iteration's deck (an operation not named is not run), e.g.
// UpdateAccount=1 to measure one transaction alone. BuyStock and
// SellStock stay paired, so they take the same count: a sell needs the
// holding its buy made.
func ParseMix(s string) (workload.Mix, error) {
	if s == MixTable2 {
		return Mix(), nil
	}
	counts, err := workload.ParseCounts(s, opNames[:], "operation", "count", "or --mix table-2, the paper's 43, the default")
	if err != nil {
		return workload.Mix{}, err
	}
	if counts[BuyStock] != counts[SellStock] {
		return workload.Mix{}, fmt.Errorf("--mix %q: BuyStock %d and SellStock %d: each sell is paired with a buy, so give both the same count",
			s, counts[BuyStock], counts[SellStock])
	}
	m := workload.Mix{Kind: workload.Deck}
	for op, n := range counts {
		if n > 0 {
			m.Cards = append(m.Cards, workload.Card{Op: op, Count: n})
		}
	}
	if counts[BuyStock] > 0 {
		m.Pairs = []workload.Pair{{First: BuyStock, Second: SellStock}}
	}
	return m, nil
}
