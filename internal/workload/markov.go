package workload

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// This file is the Markov-chain mix of the RUBiS client (TransitionTable.java
// and UserSession.java of the public RUBiS source): the transition table as
// data, one emulated browser's walk over it, and the think time. The rules,
// quirks included, are the original's:
//   - the table's COLUMNS are the current state and its ROWS the next one;
//   - the next state is found by walking the rows in order, adding up float32
//     probabilities, until a float32 uniform draw falls below the sum: an
//     over-full column (sum > 1) never reaches its last rows, an under-full
//     one keeps the current state for the remainder;
//   - entering a state whose Back probability is non-zero pushes the state
//     left onto a history stack, entering any other state empties it; Back
//     pops it and the popped state is requested again;
//   - a session starts at Home (state 0) and ends at End of Session or after
//     MaxTransitions requests; the next starts at Home at once.

// DefaultMaxTransitions is the original's workload_maximum_number_of_transitions:
// requests per session before it is cut.
const DefaultMaxTransitions = 1000

// Transitions is a parsed transition table: N states plus two pseudo-states,
// Back (row N) and End of Session (row N+1).
type Transitions struct {
	// Name is the table's name, the header's second field.
	Name string
	// States are the names of the rows, Back and End of Session included.
	States []string
	// prob[from][to], kept in float32 because the original's accumulation
	// and draw are float32: the rounding decides which rows a full column
	// reaches.
	prob [][]float32
	// Wait is each row's transition waiting time (used instead of the
	// exponential think time when the think time is Table).
	Wait []time.Duration
}

// N is the number of real states (27 for RUBiS).
func (t *Transitions) N() int { return len(t.States) - 2 }

// Back is the row of the Back pseudo-state.
func (t *Transitions) Back() int { return len(t.States) - 2 }

// EndOfSession is the row of the End of Session pseudo-state.
func (t *Transitions) EndOfSession() int { return len(t.States) - 1 }

// HasBack reports whether a state keeps history: its Back probability is
// non-zero, so entering it pushes the state left.
func (t *Transitions) HasBack(state int) bool { return t.prob[state][t.Back()] != 0 }

// Effective is the probability with which the walk really goes from a state
// to each row, the quirks applied: rows past an over-full column's 1 get
// less or nothing, and an under-full column's remainder is added to the
// state itself. It is exact for a draw uniform over the 2^24 float32 values
// of [0,1), which is what rand.Float32 and Java's nextFloat give.
func (t *Transitions) Effective(from int) []float64 {
	rows := len(t.States)
	p := make([]float64, rows)
	var cum float32
	prev := 0.0
	for i := range rows {
		cum += t.prob[from][i]
		// P(u < cum) for u = k/2^24, k in [0, 2^24).
		below := math.Min(math.Ceil(float64(cum)*(1<<24)), 1<<24) / (1 << 24)
		below = math.Max(below, prev)
		p[i] = below - prev
		prev = below
	}
	p[from] += 1 - prev
	return p
}

// ParseTransitions reads a table in the original's format: a header line
// ("RUBiS Transition Table<TAB>name"), three more header lines (an empty
// one, the quoted "To >>> / From vvvv" cell and the column names; the
// number of column names less the waiting-time column is the number of
// states N), then N+2 rows, each a name, N probabilities and a waiting time
// in ms, tab-separated. Whatever follows the last row is ignored, as the
// original does.
func ParseTransitions(r io.Reader) (*Transitions, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return strings.TrimRight(sc.Text(), "\r"), true
	}
	bad := func(col int, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if col > 0 {
			return fmt.Errorf("transition table: line %d, column %d: %s", line, col, msg)
		}
		return fmt.Errorf("transition table: line %d: %s", line, msg)
	}

	head, ok := next()
	if !ok {
		return nil, cmp.Or(sc.Err(), errors.New("transition table: empty"))
	}
	hf := strings.Split(head, "\t")
	if len(hf) < 2 || strings.TrimSpace(hf[1]) == "" {
		return nil, bad(0, "header %q: want \"RUBiS Transition Table<TAB>name\"", head)
	}
	t := &Transitions{Name: strings.TrimSpace(hf[1])}

	// The column names come after the quoted corner cell, which spans lines.
	var names []string
	for range 3 {
		s, ok := next()
		if !ok {
			return nil, cmp.Or(sc.Err(), bad(0, "the table ends in its header"))
		}
		names = strings.Split(s, "\t")
	}
	for len(names) > 0 && strings.TrimSpace(names[len(names)-1]) == "" {
		names = names[:len(names)-1]
	}
	n := len(names) - 2 // less the corner cell and the waiting-time column
	if n < 1 {
		return nil, bad(0, "column names: want the states then the waiting time, got %d fields", len(names))
	}

	rows := n + 2
	t.States = make([]string, rows)
	t.Wait = make([]time.Duration, rows)
	t.prob = make([][]float32, n)
	for j := range t.prob {
		t.prob[j] = make([]float32, rows)
	}
	for i := range rows {
		s, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("transition table: %d rows after line %d, want %d (%d states, Back, End of Session)", i, line, rows, n)
		}
		f := strings.Split(s, "\t")
		for len(f) > n+2 && strings.TrimSpace(f[len(f)-1]) == "" {
			f = f[:len(f)-1]
		}
		if len(f) != n+2 {
			return nil, bad(0, "row %q has %d fields, want %d (name, %d probabilities, waiting time)", f[0], len(f), n+2, n)
		}
		t.States[i] = strings.TrimSpace(f[0])
		if t.States[i] == "" {
			return nil, bad(1, "empty state name")
		}
		for j := range n {
			v, err := strconv.ParseFloat(strings.TrimSpace(f[j+1]), 32)
			if err != nil || math.IsNaN(v) || v < 0 || math.IsInf(v, 0) {
				return nil, bad(j+2, "probability %q of %s from %s: want a number ≥ 0", f[j+1], t.States[i], names[j+1])
			}
			t.prob[j][i] = float32(v)
		}
		w, err := strconv.Atoi(strings.TrimSpace(f[n+1]))
		if err != nil || w < 0 {
			return nil, bad(n+2, "waiting time %q: want whole milliseconds ≥ 0", f[n+1])
		}
		t.Wait[i] = time.Duration(w) * time.Millisecond
	}
	return t, nil
}

// ThinkTime is how long an emulated browser pauses before each request. The
// original draws it in TransitionTable.nextState, so it precedes every drawn
// move (Back and End of Session included) but not the Home request after an
// error page, which is sent at once.
type ThinkTime struct {
	// Table: the table's per-row waiting times instead of the exponential
	// draw (the original's workload_use_tpcw_think_time = no).
	Table bool
	// Mean of the negative exponential draw; default 7 s (TPC-W's).
	Mean time.Duration
	// Scale multiplies every pause (the original's slow-down factor): 1 is
	// the original's, below 1 for short runs, 0 none. Not defaulted: zero
	// is a setting (--think-scale 0).
	Scale float64
}

// DefaultThinkMean is TPC-W's mean think time, which RUBiS uses.
const DefaultThinkMean = 7 * time.Second

// thinkCut: the original maps draws below it to a zero pause, which caps
// the exponential at -ln(4.54e-5) ≈ 10 means (70 s at 7 s).
const thinkCut = 4.54e-5

// WithDefaults fills the zero mean.
func (th ThinkTime) WithDefaults() ThinkTime {
	th.Mean = cmp.Or(th.Mean, DefaultThinkMean)
	return th
}

// Validate reports every field out of range.
func (th ThinkTime) Validate() []error {
	var errs []error
	if th.Mean < 0 {
		errs = append(errs, fmt.Errorf("think mean %v: want ≥ 0", th.Mean))
	}
	if th.Scale < 0 || math.IsNaN(th.Scale) || math.IsInf(th.Scale, 0) {
		errs = append(errs, fmt.Errorf("think scale %v: want a finite number ≥ 0", th.Scale))
	}
	return errs
}

// Draw is one pause before a request; row is the table row the move went
// to (Back for a Back move), whose waiting time a Table think uses.
func (th ThinkTime) Draw(rng *rand.Rand, t *Transitions, row int) time.Duration {
	var ms float64
	if th.Table {
		ms = float64(t.Wait[row].Milliseconds())
	} else {
		r := rng.Float64()
		if r >= thinkCut {
			// The original rounds to whole milliseconds before scaling.
			ms = math.Floor(-float64(th.Mean.Milliseconds())*math.Log(r) + 0.5)
		}
	}
	return time.Duration(ms * th.Scale * float64(time.Millisecond))
}

// MarkovMove is what a walk does next: pause Think, then request State.
type MarkovMove struct {
	State int
	// NewSession: State is the Home page of a new session (the caller picks
	// a new user).
	NewSession bool
	// Back: the move popped the history; State is the page popped.
	Back bool
	// EmptyBack: the table chose Back with no history. The original then
	// sits in the Back pseudo-state and its next draw indexes outside the
	// table, killing the emulated browser; we follow its own rule for a
	// back with no history (UserSession: backToPreviousState() == -1 resets
	// to Home) and go Home in the same session. No state of the shipped
	// tables can reach it.
	EmptyBack bool
	Think     time.Duration
}

// MarkovWalk is one emulated browser's position in the chain. A walk is used by
// one goroutine; its randomness is the rng passed to Next.
type MarkovWalk struct {
	t     *Transitions
	think ThinkTime
	max   int

	state   int
	history []int
	// left is how many more requests this session may make.
	left    int
	started bool
	// failed: the last request got no page or an error page; the next
	// request is Home, at once.
	failed bool
}

// NewMarkovWalk starts a walk; maxTransitions ≤ 0 means DefaultMaxTransitions.
// think is used as given (see ThinkTime.WithDefaults).
func NewMarkovWalk(t *Transitions, think ThinkTime, maxTransitions int) *MarkovWalk {
	if maxTransitions <= 0 {
		maxTransitions = DefaultMaxTransitions
	}
	return &MarkovWalk{t: t, think: think, max: maxTransitions}
}

// State is the current state (the last one returned or backed into).
func (w *MarkovWalk) State() int { return w.state }

// History is the back stack, bottom first; the caller must not keep it.
func (w *MarkovWalk) History() []int { return w.history }

// Next is the move after the last request, which must have been made.
func (w *MarkovWalk) Next(rng *rand.Rand) MarkovMove {
	if !w.started {
		w.started = true
		return w.begin()
	}
	if w.failed {
		// UserSession: a failed request resets to Home without drawing.
		w.failed = false
		w.state = 0
		if w.left == 0 {
			return w.begin()
		}
		w.left--
		return MarkovMove{State: 0}
	}
	m, row := w.step(rng)
	m.Think = w.think.Draw(rng, w.t, row)
	if w.state == w.t.EndOfSession() || w.left == 0 {
		think := m.Think
		m = w.begin()
		m.Think = think
		return m
	}
	w.left--
	return m
}

// Fail records that the last request got no page or an error page: the
// original counts it and goes back to Home at once, same session.
func (w *MarkovWalk) Fail() { w.failed = true }

// GoBack pops the history outside a draw, as the original does when a page
// says "Sorry" or has no id to follow: the popped state, or Home (with
// ok false) when the history is empty.
func (w *MarkovWalk) GoBack() (state int, ok bool) {
	if len(w.history) == 0 {
		w.state = 0
		return 0, false
	}
	w.state = w.history[len(w.history)-1]
	w.history = w.history[:len(w.history)-1]
	return w.state, true
}

// begin starts a session at Home. The history is kept, as the original
// keeps it: Home has no Back, so its first move empties it.
func (w *MarkovWalk) begin() MarkovMove {
	w.state = 0
	w.left = w.max - 1
	return MarkovMove{State: 0, NewSession: true}
}

// step is TransitionTable.nextState: the move and the row whose waiting
// time applies.
func (w *MarkovWalk) step(rng *rand.Rand) (MarkovMove, int) {
	t := w.t
	from := w.state
	u := rng.Float32()
	var cum float32
	to := from // under-full: the remainder stays
	for i, p := range t.prob[from] {
		cum += p
		if u < cum {
			to = i
			break
		}
	}
	switch to {
	case t.Back():
		s, ok := w.GoBack() // an empty history goes Home
		return MarkovMove{State: s, Back: true, EmptyBack: !ok}, to
	case t.EndOfSession():
		w.state = to
		return MarkovMove{}, to
	}
	if t.HasBack(to) {
		w.history = append(w.history, from)
	} else {
		w.history = w.history[:0]
	}
	w.state = to
	return MarkovMove{State: to}, to
}

// Stationary is the long run of a table's walk.
type Stationary struct {
	// Shares of the requests by state (they sum to 1).
	Shares []float64
	// Requests is the mean number of requests per session.
	Requests float64
	// Capped is the share of sessions cut by the cap on requests.
	Capped float64
	// Lost is the probability mass dropped as negligible (histories below
	// 1e-15 at a step); the shares are exact to about Lost × the cap.
	Lost float64
}

// Stationary computes the long-run share of requests each state gets, for
// sessions cut after maxTransitions requests (≤ 0: the default 1000).
//
// The walk is not a Markov chain over states alone: Back returns to a state
// kept on the history stack. It is one over (state, history), and a session
// is a walk of that chain from (Home, whatever history) until End of
// Session or the cap. When Home has no Back, Home's first move either
// empties the history or pushes Home above it, and nothing below Home is
// ever popped again, so sessions are independent and identically
// distributed; by the renewal-reward theorem a state's long-run share is its
// expected requests per session over the expected requests per session.
// Both are computed by propagating the exact distribution over (state,
// history) request by request, up to the cap. The histories that carry
// mass are few (the stack holds View Item, View User Info and View Bid
// History pages, mostly repeated), so this is exact and fast; the cap
// matters (the browsing mix's sessions average hundreds of requests).
func (t *Transitions) Stationary(maxTransitions int) (Stationary, error) {
	const negligible = 1e-15
	if maxTransitions <= 0 {
		maxTransitions = DefaultMaxTransitions
	}
	n := t.N()
	if t.HasBack(0) {
		return Stationary{}, errors.New("transition table: Home has a Back probability, so sessions are not independent and Stationary does not apply")
	}
	if n > 256 {
		return Stationary{}, fmt.Errorf("transition table: %d states, Stationary handles at most 256", n)
	}
	type arc struct {
		to int
		p  float64
	}
	arcs := make([][]arc, n)
	for c := range n {
		for to, p := range t.Effective(c) {
			if p > 0 {
				arcs[c] = append(arcs[c], arc{to, p})
			}
		}
	}
	type key struct {
		state int
		hist  string // the stack, bottom first, one byte a state
	}
	st := Stationary{Shares: make([]float64, n)}
	cur := map[key]float64{{0, ""}: 1}
	next := map[key]float64{}
	st.Shares[0] = 1
	for req := 2; req <= maxTransitions && len(cur) > 0; req++ {
		clear(next)
		for k, m := range cur {
			for _, a := range arcs[k.state] {
				mass := m * a.p
				var to key
				switch {
				case a.to == t.EndOfSession():
					continue
				case a.to == t.Back() && k.hist == "":
					to = key{0, ""} // as Next does: Home
				case a.to == t.Back():
					h := k.hist
					to = key{int(h[len(h)-1]), h[:len(h)-1]}
				case t.HasBack(a.to):
					to = key{a.to, k.hist + string([]byte{byte(k.state)})}
				default:
					to = key{a.to, ""}
				}
				next[to] += mass
			}
		}
		for k, m := range next {
			if m < negligible {
				st.Lost += m
				delete(next, k)
				continue
			}
			st.Shares[k.state] += m
		}
		cur, next = next, cur
	}
	for _, m := range cur {
		st.Capped += m
	}
	for _, v := range st.Shares {
		st.Requests += v
	}
	for s := range st.Shares {
		st.Shares[s] /= st.Requests
	}
	return st, nil
}

// WalkRun is implemented by a Run whose clients walk a transition table
// (RUBiS's browsers): what the walk is expected to give and what the
// clients did beside their operations, for the result's mix section.
type WalkRun interface {
	Walk() WalkReport
}

// WalkReport is a walk's expectation and the clients' counts, over the
// whole run (ramps included).
type WalkReport struct {
	// Table is the transition table's name.
	Table string
	// Stationary is each operation's long-run share (Stationary.Shares),
	// by operation index.
	Stationary []float64
	// MeanSession is the mean requests per session; SessionThink the mean
	// think time before each, so a mean session lasts about
	// MeanSession × SessionThink.
	MeanSession  float64
	SessionThink time.Duration
	// TolerancePoints: the observed share of every state must be within
	// this many percentage points of its stationary share (plus what
	// chance alone gives a run of its size); 0: not judged.
	TolerancePoints float64
	// The moves the pages forced: a "Sorry" page's back, a back for want
	// of an id, a back with an empty history that reset the session to
	// Home; and the pages sent again after a failed try.
	SorryBacks, NoIDBacks, Resets, Retries int64
	// Causes are what the workload knows can keep the mix from the
	// table's (a population too small for its searches, say), shown when
	// the worst state is off by more than the tolerance.
	Causes []string
	// Images fetched beside the pages, Pages the pages received.
	Pages, Images, ImageErrors, ImageBytes int64
	ImageTime, ImageMax                    time.Duration
}
