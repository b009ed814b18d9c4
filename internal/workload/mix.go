package workload

import "fmt"

// MixKind says how a mix chooses operations.
type MixKind string

const (
	// Deck: a fixed multiset of operations per iteration, shuffled.
	Deck MixKind = "deck"
	// Weighted: each operation drawn independently by weight.
	Weighted MixKind = "weighted"
)

// Mix is the plan of operations as data.
type Mix struct {
	Kind MixKind
	// Cards are, for a deck, how many of each operation one iteration
	// holds; for a weighted mix, the relative weights.
	Cards []Card
	// Pairs (decks only): the k-th occurrence of First precedes, and is
	// paired with, the k-th occurrence of Second.
	Pairs []Pair
}

// Card is an operation and its count or weight.
type Card struct {
	Op    int
	Count int
}

// Pair constrains a deck's order.
type Pair struct {
	First, Second int
}

// Size is the number of operations in one iteration of a deck.
func (m Mix) Size() int {
	n := 0
	for _, c := range m.Cards {
		n += c.Count
	}
	return n
}

// Validate checks the mix against the workload's operation count; it is a
// programmer error, reported at registration.
func (m Mix) Validate(ops int) error {
	if m.Kind != Deck && m.Kind != Weighted {
		return fmt.Errorf("mix kind %q is neither %q nor %q", m.Kind, Deck, Weighted)
	}
	count := make(map[int]int)
	for _, c := range m.Cards {
		if c.Op < 0 || c.Op >= ops {
			return fmt.Errorf("mix card names operation %d of %d", c.Op, ops)
		}
		if c.Count <= 0 {
			return fmt.Errorf("mix card for operation %d has count %d", c.Op, c.Count)
		}
		count[c.Op] += c.Count
	}
	for _, p := range m.Pairs {
		if m.Kind != Deck {
			return fmt.Errorf("pairs need a deck")
		}
		if count[p.First] != count[p.Second] {
			return fmt.Errorf("paired operations %d and %d occur %d and %d times", p.First, p.Second, count[p.First], count[p.Second])
		}
	}
	return nil
}
