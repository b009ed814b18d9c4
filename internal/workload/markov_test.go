package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tableText writes a table in the original's format. cols[from][to] are
// the probabilities, to over the states then Back then End of Session.
func tableText(names []string, cols [][]float64, waits []int) string {
	n := len(names)
	var b strings.Builder
	b.WriteString("RUBiS Transition Table\ttest set\t\t\n\t\t\n\"To >>>\nFrom vvvv  \"")
	for _, s := range names {
		b.WriteString("\t" + s)
	}
	b.WriteString("\tTransition waiting time\r\n")
	rows := append(append([]string(nil), names...), "Back probability", "End of Session")
	for i, r := range rows {
		b.WriteString(r)
		for j := range n {
			fmt.Fprintf(&b, "\t%g", cols[j][i])
		}
		w := 0
		if waits != nil {
			w = waits[i]
		}
		fmt.Fprintf(&b, "\t%d\r\n", w)
	}
	b.WriteString("\nProbabilities for header\t0.01\n")
	return b.String()
}

func mustParse(t *testing.T, s string) *Transitions {
	t.Helper()
	tt, err := ParseTransitions(strings.NewReader(s))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return tt
}

// scripted is a rand source whose Float32 draws are the given values
// (Float32 keeps bits 32..55 of one Uint64).
type scripted struct {
	u []float64
	i int
}

func (s *scripted) Uint64() uint64 {
	v := s.u[s.i%len(s.u)]
	s.i++
	return uint64(v*(1<<24)) << 32
}

func rngOf(u ...float64) *rand.Rand { return rand.New(&scripted{u: u}) }

// Rows: Home, B, C, Back, End.
func abc(home, b, c []float64) *Transitions {
	return mustParseNoT(tableText([]string{"Home", "B", "C"}, [][]float64{home, b, c}, []int{1000, 2000, 3000, 0, 0}))
}

func mustParseNoT(s string) *Transitions {
	t, err := ParseTransitions(strings.NewReader(s))
	if err != nil {
		panic(err) // test tables are literals
	}
	return t
}

func TestParseTransitionsErrors(t *testing.T) {
	t.Parallel()
	good := tableText([]string{"Home", "B"}, [][]float64{{0, 1, 0, 0}, {0, 0, 0, 1}}, nil)
	lines := strings.Split(good, "\n")
	with := func(i int, s string) string {
		l := append([]string(nil), lines...)
		l[i] = s
		return strings.Join(l, "\n")
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty"},
		{"no name", "RUBiS Transition Table\n", "line 1: header"},
		{"header only", "RUBiS Transition Table\tx\n\n", "ends in its header"},
		{"no states", "RUBiS Transition Table\tx\n\n\"To >>>\nFrom\tWait\n", "line 4: column names"},
		{"short", strings.Join(lines[:6], "\n"), "2 rows after line 6, want 4"},
		{"bad number", with(5, "B\t0\tx\t0"), "line 6, column 3: probability \"x\" of B from B"},
		{"negative", with(4, "Home\t-0.1\t0\t0"), "line 5, column 2: probability \"-0.1\""},
		{"NaN", with(4, "Home\tNaN\t0\t0"), "line 5, column 2"},
		{"bad wait", with(6, "Back probability\t0\t0\t1.5"), "line 7, column 4: waiting time \"1.5\""},
		{"fields", with(7, "End of Session\t0\t1"), "line 8: row \"End of Session\" has 3 fields, want 4"},
		{"empty name", with(4, "\t0\t0\t0"), "line 5, column 1: empty state name"},
		{"empty cell", with(4, "Home\t\t0\t0"), "line 5, column 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTransitions(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := ParseTransitions(strings.NewReader(good)); err != nil {
		t.Fatalf("good table: %v", err)
	}
}

func shipped(t *testing.T, name string) *Transitions {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "workloads", "rubis", "tables", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tt, err := ParseTransitions(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tt
}

func TestParseShipped(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"default_transitions.txt", "browse_only_transitions.txt"} {
		tt := shipped(t, name)
		if tt.N() != 27 || tt.Back() != 27 || tt.EndOfSession() != 28 {
			t.Fatalf("%s: N %d Back %d End %d", name, tt.N(), tt.Back(), tt.EndOfSession())
		}
		if tt.States[0] != "Home" || tt.States[26] != "AboutMe" || tt.States[28] != "End of Session" {
			t.Fatalf("%s: states %q", name, tt.States)
		}
		if tt.Wait[5] != 7*time.Second || tt.Wait[27] != 0 {
			t.Fatalf("%s: waits %v", name, tt.Wait)
		}
		for c := range tt.N() {
			if s := sum(tt.Effective(c)); math.Abs(s-1) > 1e-12 {
				t.Fatalf("%s: effective column %d sums to %v", name, c, s)
			}
		}
	}
	// The bidding table's View Item column sums to 1.2079: Back gets what
	// is left below 1 (0.4921 of its 0.5), End of Session (0.2) nothing.
	tt := shipped(t, "default_transitions.txt")
	eff := tt.Effective(9)
	if math.Abs(eff[27]-0.4921) > 1e-6 || eff[28] != 0 {
		t.Fatalf("View Item → Back, End of Session effective %v, %v; want 0.4921, 0", eff[27], eff[28])
	}
	if tt.Name != "Default transition set" {
		t.Fatalf("name %q", tt.Name)
	}
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func TestWalkQuirks(t *testing.T) {
	t.Parallel()
	// Columns (from), rows Home, B, C, Back, End.
	tests := []struct {
		name             string
		home, b, c       []float64
		draws            []float64
		want             []int // states of the moves after the first Home
		wantBack, wantEB []bool
	}{
		{"rows in order", []float64{0, .5, .5, 0, 0}, []float64{1, 0, 0, 0, 0}, []float64{1, 0, 0, 0, 0},
			[]float64{.25, 0, .75, 0}, []int{1, 0, 2, 0}, nil, nil},
		{"over-full: later rows unreachable", []float64{0, .7, .7, 0, .5}, []float64{1, 0, 0, 0, 0}, []float64{1, 0, 0, 0, 0},
			[]float64{.69, 0, .99, 0, .999999}, []int{1, 0, 2, 0, 2}, nil, nil},
		{"under-full: remainder stays", []float64{0, .3, 0, 0, 0}, []float64{1, 0, 0, 0, 0}, nil,
			[]float64{.5, .29, 0}, []int{0, 1, 0}, nil, nil},
		{"back pops history", []float64{0, 1, 0, 0, 0}, []float64{0, 0, .4, .5, 0}, []float64{0, 0, 0, 1, 0},
			// Home→B (push Home), B→C (push B), C→Back (B), B→Back (Home)
			[]float64{.5, .1, .5, .6}, []int{1, 2, 1, 0}, []bool{false, false, true, true}, nil},
		{"empty-history back goes Home", []float64{0, 0, 0, 1, 0}, nil, nil,
			[]float64{.5, .5}, []int{0, 0}, []bool{true, true}, []bool{true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.c
			if c == nil {
				c = []float64{1, 0, 0, 0, 0}
			}
			b := tc.b
			if b == nil {
				b = []float64{1, 0, 0, 0, 0}
			}
			tt := abc(tc.home, b, c)
			w := NewMarkovWalk(tt, ThinkTime{Table: true, Scale: 1}, 0)
			rng := rngOf(tc.draws...)
			if m := w.Next(rng); m.State != 0 || !m.NewSession || m.Think != 0 {
				t.Fatalf("first move %+v, want Home, new session, no think", m)
			}
			for i, want := range tc.want {
				m := w.Next(rng)
				if m.State != want || m.NewSession {
					t.Fatalf("move %d: %+v, want state %d", i, m, want)
				}
				if tc.wantBack != nil && m.Back != tc.wantBack[i] {
					t.Fatalf("move %d: back %v, want %v", i, m.Back, tc.wantBack[i])
				}
				if tc.wantEB != nil && m.EmptyBack != tc.wantEB[i] {
					t.Fatalf("move %d: empty back %v, want %v", i, m.EmptyBack, tc.wantEB[i])
				}
			}
		})
	}
}

func TestWalkThinkRow(t *testing.T) {
	t.Parallel()
	// Table waits: the row moved to, and Back's own row (0 ms), as the
	// original sleeps transitionsTime[Back] and not the popped state's.
	tt := abc([]float64{0, 1, 0, 0, 0}, []float64{0, 0, 0, 1, 0}, []float64{1, 0, 0, 0, 0})
	w := NewMarkovWalk(tt, ThinkTime{Table: true, Scale: 0.5}, 0)
	rng := rngOf(.5)
	w.Next(rng)
	if m := w.Next(rng); m.State != 1 || m.Think != time.Second {
		t.Fatalf("Home→B %+v, want B after 2 s × 0.5", m)
	}
	if m := w.Next(rng); m.State != 0 || !m.Back || m.Think != 0 {
		t.Fatalf("B→Back %+v, want Home, back, 0 s", m)
	}
}

func TestWalkSessions(t *testing.T) {
	t.Parallel()
	t.Run("end of session restarts at Home", func(t *testing.T) {
		t.Parallel()
		tt := abc([]float64{0, 1, 0, 0, 0}, []float64{0, 0, 0, 0, 1}, []float64{1, 0, 0, 0, 0})
		w := NewMarkovWalk(tt, ThinkTime{Table: true, Scale: 1}, 0)
		rng := rngOf(.5)
		var got []string
		for range 6 {
			m := w.Next(rng)
			got = append(got, fmt.Sprintf("%d%v", m.State, m.NewSession))
		}
		if s := strings.Join(got, " "); s != "0true 1false 0true 1false 0true 1false" {
			t.Fatalf("moves %s", s)
		}
	})
	t.Run("cap restarts at Home", func(t *testing.T) {
		t.Parallel()
		tt := abc([]float64{0, 1, 0, 0, 0}, []float64{0, 1, 0, 0, 0}, []float64{1, 0, 0, 0, 0})
		w := NewMarkovWalk(tt, ThinkTime{Table: true, Scale: 1}, 3)
		rng := rngOf(.5)
		var got []string
		for range 7 {
			m := w.Next(rng)
			got = append(got, fmt.Sprintf("%d%v", m.State, m.NewSession))
		}
		if s := strings.Join(got, " "); s != "0true 1false 1false 0true 1false 1false 0true" {
			t.Fatalf("moves %s", s)
		}
	})
	t.Run("failure goes Home at once, same session", func(t *testing.T) {
		t.Parallel()
		tt := abc([]float64{0, 1, 0, 0, 0}, []float64{0, 1, 0, 0, 0}, []float64{1, 0, 0, 0, 0})
		w := NewMarkovWalk(tt, ThinkTime{Table: true, Scale: 1}, 4)
		rng := rngOf(.5)
		w.Next(rng) // Home
		w.Next(rng) // B
		w.Fail()
		if m := w.Next(rng); m.State != 0 || m.NewSession || m.Think != 0 {
			t.Fatalf("after failure %+v, want Home at once in the same session", m)
		}
		if m := w.Next(rng); m.State != 1 || m.NewSession {
			t.Fatalf("%+v, want B", m)
		}
		// The failed request counted: that was the 4th request.
		if m := w.Next(rng); !m.NewSession {
			t.Fatalf("%+v, want a new session after 4 requests", m)
		}
	})
	t.Run("GoBack", func(t *testing.T) {
		t.Parallel()
		tt := abc([]float64{0, 1, 0, 0, 0}, []float64{0, 0, 1, .5, 0}, []float64{0, 0, 0, 1, 0})
		w := NewMarkovWalk(tt, ThinkTime{Table: true}, 0)
		rng := rngOf(.1)
		w.Next(rng)
		w.Next(rng) // B, history [Home]
		w.Next(rng) // C, history [Home B]
		if s, ok := w.GoBack(); s != 1 || !ok || w.State() != 1 {
			t.Fatalf("GoBack = %d %v", s, ok)
		}
		if s, ok := w.GoBack(); s != 0 || !ok {
			t.Fatalf("GoBack = %d %v", s, ok)
		}
		if s, ok := w.GoBack(); s != 0 || ok {
			t.Fatalf("GoBack on empty = %d %v, want Home, false", s, ok)
		}
	})
}

func TestWalkDeterministic(t *testing.T) {
	t.Parallel()
	tt := shipped(t, "default_transitions.txt")
	run := func(seed uint64) []MarkovMove {
		w := NewMarkovWalk(tt, ThinkTime{Scale: 1}.WithDefaults(), 0)
		rng := rand.New(rand.NewPCG(seed, 1))
		out := make([]MarkovMove, 2000)
		for i := range out {
			out[i] = w.Next(rng)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	same := func(x, y []MarkovMove) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Fatal("the same seed gave different walks")
	}
	if same(a, c) {
		t.Fatal("different seeds gave the same walk")
	}
}

func TestThinkTime(t *testing.T) {
	t.Parallel()
	th := ThinkTime{}.WithDefaults()
	if th.Mean != 7*time.Second || th.Scale != 0 {
		t.Fatalf("defaults %+v, want the 7 s mean and scale 0 kept", th)
	}
	th.Scale = 1
	if errs := (ThinkTime{Mean: -1, Scale: math.NaN()}).Validate(); len(errs) != 2 {
		t.Fatalf("validate: %v", errs)
	}
	// The cut: a draw just below 4.54e-5 is 0; just above, the longest.
	cut := func(r float64) time.Duration {
		return th.Draw(rand.New(constSource(r)), nil, 0)
	}
	if d := cut(4.5e-5); d != 0 {
		t.Fatalf("draw below the cut: %v", d)
	}
	if d := cut(4.55e-5); d < 69*time.Second || d > 71*time.Second {
		t.Fatalf("draw above the cut: %v, want ≈ 70 s", d)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	var total, longest time.Duration
	for range n {
		d := th.Draw(rng, nil, 0)
		total += d
		longest = max(longest, d)
	}
	if mean := total / n; mean < 6950*time.Millisecond || mean > 7050*time.Millisecond {
		t.Fatalf("mean %v, want ≈ 7 s", mean)
	}
	if longest > 70*time.Second {
		t.Fatalf("longest %v beyond the cap", longest)
	}
	short := ThinkTime{Scale: 0.001}.WithDefaults()
	if d := short.Draw(rand.New(constSource(math.Exp(-1))), nil, 0); d != 7*time.Millisecond {
		t.Fatalf("scaled draw %v, want 7 ms", d)
	}
}

// constSource makes Float64 return r (to 53 bits).
type constSource float64

func (c constSource) Uint64() uint64 { return uint64(float64(c) * (1 << 53)) }

func TestStationaryExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		home, b, c []float64
	}{
		{"no back", []float64{.1, .5, .2, 0, .2}, []float64{.3, .3, .2, 0, .2}, []float64{.5, .2, 0, 0, .3}},
		{"back, under-full", []float64{0, .5, .2, 0, .3}, []float64{.15, .05, .1, .5, .2}, []float64{0, .1, 0, .6, .2}},
		{"back, over-full", []float64{0, .6, .3, 0, .3}, []float64{.3, .05, .05, .7, .3}, []float64{.2, .05, .05, .5, .5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tt := abc(tc.home, tc.b, tc.c)
			// Without the cap: the propagation agrees with the analysis.
			st, err := tt.Stationary(1 << 30)
			if err != nil {
				t.Fatal(err)
			}
			want, err := frameShares(tt)
			if err != nil {
				t.Fatal(err)
			}
			if st.Lost > 1e-9 || st.Capped > 0 {
				t.Fatalf("lost %v, capped %v", st.Lost, st.Capped)
			}
			if math.Abs(st.Requests-want.Requests) > 1e-8 {
				t.Fatalf("requests per session %v, analysis %v", st.Requests, want.Requests)
			}
			for s := range want.Shares {
				if math.Abs(st.Shares[s]-want.Shares[s]) > 1e-8 {
					t.Fatalf("share of %d: %v, analysis %v (all %v vs %v)", s, st.Shares[s], want.Shares[s], st.Shares, want.Shares)
				}
			}
			// With a short cap, a long walk agrees.
			st, err = tt.Stationary(4)
			if err != nil {
				t.Fatal(err)
			}
			got := walkShares(tt, 4, 2_000_000, 3)
			for s := range got {
				if math.Abs(got[s]-st.Shares[s]) > 0.003 {
					t.Fatalf("capped walk share of %d: %v, exact %v", s, got[s], st.Shares[s])
				}
			}
		})
	}
	if _, err := abc([]float64{0, 0, 0, .5, .5}, []float64{1, 0, 0, 0, 0}, []float64{1, 0, 0, 0, 0}).Stationary(0); err == nil {
		t.Fatal("Stationary of a table whose Home has Back: no error")
	}
}

func walkShares(tt *Transitions, maxTransitions, steps int, seed uint64) []float64 {
	w := NewMarkovWalk(tt, ThinkTime{Scale: 1}.WithDefaults(), maxTransitions)
	rng := rand.New(rand.NewPCG(seed, 99))
	count := make([]float64, tt.N())
	for range steps {
		count[w.Next(rng).State]++
	}
	for i := range count {
		count[i] /= float64(steps)
	}
	return count
}

// TestShippedStationary: the observed share of each state over a long
// seeded walk matches the exact long-run shares of the shipped tables
// within 1 percentage point (in practice within a few hundredths).
func TestShippedStationary(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"default_transitions.txt", "browse_only_transitions.txt"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tt := shipped(t, name)
			st, err := tt.Stationary(DefaultMaxTransitions)
			if err != nil {
				t.Fatal(err)
			}
			if s := sum(st.Shares); math.Abs(s-1) > 1e-9 {
				t.Fatalf("shares sum to %v", s)
			}
			if st.Lost > 1e-9 {
				t.Fatalf("lost %v", st.Lost)
			}
			// Without the cap, the propagation agrees with the analysis.
			un, err := tt.Stationary(1 << 30)
			if err != nil {
				t.Fatal(err)
			}
			fr, err := frameShares(tt)
			if err != nil {
				t.Fatal(err)
			}
			for s := range fr.Shares {
				if math.Abs(un.Shares[s]-fr.Shares[s]) > 1e-8 {
					t.Fatalf("uncapped share of %s: %v, analysis %v", tt.States[s], un.Shares[s], fr.Shares[s])
				}
			}
			got := walkShares(tt, DefaultMaxTransitions, 2_000_000, 11)
			worst := 0.0
			for s := range got {
				d := math.Abs(got[s] - st.Shares[s])
				worst = max(worst, d)
				if d > 0.01 {
					t.Errorf("%s: walk %.4f, exact %.4f", tt.States[s], got[s], st.Shares[s])
				}
			}
			t.Logf("%s: %.1f requests per session, %.4f of sessions capped, lost %.1g; largest difference %.5f",
				name, st.Requests, st.Capped, st.Lost, worst)
			for s, v := range st.Shares {
				t.Logf("  %-26s %.4f", tt.States[s], v)
			}
		})
	}
}

func BenchmarkWalkNext(b *testing.B) {
	tt := mustParseNoT(mustRead("../workloads/rubis/tables/default_transitions.txt"))
	w := NewMarkovWalk(tt, ThinkTime{Scale: 1}.WithDefaults(), 0)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		w.Next(rng)
	}
}

func mustRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// frameShares is an independent, analytic computation of the long-run
// shares without the cap on requests, to check Stationary by. The chain
// over (state, history) decomposes: entering a state with Back pushes a
// frame that ends by being popped (return), by a move to a state without
// Back (which empties the whole stack), or by End of Session, and what
// happens inside a frame does not depend on what lies below it. So the
// probability r(c) that a frame opened at c returns solves
// r(c) = back(c) + r(c)·Σ_d p(c,d)·r(d) (least solution, by iteration from
// 0), and the expected visits per frame and per session follow from small
// linear systems.
func frameShares(t *Transitions) (Stationary, error) {
	n := t.N()
	if t.HasBack(0) {
		return Stationary{}, errors.New("transition table: Home has a Back probability, so sessions are not independent and Stationary does not apply")
	}
	eff := make([][]float64, n)
	for c := range n {
		eff[c] = t.Effective(c)
	}
	// States reachable from Home; Back only returns to states already seen.
	reach := make([]bool, n)
	reach[0] = true
	queue := []int{0}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for d := range n {
			if eff[c][d] > 0 && !reach[d] {
				reach[d] = true
				queue = append(queue, d)
			}
		}
	}
	var bs, zs []int // reachable states with and without Back
	for c := range n {
		switch {
		case !reach[c]:
		case t.HasBack(c):
			bs = append(bs, c)
		default:
			zs = append(zs, c)
		}
	}
	back := t.Back()

	// r: a frame's return probability, by monotone iteration from 0.
	r := make([]float64, n)
	for range 100000 {
		change := 0.0
		for _, c := range bs {
			s := 0.0
			for _, d := range bs {
				s += eff[c][d] * r[d]
			}
			v := eff[c][back] + r[c]*s
			change = max(change, math.Abs(v-r[c]))
			r[c] = v
		}
		if change < 1e-15 {
			break
		}
	}
	g := make([]float64, n) // a sub-frame opened from c returns to c
	for _, c := range bs {
		for _, d := range bs {
			g[c] += eff[c][d] * r[d]
		}
	}

	// Frames: K·W = visits of one round, K·A = direct moves out.
	k := make([][]float64, len(bs))
	rhsW := make([][]float64, len(bs))
	rhsA := make([][]float64, len(bs))
	for i, c := range bs {
		k[i] = make([]float64, len(bs))
		rhsW[i] = make([]float64, n)
		rhsA[i] = make([]float64, n)
		for j, d := range bs {
			k[i][j] = -eff[c][d]
			rhsW[i][d] += eff[c][d]
		}
		k[i][i] += 1 - g[c]
		rhsW[i][c] += g[c]
		for _, z := range zs {
			rhsA[i][z] = eff[c][z]
		}
	}
	a, err := solve(cloneRows(k), rhsA)
	if err != nil {
		return Stationary{}, fmt.Errorf("transition table: frames never end: %w", err)
	}
	w, err := solve(k, rhsW)
	if err != nil {
		return Stationary{}, fmt.Errorf("transition table: frames never end: %w", err)
	}
	idx := make([]int, n) // state -> row in its group
	for i, c := range bs {
		idx[c] = i
	}
	for i, z := range zs {
		idx[z] = i
	}

	// Top level: states without Back, empty stack.
	m := make([][]float64, len(zs))
	rhsU := make([][]float64, len(zs))
	for i, y := range zs {
		m[i] = make([]float64, len(zs))
		rhsU[i] = make([]float64, n)
		m[i][i] = 1
		for j, z := range zs {
			m[i][j] -= eff[y][z]
			rhsU[i][z] += eff[y][z]
		}
		for _, b := range bs {
			p := eff[y][b]
			if p == 0 {
				continue
			}
			wb, ab := w[idx[b]], a[idx[b]]
			m[i][i] -= p * r[b]
			rhsU[i][b] += p
			rhsU[i][y] += p * r[b]
			for s := range n {
				rhsU[i][s] += p * wb[s]
			}
			for j, z := range zs {
				m[i][j] -= p * ab[z]
				rhsU[i][z] += p * ab[z]
			}
		}
	}
	u, err := solve(m, rhsU)
	if err != nil {
		return Stationary{}, fmt.Errorf("transition table: sessions never end: %w", err)
	}
	visits := u[idx[0]]
	visits[0]++
	total := 0.0
	for _, v := range visits {
		total += v
	}
	for s := range visits {
		visits[s] /= total
	}
	return Stationary{Shares: visits, Requests: total}, nil
}

func cloneRows(x [][]float64) [][]float64 {
	y := make([][]float64, len(x))
	for i := range x {
		y[i] = append([]float64(nil), x[i]...)
	}
	return y
}

// solve returns X with A·X = B by Gaussian elimination with partial
// pivoting; A and B are overwritten.
func solve(a, b [][]float64) ([][]float64, error) {
	n := len(a)
	for col := range n {
		p := col
		for i := col + 1; i < n; i++ {
			if math.Abs(a[i][col]) > math.Abs(a[p][col]) {
				p = i
			}
		}
		if math.Abs(a[p][col]) < 1e-12 {
			return nil, errors.New("singular system")
		}
		a[col], a[p] = a[p], a[col]
		b[col], b[p] = b[p], b[col]
		for i := range n {
			if i == col || a[i][col] == 0 {
				continue
			}
			f := a[i][col] / a[col][col]
			for j := col; j < n; j++ {
				a[i][j] -= f * a[col][j]
			}
			for j := range b[i] {
				b[i][j] -= f * b[col][j]
			}
		}
	}
	for i := range n {
		for j := range b[i] {
			b[i][j] /= a[i][i]
		}
	}
	return b, nil
}
