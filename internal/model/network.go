package model

import (
	"errors"
	"fmt"
	"math"
)

// Kind is how a station serves.
type Kind int

const (
	// Delay is an infinite server: every operation spends its demand
	// there, none waits (think time, network round trips).
	Delay Kind = iota
	// Queue is a single server: operations wait for one another.
	Queue
	// Multi is m identical servers sharing one queue (CPU cores, a
	// pool of server threads).
	Multi
)

func (k Kind) String() string {
	switch k {
	case Delay:
		return "delay"
	case Queue:
		return "queue"
	case Multi:
		return "multi-server"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Station is one service centre of the network.
type Station struct {
	Name string
	Kind Kind
	// Servers is a Multi station's m; 1 for a Queue, 0 for a Delay.
	Servers int
	// Demand is the service time, in seconds, one operation of the mix
	// needs from the station over all its visits.
	Demand float64
	// Source says where Demand came from, for the reader of a model.
	Source string
	// Law, when set, makes the demand depend on the load: with k
	// operations in the middle tier at once it is Law.At(k), and Demand
	// is the demand at the run modelled. Solve then treats the middle
	// tier as a load-dependent flow-equivalent server (solveAdmitted).
	Law *Law
}

// capacity is the throughput the station alone allows, operations per
// second: infinite for a delay.
func (s Station) capacity() float64 {
	if s.Kind == Delay || s.Demand == 0 {
		return math.Inf(1)
	}
	return float64(s.servers()) / s.Demand
}

func (s Station) servers() int {
	if s.Kind == Multi {
		return s.Servers
	}
	return 1
}

// Network is a closed single-class network: N clients each think for
// Think seconds, then pass through every station once per operation.
type Network struct {
	// Think is the mean time a client spends between operations, in
	// seconds; not part of the response time.
	Think       float64
	ThinkSource string
	Stations    []Station
	// Admission, when above 0, bounds the operations among the stations
	// at once: a pool of that many server threads, each held for the
	// whole of an operation; the others wait for one. Solve treats the
	// pool as a flow-equivalent server (see solveAdmitted).
	Admission       int
	AdmissionSource string
}

// Validate reports every problem of the network.
func (n Network) Validate() error {
	var errs []error
	if n.Admission < 0 {
		errs = append(errs, fmt.Errorf("admission %d: must be 0 (none) or more", n.Admission))
	}
	if n.Think < 0 || math.IsNaN(n.Think) || math.IsInf(n.Think, 0) {
		errs = append(errs, fmt.Errorf("think time %v: must be a finite number, 0 or more", n.Think))
	}
	for i, s := range n.Stations {
		name := s.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		if s.Demand < 0 || math.IsNaN(s.Demand) || math.IsInf(s.Demand, 0) {
			errs = append(errs, fmt.Errorf("station %s: demand %v: must be a finite number, 0 or more", name, s.Demand))
		}
		if l := s.Law; l != nil && (math.IsNaN(l.One+l.Coef) || math.IsInf(l.One+l.Coef, 0)) {
			errs = append(errs, fmt.Errorf("station %s: load-dependent demand %v: must be finite", name, *l))
		}
		switch s.Kind {
		case Delay, Queue:
		case Multi:
			if s.Servers < 1 {
				errs = append(errs, fmt.Errorf("station %s: %d servers: a multi-server station needs at least 1", name, s.Servers))
			}
		default:
			errs = append(errs, fmt.Errorf("station %s: unknown kind %d", name, int(s.Kind)))
		}
	}
	if len(errs) == 0 && n.Think+n.totalDemand() == 0 {
		errs = append(errs, errors.New("the network has no think time and no demand: its throughput would be infinite"))
	}
	return errors.Join(errs...)
}

// LoadDependent says whether a station's demand follows a Law.
func (n Network) LoadDependent() bool {
	for _, s := range n.Stations {
		if s.Law != nil {
			return true
		}
	}
	return false
}

// AtLoad is the network with every Law's demand at k operations in the
// middle tier, and no laws.
func (n Network) AtLoad(k float64) Network {
	out := n
	out.Stations = make([]Station, len(n.Stations))
	for i, s := range n.Stations {
		if s.Law != nil {
			s.Demand = s.Law.At(k)
			s.Law = nil
		}
		out.Stations[i] = s
	}
	return out
}

func (n Network) totalDemand() float64 {
	d := 0.0
	for _, s := range n.Stations {
		d += s.Demand
	}
	return d
}

// Bound is the asymptotic upper bound on throughput with clients:
// min(N / (D + Z), 1 / Dmax), where D is the total demand and Dmax the
// largest demand per server of a station that queues. No solution of the
// network exceeds it.
func (n Network) Bound(clients int) float64 {
	x := float64(clients) / (n.totalDemand() + n.Think)
	for _, s := range n.Stations {
		x = min(x, s.capacity())
	}
	return x
}

// Bottleneck is the index of the station that limits throughput first
// (the smallest capacity), or -1 when only delays have demand.
func (n Network) Bottleneck() int {
	best, capa := -1, math.Inf(1)
	for i, s := range n.Stations {
		if c := s.capacity(); c < capa {
			best, capa = i, c
		}
	}
	return best
}

// Method is how a point was solved.
type Method string

const (
	Exact  Method = "exact MVA"
	Approx Method = "approximate MVA (Schweitzer-Bard, Seidmann)"
	// Pooled methods solved the stations by exact (or approximate) MVA
	// and the thread pool as a flow-equivalent server.
	ExactPooled  Method = "exact MVA, threads as a flow-equivalent server"
	ApproxPooled Method = "approximate MVA, threads as a flow-equivalent server"
	// LoadDependent methods solved the stations at each number of
	// operations in the middle tier with the demands of that load, and
	// the middle tier as a load-dependent flow-equivalent server.
	ExactLoadDependent  Method = "exact MVA at each load, the middle tier as a load-dependent flow-equivalent server"
	ApproxLoadDependent Method = "approximate MVA at each load, the middle tier as a load-dependent flow-equivalent server"
)

// Point is the network's solution at one number of clients.
type Point struct {
	Clients int
	// X is the throughput in operations per second; R the response time
	// in seconds, think time excluded.
	X, R     float64
	Method   Method
	Stations []StationPoint
	// Pool is the thread pool's share when the network has one:
	// Utilisation the busy share of its threads, Residence the wait for
	// a thread, Queue the operations waiting for one.
	Pool *StationPoint
}

// StationPoint is one station's share of a Point.
type StationPoint struct {
	// Utilisation is the busy fraction of one server (X·D/m); for a
	// delay it is the mean number of operations in it (X·D), which has
	// no bound.
	Utilisation float64
	// Residence is the time an operation spends there, waiting included,
	// in seconds; Queue the mean number of operations there.
	Residence, Queue float64
}
