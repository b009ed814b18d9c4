package result

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

// judge applies a workload's validity rules to the steady state: one rule
// per bounded operation and one per share of the mix.
func judge(v *workload.Validity, snap metrics.Snapshot) *Validity {
	byName := make(map[string]metrics.OpStats, len(snap.Ops))
	for _, o := range snap.Ops {
		byName[o.Name] = o
	}
	out := &Validity{Passed: true, ResponseTimesPassed: true, MixPassed: true}
	kind := &out.ResponseTimesPassed
	add := func(c workload.Check) {
		out.Rules = append(out.Rules, c)
		out.Passed = out.Passed && c.Passed
		*kind = *kind && c.Passed
	}
	for _, rt := range v.ResponseTimes {
		for _, name := range rt.Ops {
			o := byName[name]
			// Failed operations are judged too: a client waited for them
			// as for any other, and leaving them out would let a system
			// that times out pass.
			all := metrics.NewHistogram()
			all.Merge(o.Latency)
			all.Merge(o.ErrorLatency)
			q := all.Quantile(rt.Quantile)
			label := fmt.Sprintf("%s p%g ≤ %v", name, rt.Quantile*100, rt.Max)
			n := o.Count() + o.Failed()
			switch {
			case n == 0:
				add(workload.Check{Name: label, Passed: false, Detail: "none ran in the steady state"})
			case o.Failed() > 0:
				add(workload.Check{Name: label, Passed: q <= rt.Max,
					Detail: fmt.Sprintf("%v over %d (%d of them failed)", q.Round(time.Millisecond/10), n, o.Failed())})
			default:
				add(workload.Check{Name: label, Passed: q <= rt.Max,
					Detail: fmt.Sprintf("%v over %d", q.Round(time.Millisecond/10), n)})
			}
		}
	}
	kind = &out.MixPassed
	if len(v.Mix) > 0 {
		count := func(s workload.Share) int64 {
			var n int64
			for _, op := range s.Ops {
				n += byName[op].Count()
			}
			return n
		}
		var total int64
		for _, s := range v.Mix {
			total += count(s)
		}
		var want float64
		for _, s := range v.Mix {
			want += s.Percent
		}
		for _, s := range v.Mix {
			target := s.Percent / want * 100
			got := 0.0
			if total > 0 {
				got = float64(count(s)) / float64(total) * 100
			}
			dev := (got - target) / target
			// The spread chance alone gives a share drawn total times,
			// relative to the target. A run too short for it to be
			// within the tolerance cannot tell a wrong mix from luck: a
			// miss that chance explains (within 3σ) is not judged (and
			// does not fail the run), saying how many operations judging
			// it needs; a miss beyond that fails as in a long run.
			p := target / 100
			spread := math.Inf(1)
			if total > 0 {
				spread = math.Sqrt(p*(1-p)/float64(total)) / p
			}
			passed := total > 0 && math.Abs(dev) <= v.MixTolerance
			detail := fmt.Sprintf("%.2f%% of %d (%+.1f%% relative; chance alone: ±%.1f%% at 1σ)", got, total, dev*100, spread*100)
			if total > 0 && spread > v.MixTolerance && !passed && math.Abs(dev) <= 3*spread {
				need := int64(math.Ceil((1 - p) / (p * v.MixTolerance * v.MixTolerance)))
				detail = fmt.Sprintf("not judged: %.2f%% of %d (%+.1f%% relative), but chance alone spreads ±%.1f%% at 1σ, more than the tolerance; judging it needs %d operations", got, total, dev*100, spread*100, need)
				passed = true
			}
			add(workload.Check{
				// The tolerance is relative: the name gives the range it
				// allows, so 21.28% against "20% ± 5%" reads as outside.
				Name: fmt.Sprintf("mix %s %.0f%% ± %.0f%% relative (%.4g–%.4g%%)", strings.Join(s.Ops, "+"), target, v.MixTolerance*100,
					target*(1-v.MixTolerance), target*(1+v.MixTolerance)),
				Passed: passed,
				Detail: detail,
			})
		}
	}
	return out
}

// Verdict is the run's outcome in a few words for a progress line:
// "passed", or what failed — checks, the validity rules by name, an
// interruption.
func (r *Result) Verdict() string {
	var failed []string
	var checks []string
	for _, c := range r.Checks {
		if !c.Passed {
			checks = append(checks, c.Name)
		}
	}
	if len(checks) > 0 {
		failed = append(failed, "CHECKS FAILED ("+strings.Join(checks, ", ")+")")
	}
	if r.Validity != nil && !r.Validity.Passed {
		var rules []string
		for _, c := range r.Validity.Rules {
			if !c.Passed {
				rules = append(rules, c.Name)
			}
		}
		failed = append(failed, "INVALID ("+strings.Join(rules, ", ")+")")
	}
	if t := r.ThresholdsFailed(); len(t) > 0 {
		failed = append(failed, "THRESHOLDS FAILED ("+strings.Join(t, ", ")+")")
	}
	if r.TooManyErrors() {
		failed = append(failed, fmt.Sprintf("TOO MANY ERRORS (%.3g%% of operations failed; --max-error-rate %g%%)", r.Summary.ErrorRatePct, r.Summary.MaxErrorRatePct))
	}
	if f := r.Summary.Failure; f != nil {
		failed = append(failed, fmt.Sprintf("FAILED during %s (%s)", f.Phase, f.Error))
	} else if r.Summary.Interrupted {
		failed = append(failed, "INTERRUPTED")
	}
	if len(failed) == 0 {
		return "passed"
	}
	return strings.Join(failed, "; ")
}
