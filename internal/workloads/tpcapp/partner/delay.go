package partner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// DelayKind is the shape of a partner's response-time distribution.
type DelayKind string

const (
	// NoDelay answers at once.
	NoDelay DelayKind = "none"
	// FixedDelay always takes Mean: the seed's emulators, a 500 ms sleep.
	FixedDelay DelayKind = "fixed"
	// UniformDelay draws uniformly from [Min, Max].
	UniformDelay DelayKind = "uniform"
	// NegExpDelay draws from a negative exponential of mean Mean, cut at
	// negExpTruncate × Mean so that one draw cannot stall a run.
	NegExpDelay DelayKind = "negexp"
)

// negExpTruncate cuts negative-exponential draws, as ECperf's kit cuts its
// cycle times at 5× the mean.
const negExpTruncate = 5

// Delay is how long a partner takes to answer: its network and its own
// processing, which the caller waits through.
type Delay struct {
	Kind     DelayKind
	Mean     time.Duration
	Min, Max time.Duration
}

// DefaultDelay is the seed's: every external call a fixed 500 ms.
var DefaultDelay = Delay{Kind: FixedDelay, Mean: 500 * time.Millisecond}

// ParseDelay reads a delay as the command line writes it: none (or 0),
// fixed:500ms, uniform:100ms-900ms, negexp:500ms.
func ParseDelay(s string) (Delay, error) {
	bad := func(why string) (Delay, error) {
		return Delay{}, fmt.Errorf("delay %q: %s; want none, fixed:DURATION, uniform:MIN-MAX or negexp:MEAN (e.g. fixed:500ms, uniform:100ms-900ms, negexp:500ms)", s, why)
	}
	if s == "none" || s == "0" || s == "" {
		return Delay{Kind: NoDelay}, nil
	}
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		return bad("no distribution named")
	}
	d := Delay{Kind: DelayKind(kind)}
	switch d.Kind {
	case FixedDelay, NegExpDelay:
		v, err := time.ParseDuration(arg)
		if err != nil || v < 0 {
			return bad("the duration is not a duration >= 0")
		}
		d.Mean = v
	case UniformDelay:
		lo, hi, ok := strings.Cut(arg, "-")
		if !ok {
			return bad("uniform needs MIN-MAX")
		}
		var err1, err2 error
		d.Min, err1 = time.ParseDuration(lo)
		d.Max, err2 = time.ParseDuration(hi)
		if err1 != nil || err2 != nil || d.Min < 0 || d.Max < d.Min {
			return bad("MIN and MAX must be durations with 0 <= MIN <= MAX")
		}
		d.Mean = (d.Min + d.Max) / 2
	default:
		return bad(fmt.Sprintf("unknown distribution %q", kind))
	}
	return d, nil
}

// String is the delay as ParseDelay reads it.
func (d Delay) String() string {
	switch d.Kind {
	case FixedDelay, NegExpDelay:
		return fmt.Sprintf("%s:%v", d.Kind, d.Mean)
	case UniformDelay:
		return fmt.Sprintf("uniform:%v-%v", d.Min, d.Max)
	}
	return string(NoDelay)
}

// Draw is one response time, from rng.
func (d Delay) Draw(rng *rand.Rand) time.Duration {
	switch d.Kind {
	case FixedDelay:
		return d.Mean
	case UniformDelay:
		return d.Min + time.Duration(rng.Int64N(int64(d.Max-d.Min)+1))
	case NegExpDelay:
		x := rng.ExpFloat64()
		return time.Duration(math.Min(x, negExpTruncate) * float64(d.Mean))
	}
	return 0
}

// Set and Type make a Delay a command-line flag.
func (d *Delay) Set(s string) error {
	v, err := ParseDelay(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func (d *Delay) Type() string { return "delay" }
