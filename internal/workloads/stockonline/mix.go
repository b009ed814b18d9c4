package stockonline

import "github.com/tierbench/tierbench/internal/workload"

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
