package tpcapp

import "github.com/tierbench/tierbench/internal/workload"

// MixSpec is --mix's name for the reference's mix.
const MixSpec = "spec"

// specMix is the specification's interaction mix as the reference gives
// it, in percent.
var specMix = [numOps]int{
	NewCustomer: 1, ChangePaymentMethod: 5, CreateOrder: 50, OrderStatus: 5, NewProducts: 7, ProductDetail: 30, ChangeItem: 2,
}

// ParseMix reads --mix: spec, or weights OP=N,… over the method names
// (a method not named is never sent), e.g. CreateOrder=1,OrderStatus=1.
func ParseMix(s string) (workload.Mix, error) {
	if s == MixSpec {
		return mixOf(specMix), nil
	}
	counts, err := workload.ParseCounts(s, opNames[:], "method", "weight", "or --mix spec, the reference's mix")
	if err != nil {
		return workload.Mix{}, err
	}
	return mixOf([numOps]int(counts)), nil
}

// mixOf is the weighted mix of the methods with a weight above 0.
func mixOf(weights [numOps]int) workload.Mix {
	m := workload.Mix{Kind: workload.Weighted}
	for op, w := range weights {
		if w > 0 {
			m.Cards = append(m.Cards, workload.Card{Op: op, Count: w})
		}
	}
	return m
}
