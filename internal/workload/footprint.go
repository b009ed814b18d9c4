package workload

import (
	"fmt"
	"math"

	"github.com/tierbench/tierbench/internal/inputfile"
)

// Footprint is what a run's configuration implies in memory and on disk,
// estimated before anything runs.
type Footprint struct {
	// DBBytes is the database the load writes, measured on SQLite at
	// small scales and extrapolated.
	DBBytes int64
	// Terminals the driver holds (a grouped workload's come from its
	// scale); 0: --clients.
	Terminals int64
	// ScaleFlag is the flag that set the scale (ECperf's ir); "": scale.
	ScaleFlag string
}

// CheckScale refuses a scale above the workload's ceiling, saying what
// it would imply: flag is the flag that set it (scale, or ECperf's ir).
func CheckScale(flag string, scale, ceiling int, at func(scale int) Footprint) error {
	if scale <= ceiling {
		return nil
	}
	return fmt.Errorf("--%s %d implies %s; at most %d (%s)", flag, scale, at(scale).describe(), ceiling, at(ceiling).describe())
}

func (f Footprint) describe() string {
	s := "~" + inputfile.Size(f.DBBytes) + " of rows"
	if f.Terminals > 0 {
		s += fmt.Sprintf(" and %d terminals", f.Terminals)
	}
	return s
}

// PerUnit is n units of size bytes each, held at math.MaxInt64 rather
// than overflowing (a scale can be any int a flag takes).
func PerUnit(n int, size float64) int64 {
	v := float64(n) * size
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
