package workload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MixKind says how a mix chooses operations.
type MixKind string

const (
	// Deck: a fixed multiset of operations per iteration, shuffled.
	Deck MixKind = "deck"
	// Weighted: each operation drawn independently by weight.
	Weighted MixKind = "weighted"
	// Sequence: the cards in their order, once each per iteration, each
	// scheduled its Delay after the previous one (ECperf's planned line:
	// schedule, then three stations 333 ms apart). A step that fails ends
	// its iteration: the later steps act on what it should have made.
	Sequence MixKind = "sequence"
	// Chosen: each client chooses its own operations (its Client is a
	// Chooser), one per iteration: RUBiS's emulated browsers walk the
	// original client's Markov chain over the pages they receive.
	Chosen MixKind = "chosen"
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
	// Description says how a Chosen mix chooses, for `tierbench
	// workloads`.
	Description string
}

// Card is an operation and its count or weight (a sequence's cards count
// once each).
type Card struct {
	Op    int
	Count int
	// Delay (sequences): scheduled this long after the previous step.
	Delay time.Duration
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

// PerIteration is the operations one iteration of the mix runs: one draw
// of a weighted mix, every card of a deck or sequence.
func (m Mix) PerIteration() int {
	switch m.Kind {
	case Weighted, Chosen:
		return 1
	case Sequence:
		return len(m.Cards)
	}
	return m.Size()
}

// Validate checks the mix against the workload's operation count; it is a
// programmer error, reported at registration.
func (m Mix) Validate(ops int) error {
	switch m.Kind {
	case Deck, Weighted, Sequence:
	case Chosen:
		if len(m.Cards) > 0 || len(m.Pairs) > 0 {
			return fmt.Errorf("a chosen mix has no cards: its clients choose")
		}
		return nil
	default:
		return fmt.Errorf("mix kind %q is none of %q, %q, %q, %q", m.Kind, Deck, Weighted, Sequence, Chosen)
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

// Group is a set of identical terminals: how many, what they run, and at
// what pace.
type Group struct {
	Name    string
	Clients int
	Mix     Mix
	Pacing  Pacing
}

// PacingKind says when a terminal starts its next operation.
type PacingKind uint8

const (
	// Closed: at once when the previous one ends (the default).
	Closed PacingKind = iota
	// Think: a pause of Mean after the previous one ends.
	Think
	// Cycle: Mean (or a draw from Dist) after the previous one was
	// scheduled to start, whether or not it has finished: open loop per
	// terminal. A late operation starts at once, and its latency counts
	// from when it was scheduled (no coordinated omission).
	Cycle
)

// Distribution of cycle times.
type Distribution uint8

const (
	Fixed Distribution = iota
	// NegExp: negative exponential with mean Mean, cut at Truncate × Mean
	// (ECperf: mean 5 s, truncated at 5×).
	NegExp
)

// Pacing of a group's terminals.
type Pacing struct {
	Kind     PacingKind
	Mean     time.Duration
	Dist     Distribution
	Truncate float64
}

// Grouped is implemented by a Run whose terminals come in several groups
// (ECperf's order-entry terminals, planned lines and large-order line). A
// run without it has one group: --clients terminals on Info.Mix, closed
// loop or --think-time.
type Grouped interface {
	Groups() []Group
}

// MaxCount bounds each count of ParseCounts: a deck of a million
// operations already costs each client 56 MB.
const MaxCount = 1_000_000

// ParseCounts reads a --mix of NAME=N,… over ops (a weight or a deck's
// count per operation; one not named gets 0). noun names an operation and
// unit its N in the messages ("method", "weight"); otherwise says what
// else --mix allows.
func ParseCounts(s string, ops []string, noun, unit, otherwise string) ([]int, error) {
	counts := make([]int, len(ops))
	seen := make(map[string]bool)
	for _, part := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(part), "=")
		op := slices.Index(ops, name)
		count, err := strconv.Atoi(n)
		switch {
		case !ok || op < 0:
			return nil, fmt.Errorf("--mix %q: %q is not %s=%s; %ss: %s (%s)", s, part,
				strings.ToUpper(noun), strings.ToUpper(unit), noun, strings.Join(ops, ", "), otherwise)
		case err != nil || count < 0:
			return nil, fmt.Errorf("--mix %q: %s %q of %s: want a whole number >= 0", s, unit, n, name)
		case count > MaxCount:
			return nil, fmt.Errorf("--mix %q: %s %d of %s: at most %d (a deck's operations are dealt to every client each iteration)", s, unit, count, name, MaxCount)
		case seen[name]:
			return nil, fmt.Errorf("--mix %q: %s named twice", s, name)
		}
		seen[name] = true
		counts[op] = count
	}
	if !slices.ContainsFunc(counts, func(n int) bool { return n > 0 }) {
		return nil, fmt.Errorf("--mix %q: every %s is 0", s, unit)
	}
	return counts, nil
}
