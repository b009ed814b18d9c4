// Package threshold parses the pass-or-fail conditions a run is judged by
// (--threshold p99<50ms, BuyStock.p90<20ms, tps>1000, error_rate<0.1%,
// metric>900) and decides whether a measured figure meets one.
//
// It knows the grammar and the units only: what a figure measured is, the
// result decides. threshold depends on the standard library alone.
package threshold

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Stat is the figure a threshold bounds.
type Stat string

// The statistics a threshold can bound. Latencies are end-to-end as the
// client saw them, of the operations meant to start in the steady state;
// error_rate is the failures' share of them; tps and metric count the
// operations that finished in it.
const (
	Mean      Stat = "mean"
	P50       Stat = "p50"
	P90       Stat = "p90"
	P95       Stat = "p95"
	P99       Stat = "p99"
	P999      Stat = "p99.9"
	Max       Stat = "max"
	TPS       Stat = "tps"
	ErrorRate Stat = "error_rate"
	Metric    Stat = "metric"
)

// Stats are the allowed statistics, in the order help lists them.
var Stats = []Stat{P50, P90, P95, P99, P999, Max, Mean, TPS, ErrorRate, Metric}

// Latency reports whether s is a latency, written with a time unit.
func (s Stat) Latency() bool {
	switch s {
	case Mean, P50, P90, P95, P99, P999, Max:
		return true
	}
	return false
}

// Unit is how a measured value of s is written: ms for latencies, % for
// the error rate, /s for throughput; the metric's unit is its own name.
func (s Stat) Unit() string {
	switch {
	case s.Latency():
		return "ms"
	case s == ErrorRate:
		return "%"
	case s == TPS:
		return "/s"
	}
	return ""
}

// Cmp is a comparison.
type Cmp string

// The comparisons allowed; equality is left out, as no measured figure
// meets one exactly but by chance.
const (
	Less      Cmp = "<"
	LessEq    Cmp = "<="
	Greater   Cmp = ">"
	GreaterEq Cmp = ">="
)

// Threshold is one parsed condition: Operation's Stat compared with Limit.
type Threshold struct {
	// Expr is the condition as written, spaces removed.
	Expr string
	// Operation names one operation; empty: all of them together.
	Operation string
	Stat      Stat
	Cmp       Cmp
	// Limit is in the stat's Unit: milliseconds for a latency, percent for
	// the error rate.
	Limit float64
}

// Grammar says what a threshold looks like, for messages and help.
const Grammar = "[OPERATION.]STAT OP VALUE, e.g. p99<50ms, BuyStock.p90<20ms, tps>1000, error_rate<0.1%, metric>900"

// StatNames lists the allowed statistics for messages and help.
func StatNames() string {
	names := make([]string, len(Stats))
	for i, s := range Stats {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Holds reports whether measured meets t.
func (t Threshold) Holds(measured float64) bool {
	switch t.Cmp {
	case Less:
		return measured < t.Limit
	case LessEq:
		return measured <= t.Limit
	case Greater:
		return measured > t.Limit
	case GreaterEq:
		return measured >= t.Limit
	}
	return false
}

// Parse reads one threshold. Its refusal names the flag, the expression,
// what is wrong and what is allowed.
func Parse(expr string) (Threshold, error) {
	s := strings.Join(strings.Fields(expr), "")
	fail := func(format string, args ...any) (Threshold, error) {
		return Threshold{}, fmt.Errorf("--threshold %q: %s", expr, fmt.Sprintf(format, args...))
	}
	at := strings.IndexAny(s, "<>=!")
	if at < 0 {
		return fail("no comparison; write %s (comparisons: <, <=, >, >=)", Grammar)
	}
	lhs, rest := s[:at], s[at:]
	var c Cmp
	for _, cand := range []Cmp{LessEq, GreaterEq, Less, Greater} {
		if strings.HasPrefix(rest, string(cand)) {
			c = cand
			break
		}
	}
	op := rest[:len(rest)-len(strings.TrimLeft(rest, "<>=!"))]
	if c == "" || len(op) != len(c) {
		return fail("comparison %s not allowed; allowed: <, <=, >, >=", op)
	}
	operation, stat, err := parseLHS(lhs)
	if err != nil {
		return fail("%v", err)
	}
	limit, err := parseValue(stat, rest[len(c):])
	if err != nil {
		return fail("%v", err)
	}
	return Threshold{Expr: s, Operation: operation, Stat: stat, Cmp: c, Limit: limit}, nil
}

// parseLHS reads [OPERATION.]STAT. A statistic may hold a dot itself
// (p99.9), so the operation ends at the first dot that leaves one.
func parseLHS(lhs string) (operation string, stat Stat, err error) {
	if lhs == "" {
		return "", "", fmt.Errorf("no statistic before the comparison; write %s", Grammar)
	}
	if s, ok := statNamed(lhs); ok {
		return "", s, nil
	}
	for i := 0; i < len(lhs); i++ {
		if lhs[i] != '.' {
			continue
		}
		if s, ok := statNamed(lhs[i+1:]); ok {
			if i == 0 {
				return "", "", fmt.Errorf("no operation name before the dot; write %s.OPERATION or %s alone", s, s)
			}
			if s == Metric {
				return "", "", fmt.Errorf("metric is the workload's headline figure, not an operation's: write metric>VALUE, or bound %s.tps", lhs[:i])
			}
			return lhs[:i], s, nil
		}
	}
	name := lhs
	if i := strings.IndexByte(lhs, '.'); i >= 0 {
		name = lhs[i+1:]
	}
	return "", "", fmt.Errorf("unknown statistic %q; allowed: %s (after OPERATION. for one operation)", name, StatNames())
}

// statNamed finds the statistic a name spells, k6's p(95) included.
func statNamed(name string) (Stat, bool) {
	name = strings.ToLower(name)
	if inner, ok := strings.CutPrefix(name, "p("); ok && strings.HasSuffix(inner, ")") {
		name = "p" + strings.TrimSuffix(inner, ")")
	}
	s := Stat(name)
	return s, slices.Contains(Stats, s)
}

// timeUnits convert a latency's unit to milliseconds; µ is written both
// as the micro sign and the Greek letter.
var timeUnits = map[string]float64{"ms": 1, "s": 1000, "us": 0.001, "\u00b5s": 0.001, "\u03bcs": 0.001}

// parseValue reads the limit and its unit, which the statistic decides.
func parseValue(stat Stat, v string) (float64, error) {
	num := strings.TrimRightFunc(v, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.')
	})
	unit := v[len(num):]
	x, err := strconv.ParseFloat(num, 64)
	if v == "" || err != nil || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%q after the comparison is not a number with its unit; write %s", v, Grammar)
	}
	if x < 0 {
		return 0, fmt.Errorf("%s: a limit is 0 or more", v)
	}
	switch {
	case stat.Latency():
		k, ok := timeUnits[unit]
		if !ok {
			if unit == "" {
				return 0, fmt.Errorf("%s is a latency: give the value a unit (ms, s, us or µs), e.g. %s<%sms", stat, stat, num)
			}
			return 0, fmt.Errorf("unit %q: a latency takes ms, s, us or µs", unit)
		}
		return x * k, nil
	case stat == ErrorRate:
		if unit != "%" {
			return 0, fmt.Errorf("error_rate is a share of the operations: write it in percent, e.g. error_rate<%s%%", num)
		}
		if x > 100 {
			return 0, fmt.Errorf("error_rate %s%%: a share is at most 100%%", num)
		}
		return x, nil
	case unit != "":
		what := "operations finished per second of the steady state"
		if stat == Metric {
			what = "the workload's headline figure in its own unit (tierbench workloads names it)"
		}
		return 0, fmt.Errorf("unit %q: %s is %s, a plain number, e.g. %s>%s", unit, stat, what, stat, num)
	}
	return x, nil
}

// Validate parses every expression and checks that each operation named
// is one of operations (the workload's), returning every problem.
func Validate(exprs []string, workload string, operations []string) []error {
	var errs []error
	for _, e := range exprs {
		t, err := Parse(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if t.Operation != "" && !slices.Contains(operations, t.Operation) {
			errs = append(errs, fmt.Errorf("--threshold %q: %s has no operation %s; its operations: %s", e, workload, t.Operation, strings.Join(operations, ", ")))
		}
	}
	return errs
}
