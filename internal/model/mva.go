package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Limits of the exact solver, which costs clients × servers × 2^(multi-server
// stations) steps: at these sizes a fraction of a second. Past either, or
// past exactMaxMulti multi-server stations, Solve uses the approximate
// solver, whose cost does not grow with the servers and grows only
// linearly with the clients.
const (
	ExactMaxClients = 5000
	ExactMaxServers = 256
)

// Solve solves the network at each number of clients, exactly when the
// limits allow, approximately otherwise; points come back in the order of
// clients.
func Solve(n Network, clients []int) ([]Point, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if len(clients) == 0 {
		return nil, nil
	}
	for _, c := range clients {
		if c < 1 {
			return nil, fmt.Errorf("%d clients: the model needs at least 1", c)
		}
	}
	if n.LoadDependent() && slices.Max(clients) > lawMaxLoad && n.Admission == 0 {
		return solveManyLoadDependent(n, clients)
	}
	if (n.Admission > 0 || n.LoadDependent()) && n.totalDemand() > 0 {
		return solveAdmitted(n, clients)
	}
	top := slices.Max(clients)
	exact := top <= ExactMaxClients
	for _, s := range n.Stations {
		exact = exact && (s.Kind != Multi || s.Servers <= ExactMaxServers)
	}
	if exact {
		all, err := solveExact(n, top)
		if err == nil {
			out := make([]Point, len(clients))
			for i, c := range clients {
				out[i] = all[c-1]
			}
			return out, nil
		}
	}
	out := make([]Point, len(clients))
	for i, c := range clients {
		out[i] = solveApprox(n, c)
	}
	return out, nil
}

// solveManyLoadDependent solves a load-dependent network without a
// thread pool at more than lawMaxLoad clients: the points up to it as
// solveAdmitted does, those beyond with the demands of lawMaxLoad
// operations in service (where Span/k is a thousandth of Span).
func solveManyLoadDependent(n Network, clients []int) ([]Point, error) {
	var few, many []int
	for _, c := range clients {
		if c <= lawMaxLoad {
			few = append(few, c)
		} else {
			many = append(many, c)
		}
	}
	got := map[int]Point{}
	if len(few) > 0 {
		pts, err := solveAdmitted(n, few)
		if err != nil {
			return nil, err
		}
		for _, p := range pts {
			got[p.Clients] = p
		}
	}
	pts, err := Solve(n.AtLoad(lawMaxLoad), many)
	if err != nil {
		return nil, err
	}
	for _, p := range pts {
		got[p.Clients] = p
	}
	out := make([]Point, len(clients))
	for i, c := range clients {
		out[i] = got[c]
	}
	return out, nil
}

// SolveExact solves the network exactly for 1 to clients clients; point i
// is i+1 clients. It ignores ExactMaxClients and ExactMaxServers, and
// refuses a network with a thread pool (Solve takes those) or more
// multi-server stations than it solves.
func SolveExact(n Network, clients int) ([]Point, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if n.Admission > 0 {
		return nil, fmt.Errorf("a network with a pool of %d threads: solve it with Solve", n.Admission)
	}
	if n.LoadDependent() {
		return nil, errors.New("a network whose demands depend on the load: solve it with Solve")
	}
	if clients < 1 {
		return nil, fmt.Errorf("%d clients: the model needs at least 1", clients)
	}
	return solveExact(n, clients)
}

// SolveApprox solves the network approximately at one number of clients.
func SolveApprox(n Network, clients int) (Point, error) {
	if err := n.Validate(); err != nil {
		return Point{}, err
	}
	if clients < 1 {
		return Point{}, fmt.Errorf("%d clients: the model needs at least 1", clients)
	}
	return solveApprox(n, clients), nil
}

// solveExact is exact MVA. For a queue, R_k(n) = D_k (1 + Q_k(n−1)). For
// a station of m servers (load-dependent, rate min(j, m)/D with j
// present), the residence time needs the marginal probabilities
// p_k(j | n−1) of j operations there, and only those of j < m:
//
//	R_k(n) = D_k/m · (1 + Q_k(n−1) + Σ_{j=0}^{m−2} (m−1−j) p_k(j | n−1))
//	p_k(j | n) = X(n) D_k / j · p_k(j−1 | n−1)                    0 < j < m
//
// (Menascé, Almeida and Dowdy, Performance by Design (2004), ch. 13;
// Reiser and Lavenberg, J. ACM 27(2), 1980). The textbook finds
// p_k(0 | n) as 1 minus the others, which cancels to noise as the station
// saturates (with 8 servers, within a few dozen clients). Here it comes
// from the network without station k instead, a ratio of positive numbers:
// p_k(0 | n) = G_{−k}(n)/G(n), and X(n) = G(n−1)/G(n), so
//
//	p_k(0 | n) = p_k(0 | n−1) · X(n) / X_{−k}(n)
//
// where X_{−k} is the throughput of the network without k, itself solved
// exactly (memoised by the set of multi-server stations left).
func solveExact(n Network, clients int) ([]Point, error) {
	multis := 0
	for _, s := range n.Stations {
		if s.Kind == Multi {
			multis++
		}
	}
	if multis > exactMaxMulti || len(n.Stations) > 64 {
		return nil, errTooManyMulti
	}
	e := &exactSolver{n: n, clients: clients, memo: map[uint64][]float64{}}
	return e.solve(^uint64(0), true), nil
}

// exactMaxMulti bounds the multi-server stations the exact solver takes:
// it solves the network without each subset of them, 2^multis networks.
const exactMaxMulti = 6

var errTooManyMulti = fmt.Errorf("more than %d multi-server stations, or more than 64 stations", exactMaxMulti)

type exactSolver struct {
	n       Network
	clients int
	// memo holds X(1..clients) of the network of the stations in a mask.
	memo map[uint64][]float64
}

// solve runs the recursion on the stations in mask; with points it
// returns every point, otherwise only X(n) in the points' X.
func (e *exactSolver) solve(mask uint64, points bool) []Point {
	type ld struct {
		i int
		p []float64 // p(j | n−1), j < m
		// without is X(1..clients) of the network without this station.
		without []float64
	}
	var in []int
	var lds []*ld
	for i, s := range e.n.Stations {
		if mask&(1<<uint(i)) == 0 {
			continue
		}
		in = append(in, i)
		if s.Kind == Multi {
			l := &ld{i: i, p: make([]float64, s.Servers), without: e.throughput(mask &^ (1 << uint(i)))}
			l.p[0] = 1
			lds = append(lds, l)
		}
	}
	k := len(e.n.Stations)
	q := make([]float64, k)
	r := make([]float64, k)
	out := make([]Point, e.clients)
	for c := 1; c <= e.clients; c++ {
		total := 0.0
		li := 0
		for _, i := range in {
			s := e.n.Stations[i]
			switch s.Kind {
			case Delay:
				r[i] = s.Demand
			case Queue:
				r[i] = s.Demand * (1 + q[i])
			case Multi:
				m, p := s.Servers, lds[li].p
				li++
				sum := 1 + q[i]
				for j := 0; j <= m-2; j++ {
					sum += float64(m-1-j) * p[j]
				}
				r[i] = s.Demand / float64(m) * sum
			}
			total += r[i]
		}
		x := float64(c) / (e.n.Think + total)
		out[c-1] = Point{Clients: c, X: x, R: total, Method: Exact}
		for _, i := range in {
			q[i] = x * r[i]
		}
		for _, l := range lds {
			s := e.n.Stations[l.i]
			// Highest j first: each p(j | c) needs p(j−1 | c−1), which
			// this loop has not yet overwritten.
			for j := s.Servers - 1; j >= 1; j-- {
				l.p[j] = x * s.Demand / float64(j) * l.p[j-1]
			}
			// Without the station the clients may never wait (no think
			// time, no other demand): then it always holds one.
			l.p[0] *= x / l.without[c-1]
		}
		if points {
			pt := &out[c-1]
			pt.Stations = make([]StationPoint, k)
			for i, s := range e.n.Stations {
				pt.Stations[i] = StationPoint{Utilisation: x * s.Demand / float64(s.servers()), Residence: r[i], Queue: q[i]}
			}
		}
	}
	return out
}

// throughput is X(1..clients) of the network of the stations in mask;
// +Inf where it has neither think time nor demand.
func (e *exactSolver) throughput(mask uint64) []float64 {
	mask &= 1<<uint(len(e.n.Stations)) - 1
	if x, ok := e.memo[mask]; ok {
		return x
	}
	x := make([]float64, e.clients)
	demand := e.n.Think
	for i, s := range e.n.Stations {
		if mask&(1<<uint(i)) != 0 {
			demand += s.Demand
		}
	}
	if demand == 0 {
		for i := range x {
			x[i] = math.Inf(1)
		}
	} else {
		for i, p := range e.solve(mask, false) {
			x[i] = p.X
		}
	}
	e.memo[mask] = x
	return x
}

// Approximate solver settings: iteration stops when no queue length
// moves by more than approxTolerance (relative), or after approxMaxIter
// rounds.
const (
	approxTolerance = 1e-10
	approxMaxIter   = 100000
)

// solveApprox is Schweitzer and Bard's approximate MVA: an arriving
// operation sees the queue of N−1 clients as (N−1)/N of the queue of N,
// so R_k = D_k (1 + (N−1)/N · Q_k), iterated to a fixed point. A station
// of m servers and demand D is Seidmann's pair: a queue of demand D/m
// (the waiting, at m times the speed) and a delay of D(m−1)/m (the rest
// of one server's time). Seidmann, Schweitzer and Shalev-Oren, "Computer
// Network Performance Evaluation", Performance Evaluation 7(3), 1987.
func solveApprox(n Network, clients int) Point {
	k := len(n.Stations)
	N := float64(clients)
	// The queue part of each station; a delay has none.
	qd := make([]float64, k)
	fixed := make([]float64, k) // the delay part
	for i, s := range n.Stations {
		switch s.Kind {
		case Delay:
			qd[i], fixed[i] = 0, s.Demand
		case Queue:
			qd[i] = s.Demand
		case Multi:
			m := float64(s.Servers)
			qd[i], fixed[i] = s.Demand/m, s.Demand*(m-1)/m
		}
	}
	queueing := 0
	for i := range n.Stations {
		if qd[i] > 0 {
			queueing++
		}
	}
	q := make([]float64, k)
	for i := range q {
		if qd[i] > 0 {
			q[i] = N / float64(queueing)
		}
	}
	r := make([]float64, k)
	var x float64
	for range approxMaxIter {
		total := 0.0
		for i := range n.Stations {
			r[i] = fixed[i] + qd[i]*(1+(N-1)/N*q[i])
			total += r[i]
		}
		x = N / (n.Think + total)
		moved := 0.0
		for i := range n.Stations {
			// Only the queue part's population feeds back.
			nq := x * qd[i] * (1 + (N-1)/N*q[i])
			moved = max(moved, math.Abs(nq-q[i])/max(nq, 1e-300))
			q[i] = nq
		}
		if moved < approxTolerance {
			break
		}
	}
	pt := Point{Clients: clients, X: x, Method: Approx, Stations: make([]StationPoint, k)}
	for i, s := range n.Stations {
		pt.R += r[i]
		pt.Stations[i] = StationPoint{Utilisation: x * s.Demand / float64(max(s.servers(), 1)), Residence: r[i], Queue: x * r[i]}
	}
	return pt
}

// solveAdmitted solves a network whose stations admit at most
// n.Admission operations at once (a pool of server threads held for the
// whole operation: a simultaneous possession, which no product-form
// network has), or whose demands depend on the load (Station.Law). It is
// the textbook decomposition for a memory constraint (Lazowska,
// Zahorjan, Graham and Sevcik, Quantitative System Performance (1984),
// ch. 9): the stations alone, without think time, are solved for
// k = 1..T operations, giving their throughput X_in(k) — with a Law, each
// k with the demands of k operations in service; then the middle tier is
// one load-dependent station of rate μ(j) = X_in(min(j, T)) with j
// operations present, a flow-equivalent server, and the clients and it
// form a birth-death chain:
//
//	p(j) ∝ Π_{i=1..j} ((N−i+1)/Z) / μ(i),   X = Σ_j p(j) μ(j)
//
// (with Z = 0 every client is in the middle tier: X = μ(N)). Without a
// pool, T is the clients (nobody waits for a thread). Below T clients
// nothing waits for a thread and this is Norton's theorem, exact; above,
// it assumes the stations settle between changes of the pool's
// population, which is accurate when operations are short beside the
// time between arrivals to the pool. A station's residence time is its
// queue in the stations averaged over p(j), by Little's law.
func solveAdmitted(n Network, clients []int) ([]Point, error) {
	pooled := n.Admission > 0
	threads := n.Admission
	if !pooled {
		threads = slices.Max(clients)
	}
	top := min(slices.Max(clients), threads)
	in, err := innerPoints(n, top)
	if err != nil {
		return nil, err
	}
	method := ExactPooled
	switch {
	case n.LoadDependent() && in[top-1].Method == Approx:
		method = ApproxLoadDependent
	case n.LoadDependent():
		method = ExactLoadDependent
	case in[top-1].Method == Approx:
		method = ApproxPooled
	}
	mu := func(j int) Point { return in[min(j, top)-1] }
	out := make([]Point, len(clients))
	for ci, c := range clients {
		// p(0..c) as logarithms of weights, then normalised.
		lw := make([]float64, c+1)
		if n.Think > 0 {
			for j := 1; j <= c; j++ {
				lw[j] = lw[j-1] + math.Log(float64(c-j+1)/n.Think) - math.Log(mu(j).X)
			}
		} else {
			for j := range c {
				lw[j] = math.Inf(-1)
			}
		}
		peak := slices.Max(lw)
		p := make([]float64, c+1)
		sum := 0.0
		for j, l := range lw {
			p[j] = math.Exp(l - peak)
			sum += p[j]
		}
		k := len(n.Stations)
		pt := Point{Clients: c, Method: method, Stations: make([]StationPoint, k), Pool: &StationPoint{}}
		busy := 0.0
		for j := 1; j <= c; j++ {
			pj := p[j] / sum
			if pj == 0 {
				continue
			}
			sub := mu(j)
			pt.X += pj * sub.X
			busy += pj * float64(min(j, threads))
			pt.Pool.Queue += pj * float64(max(j-threads, 0))
			for i := range k {
				pt.Stations[i].Queue += pj * sub.Stations[i].Queue
				pt.Stations[i].Utilisation += pj * sub.Stations[i].Utilisation
			}
		}
		for i, s := range n.Stations {
			st := &pt.Stations[i]
			st.Residence = st.Queue / pt.X
			if s.Law == nil {
				st.Utilisation = pt.X * s.Demand / float64(s.servers())
			}
			pt.R += st.Residence
		}
		pt.Pool.Utilisation = busy / float64(threads)
		pt.Pool.Residence = pt.Pool.Queue / pt.X
		pt.R += pt.Pool.Residence
		if !pooled {
			pt.Pool = nil
		}
		out[ci] = pt
	}
	return out, nil
}

// lawMaxLoad is the load past which a Law's demand is taken as constant
// in solving: the stations are solved once per load up to it (a cost
// that grows with its square), and Span/k is by then a thousandth of
// Span.
const lawMaxLoad = 1000

// innerPoints solves the stations alone, without think time, for 1..top
// operations among them: one network for all when no demand depends on
// the load, else one per load up to lawMaxLoad and the demands of
// lawMaxLoad beyond.
func innerPoints(n Network, top int) ([]Point, error) {
	inner := n
	inner.Think, inner.Admission = 0, 0
	all := make([]int, top)
	for k := range all {
		all[k] = k + 1
	}
	if !n.LoadDependent() {
		return Solve(inner, all)
	}
	out := make([]Point, top)
	for k := 1; k <= min(top, lawMaxLoad); k++ {
		pts, err := Solve(inner.AtLoad(float64(k)), []int{k})
		if err != nil {
			return nil, err
		}
		out[k-1] = pts[0]
	}
	if top > lawMaxLoad {
		rest, err := Solve(inner.AtLoad(lawMaxLoad), all[lawMaxLoad:])
		if err != nil {
			return nil, err
		}
		copy(out[lawMaxLoad:], rest)
	}
	return out, nil
}
