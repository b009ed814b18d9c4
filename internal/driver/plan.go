package driver

import (
	"math/rand/v2"

	"github.com/tierbench/tierbench/internal/workload"
)

// dealer produces one iteration of a terminal's plan at a time. Each
// terminal owns its dealer, so dealing needs no locks and no allocation.
type dealer interface {
	// deal fills and returns the next iteration's steps, reusing buf.
	deal(rng *rand.Rand, buf []workload.Step) []workload.Step
	// size is the number of steps per iteration.
	size() int
	// chained: each step acts on what the previous ones did, so a step
	// that fails ends its iteration.
	chained() bool
}

func newDealer(m workload.Mix) dealer {
	switch m.Kind {
	case workload.Weighted:
		return newWeighted(m)
	case workload.Sequence:
		return newSequence(m)
	}
	return newDeck(m)
}

// sequence deals its cards in order, each with its delay.
type sequence struct{ steps []workload.Step }

func newSequence(m workload.Mix) *sequence {
	s := &sequence{}
	for _, c := range m.Cards {
		s.steps = append(s.steps, workload.Step{Op: c.Op, Pair: -1, Delay: c.Delay})
	}
	return s
}

func (s *sequence) size() int     { return len(s.steps) }
func (s *sequence) chained() bool { return true }

func (s *sequence) deal(_ *rand.Rand, buf []workload.Step) []workload.Step {
	return append(buf[:0], s.steps...)
}

// deck deals a fixed multiset per iteration, shuffled, with the second
// operation of each pair after its first.
type deck struct {
	cards []workload.Step
	// secondOp[p] is the operation that must come second in pair p.
	secondOp []int
	// firstSeen[p] is scratch for deal: where pair p's first-dealt card is.
	firstSeen []int
}

func newDeck(m workload.Mix) *deck {
	count := make(map[int]int)
	for _, c := range m.Cards {
		count[c.Op] += c.Count
	}
	d := &deck{}
	base := make(map[int]int) // op -> index of its first pair
	for _, p := range m.Pairs {
		base[p.First], base[p.Second] = len(d.secondOp), len(d.secondOp)
		for k := 0; k < count[p.First]; k++ {
			d.secondOp = append(d.secondOp, p.Second)
		}
	}
	seen := make(map[int]int)
	for _, c := range m.Cards {
		for k := 0; k < c.Count; k++ {
			s := workload.Step{Op: c.Op, Pair: -1}
			if b, paired := base[c.Op]; paired {
				s.Pair = b + seen[c.Op]
				seen[c.Op]++
			}
			d.cards = append(d.cards, s)
		}
	}
	d.firstSeen = make([]int, len(d.secondOp))
	return d
}

func (d *deck) size() int     { return len(d.cards) }
func (d *deck) chained() bool { return false }

// deal shuffles uniformly, then swaps each pair dealt second-first. The swap
// maps permutations two-to-one onto those with every first before its
// second, so the result is uniform among the valid orders.
func (d *deck) deal(rng *rand.Rand, buf []workload.Step) []workload.Step {
	buf = append(buf[:0], d.cards...)
	rng.Shuffle(len(buf), func(i, j int) { buf[i], buf[j] = buf[j], buf[i] })
	for p := range d.firstSeen {
		d.firstSeen[p] = -1
	}
	for i, s := range buf {
		if s.Pair < 0 {
			continue
		}
		j := d.firstSeen[s.Pair]
		if j < 0 {
			d.firstSeen[s.Pair] = i
			continue
		}
		if buf[j].Op == d.secondOp[s.Pair] {
			buf[i], buf[j] = buf[j], buf[i]
		}
	}
	return buf
}

// weighted draws each operation independently; an iteration is one step.
type weighted struct {
	ops        []int
	cumulative []int
}

func newWeighted(m workload.Mix) *weighted {
	w := &weighted{}
	total := 0
	for _, c := range m.Cards {
		total += c.Count
		w.ops = append(w.ops, c.Op)
		w.cumulative = append(w.cumulative, total)
	}
	return w
}

func (w *weighted) size() int     { return 1 }
func (w *weighted) chained() bool { return false }

func (w *weighted) deal(rng *rand.Rand, buf []workload.Step) []workload.Step {
	x := rng.IntN(w.cumulative[len(w.cumulative)-1])
	i := 0
	for x >= w.cumulative[i] {
		i++
	}
	return append(buf[:0], workload.Step{Op: w.ops[i], Pair: -1})
}
