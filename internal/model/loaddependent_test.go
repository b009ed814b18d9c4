package model

import (
	"math"
	"testing"
)

func TestConstantLawChangesNothing(t *testing.T) {
	t.Parallel()
	// A law whose demand is the same at every load: the load-dependent
	// solution is Norton's theorem on the plain network, exact, with or
	// without a pool of threads.
	plain := Network{Think: 0.5, Stations: []Station{{Name: "cpu", Kind: Multi, Servers: 2, Demand: 0.3}, {Name: "disk", Kind: Queue, Demand: 0.2}, {Name: "net", Kind: Delay, Demand: 0.1}}}
	ld := plain
	ld.Stations = append([]Station(nil), plain.Stations...)
	for i := range ld.Stations {
		ld.Stations[i].Law = &Law{Form: Falling, One: ld.Stations[i].Demand}
	}
	clients := []int{1, 3, 7, 30, 200}
	for _, threads := range []int{0, 5} {
		plain.Admission, ld.Admission = threads, threads
		want, err := Solve(plain, clients)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Solve(ld, clients)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range got {
			w := want[i]
			if !near(p.X, w.X, 1e-9) || !near(p.R, w.R, 1e-9) || p.Method != ExactLoadDependent {
				t.Errorf("threads %d, N=%d: X=%v R=%v (%s), want X=%v R=%v", threads, p.Clients, p.X, p.R, p.Method, w.X, w.R)
			}
			if (p.Pool == nil) != (threads == 0) {
				t.Errorf("threads %d, N=%d: pool %+v", threads, p.Clients, p.Pool)
			}
			for j := range w.Stations {
				if !near(p.Stations[j].Utilisation, w.Stations[j].Utilisation, 1e-9) || !near(p.Stations[j].Residence, w.Stations[j].Residence, 1e-9) {
					t.Errorf("threads %d, N=%d, station %d: %+v, want %+v", threads, p.Clients, j, p.Stations[j], w.Stations[j])
				}
			}
		}
	}
}

func TestLoadDependentWithoutThinkTime(t *testing.T) {
	t.Parallel()
	// Z = 0: all N clients are in the middle tier at once, so the
	// network is the plain one with every demand at k = N. Two CPUs
	// whose demand falls from 1 ms alone towards 0.5 ms, beside a
	// latency rising from 1 ms by 0.25 ms per operation: at N clients
	// X(N) is Buzen's convolution of the network with those demands.
	cpu := Law{Form: Falling, One: 1e-3, Coef: 0.5e-3}
	lat := Law{Form: Rising, One: 1e-3, Coef: 0.25e-3}
	n := Network{Stations: []Station{{Name: "cpu", Kind: Multi, Servers: 2, Demand: 1e-3, Law: &cpu}, {Name: "latency", Kind: Delay, Demand: 1e-3, Law: &lat}}}
	clients := []int{1, 2, 3, 8, 20}
	got, err := Solve(n, clients)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		at := n.AtLoad(float64(c))
		want := convolution(at, c)[c-1]
		if !near(got[i].X, want, 1e-10) {
			t.Errorf("N=%d: X=%v, convolution at the demands of %d operations %v", c, got[i].X, c, want)
		}
	}
	// By hand at N = 1: 1 ms of CPU and 1 ms of latency, X = 500/s.
	if !near(got[0].X, 500, 1e-12) || !near(got[0].R, 2e-3, 1e-12) {
		t.Errorf("N=1: X=%v R=%v, want 500/s and 2 ms", got[0].X, got[0].R)
	}
}

// ldRepairman is the birth-death chain of N clients thinking Z and one
// station of m servers whose demand with j present is d(j): rate
// μ(j) = min(j, m)/d(j), p(j) ∝ Π_{i≤j} ((N−i+1)/Z)/μ(i).
func ldRepairman(clients, m int, d func(int) float64, z float64) float64 {
	logw := make([]float64, clients+1)
	mu := func(j int) float64 { return float64(min(j, m)) / d(j) }
	top := 0.0
	for j := 1; j <= clients; j++ {
		logw[j] = logw[j-1] + math.Log(float64(clients-j+1)/z) - math.Log(mu(j))
		top = max(top, logw[j])
	}
	sum, x := 0.0, 0.0
	for j, lw := range logw {
		w := math.Exp(lw - top)
		sum += w
		if j > 0 {
			x += w * mu(j)
		}
	}
	return x / sum
}

func TestLoadDependentStationMatchesItsChain(t *testing.T) {
	t.Parallel()
	// One CPU station whose demand falls with the operations at it: the
	// textbook load-dependent station, solved by its own chain.
	for _, c := range []struct {
		m    int
		law  Law
		z    float64
		hold float64
	}{
		{2, Law{Form: Falling, One: 0.2, Coef: 0.1}, 1, 0},
		{4, Law{Form: Falling, One: 0.5, Coef: 0.3}, 0.3, 0},
		{1, Law{Form: Rising, One: 0.1, Coef: 0.02}, 2, 0},
		{2, Law{Form: Falling, One: 0.2, Coef: 0.3, Hold: 3}, 0.5, 3},
	} {
		law := c.law
		n := Network{Think: c.z, Stations: []Station{{Name: "cpu", Kind: Multi, Servers: c.m, Demand: law.One, Law: &law}}}
		for _, clients := range []int{1, 2, 5, 40} {
			got, err := Solve(n, []int{clients})
			if err != nil {
				t.Fatal(err)
			}
			want := ldRepairman(clients, c.m, func(j int) float64 { return law.At(float64(j)) }, c.z)
			if !near(got[0].X, want, 1e-10) {
				t.Errorf("m=%d law %v Z=%v N=%d: X=%v, chain %v", c.m, law, c.z, clients, got[0].X, want)
			}
		}
	}
}

func TestLoadDependentBeyondLawMaxLoad(t *testing.T) {
	t.Parallel()
	// Without a pool, past lawMaxLoad clients the demands are those of
	// lawMaxLoad operations: the same answer as the plain network there.
	law := Law{Form: Falling, One: 2e-3, Coef: 1e-3}
	n := Network{Think: 1, Stations: []Station{{Name: "cpu", Kind: Multi, Servers: 2, Demand: 2e-3, Law: &law}}}
	got, err := Solve(n, []int{10, lawMaxLoad + 500})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Solve(n.AtLoad(lawMaxLoad), []int{lawMaxLoad + 500})
	if got[0].Clients != 10 || !near(got[1].X, want[0].X, 1e-12) {
		t.Errorf("points %+v, want 10 clients then X %v at %d", got, want[0].X, lawMaxLoad+500)
	}
}
