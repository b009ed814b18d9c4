package driver

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// Table 2 of the paper: one iteration of the Stock-Online mix.
var table2 = map[int]int{
	stockonline.CreateAccount:       1,
	stockonline.BuyStock:            3,
	stockonline.SellStock:           3,
	stockonline.UpdateAccount:       1,
	stockonline.QueryByID:           15,
	stockonline.QueryByCode:         15,
	stockonline.GetHoldingStatement: 5,
}

func TestStockOnlineDeckHasTable2AndPairsSellsAfterBuys(t *testing.T) {
	d := newDeck(stockonline.Mix())
	rng := rand.New(rand.NewPCG(1, 1))
	var steps []workload.Step
	sellFirst := make(map[int]bool) // positions a Sell occupied at least once
	for deal := 0; deal < 2000; deal++ {
		steps = d.deal(rng, steps)
		if len(steps) != 43 {
			t.Fatalf("deal %d has %d operations, want 43", deal, len(steps))
		}
		counts := make(map[int]int)
		buyAt := map[int]int{}
		for i, s := range steps {
			counts[s.Op]++
			switch s.Op {
			case stockonline.BuyStock:
				if _, dup := buyAt[s.Pair]; dup || s.Pair < 0 || s.Pair > 2 {
					t.Fatalf("deal %d: Buy with pair %d (duplicate or out of range)", deal, s.Pair)
				}
				buyAt[s.Pair] = i
			case stockonline.SellStock:
				b, ok := buyAt[s.Pair]
				if !ok {
					t.Fatalf("deal %d: Sell of pair %d at %d before its Buy", deal, s.Pair, i)
				}
				if b >= i {
					t.Fatalf("deal %d: Sell at %d not after its Buy at %d", deal, i, b)
				}
				sellFirst[i] = true
			default:
				if s.Pair != -1 {
					t.Fatalf("deal %d: unpaired operation %d has pair %d", deal, s.Op, s.Pair)
				}
			}
		}
		for op, want := range table2 {
			if counts[op] != want {
				t.Fatalf("deal %d: %d of operation %d, want %d (Table 2)", deal, counts[op], op, want)
			}
		}
	}
	// The order is shuffled, not fixed: a Sell turned up in every position
	// but the first.
	if sellFirst[0] || len(sellFirst) != 42 {
		t.Errorf("Sells occupied %d distinct positions (position 0: %v); want all 42 after the first", len(sellFirst), sellFirst[0])
	}
}

func TestDealIsReproducibleFromTheSeed(t *testing.T) {
	deal := func(seed uint64) []workload.Step {
		d := newDeck(stockonline.Mix())
		rng := rand.New(rand.NewPCG(seed, 0))
		var all []workload.Step
		for i := 0; i < 10; i++ {
			all = append(all, d.deal(rng, nil)...)
		}
		return all
	}
	a, b, c := deal(7), deal(7), deal(8)
	if len(a) != 430 {
		t.Fatalf("10 deals gave %d steps", len(a))
	}
	same := func(x, y []workload.Step) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("the same seed dealt different sequences")
	}
	if same(a, c) {
		t.Error("different seeds dealt the same sequence")
	}
}

func TestWeightedMixFollowsWeights(t *testing.T) {
	w := newWeighted(workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{{Op: 0, Count: 50}, {Op: 1, Count: 20}, {Op: 2, Count: 30}}})
	rng := rand.New(rand.NewPCG(3, 3))
	counts := make([]int, 3)
	const n = 100_000
	for i := 0; i < n; i++ {
		s := w.deal(rng, nil)
		counts[s[0].Op]++
	}
	for op, want := range []float64{0.5, 0.2, 0.3} {
		if got := float64(counts[op]) / n; got < want-0.01 || got > want+0.01 {
			t.Errorf("operation %d drawn %.3f of the time, want %.2f ± 0.01", op, got, want)
		}
	}
}

func TestPhases(t *testing.T) {
	s := time.Second
	tests := []struct {
		name     string
		cfg      Config
		at       time.Duration
		measured bool
	}{
		{"iterations, no ramp", Config{Iterations: 1}, 0, true},
		{"iterations, in ramp-up", Config{Iterations: 1, RampUp: 2 * s}, s, false},
		{"iterations, after ramp-up", Config{Iterations: 1, RampUp: 2 * s}, 2 * s, true},
		{"duration, steady", Config{Duration: 10 * s, RampUp: 2 * s, RampDown: 3 * s}, 5 * s, true},
		{"duration, in ramp-down", Config{Duration: 10 * s, RampUp: 2 * s, RampDown: 3 * s}, 7 * s, false},
	}
	for _, tt := range tests {
		if got := newPhases(tt.cfg).measured(tt.at); got != tt.measured {
			t.Errorf("%s: measured(%v) = %v, want %v", tt.name, tt.at, got, tt.measured)
		}
	}
	if w := newPhases(Config{Duration: 10 * s, RampUp: 2 * s, RampDown: 3 * s}).window(10*s + 40*time.Millisecond); w != 5*s {
		t.Errorf("timed window = %v, want 5s", w)
	}
	if w := newPhases(Config{Iterations: 1, RampUp: 2 * s}).window(9 * s); w != 7*s {
		t.Errorf("iteration window = %v, want 7s", w)
	}
}
