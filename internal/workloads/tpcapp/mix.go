package tpcapp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tierbench/tierbench/internal/workload"
)

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
	weights := specMix
	if s != MixSpec {
		weights = [numOps]int{}
		seen := make(map[string]bool)
		for _, part := range strings.Split(s, ",") {
			name, n, ok := strings.Cut(strings.TrimSpace(part), "=")
			op := opIndex(name)
			w, err := strconv.Atoi(n)
			switch {
			case !ok || op < 0:
				return workload.Mix{}, fmt.Errorf("--mix %q: %q is not METHOD=WEIGHT; methods: %s (or --mix spec, the reference's mix)",
					s, part, strings.Join(opNames[:], ", "))
			case err != nil || w < 0:
				return workload.Mix{}, fmt.Errorf("--mix %q: weight %q of %s: want a whole number >= 0", s, n, name)
			case seen[name]:
				return workload.Mix{}, fmt.Errorf("--mix %q: %s named twice", s, name)
			}
			seen[name] = true
			weights[op] = w
		}
	}
	m := mixOf(weights)
	if len(m.Cards) == 0 {
		return workload.Mix{}, fmt.Errorf("--mix %q: every weight is 0", s)
	}
	return m, nil
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

func opIndex(name string) int {
	for op, n := range opNames {
		if n == name {
			return op
		}
	}
	return -1
}
