package placement

import (
	"fmt"
	"strings"
)

// Mode is where the run's database server runs beside tierbench: None
// (a database given by --db, not placed), Mixed or Dual.
type Mode string

const (
	// None: the run uses the database it is given; nothing is pinned.
	None Mode = ""
	// Mixed: one machine; tierbench and the private server share the
	// first half of the CPUs.
	Mixed Mode = "mixed"
	// Dual: two machines of the same size; tierbench on the first half
	// of the CPUs, the private server on the second.
	Dual Mode = "dual"
	// Hosts: the database, the tiers and the driver each on a host of
	// its own, a network namespace (internal/hosts); nothing pinned, the
	// server on every CPU this process may use.
	Hosts Mode = "hosts"
)

// Modes are the values of --placement other than none.
var Modes = []Mode{Mixed, Dual, Hosts}

// ModeNames lists the modes for messages: "mixed, dual".
func ModeNames() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// Plan is a placement worked out: the CPUs of tierbench's process (App;
// none: not pinned) and of the database server and every backend it
// forks (DB).
type Plan struct {
	Mode Mode
	App  CPUSet
	DB   CPUSet
}

// Split works out mode's plan on the CPUs this process may use: the first
// half of them is one machine, the second half another. On a single CPU
// mixed mode is that CPU alone; dual mode needs two.
func Split(mode Mode, cpus CPUSet) (Plan, error) {
	half := len(cpus) / 2
	switch mode {
	case Mixed:
		app := cpus[:max(half, 1)]
		return Plan{Mode: mode, App: app, DB: app}, nil
	case Dual:
		if half < 1 {
			return Plan{}, fmt.Errorf("--placement dual puts tierbench and PostgreSQL on CPUs of their own and needs 2 CPUs; this process may use %d (%s)", len(cpus), cpus)
		}
		return Plan{Mode: mode, App: cpus[:half], DB: cpus[half : 2*half]}, nil
	case Hosts:
		return Plan{Mode: mode, DB: cpus}, nil
	}
	return Plan{}, fmt.Errorf("--placement %q: allowed: %s (or leave it unset)", mode, ModeNames())
}
