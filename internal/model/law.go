package model

import (
	"errors"
	"fmt"
	"math"
)

// Form is the shape of a load-dependent demand.
type Form int

const (
	// Falling is D(k) = D∞ + (D1 − D∞)/k: a cost per operation that
	// falls with the load towards D∞ as a fixed part is shared (requests
	// batched, caches warm, fewer wake-ups from idle). The CPUs' law.
	Falling Form = iota
	// Rising is D(k) = D1 + s·(k − 1): a time per operation that grows
	// with the operations competing for something the product-form
	// stations do not hold (a lock, such as SQLite's one writer; the
	// scheduler's run queue; other processes' CPU). The latency's law.
	Rising
)

// Law is a demand that depends on the load: with k operations in the
// middle tier at once, an operation needs At(k) seconds of its station.
// Both forms are linear in one function of k (1/k or k), so two measured
// loads determine a law and more are fitted by least squares
// (docs/model.md, docs/decisions/0023-model-load-dependent.md).
type Law struct {
	Form Form
	// At one operation (k = 1) the demand is One; Coef is the
	// coefficient of the form's function of k: D1 − D∞ for Falling (so
	// D∞ = One − Coef), the slope s for Rising.
	One, Coef float64
	// Hold, when above 0, is the load past which the demand stays at
	// its value there: the highest load measured, set when the fitted
	// law would fall below zero demand beyond it.
	Hold float64
	// Spread, when above 1, is the app servers the load is spread over:
	// one of them sees k/Spread operations (Spread).
	Spread int
}

// At is the demand with k operations in the middle tier (k ≥ 1).
func (l Law) At(k float64) float64 {
	if l.Spread > 1 {
		k /= float64(l.Spread)
	}
	if l.Hold > 0 && k > l.Hold {
		k = l.Hold
	}
	k = max(k, 1)
	if l.Form == Rising {
		return max(l.One+l.Coef*(k-1), 0)
	}
	return max(l.One-l.Coef+l.Coef/k, 0)
}

// Scale is the law of a share f of the demand.
func (l Law) Scale(f float64) Law {
	l.One, l.Coef = l.One*f, l.Coef*f
	return l
}

// LawPoint is one measured demand: D seconds per operation with K
// operations in the middle tier on average.
type LawPoint struct{ K, D float64 }

// FitLaw fits a law of the form to the points: through both when there
// are two, by least squares when there are more. It needs two different
// loads.
func FitLaw(form Form, pts []LawPoint) (Law, error) {
	if len(pts) < 2 {
		return Law{}, errors.New("a load-dependent demand needs runs at two loads at least")
	}
	f := func(k float64) float64 {
		if form == Rising {
			return k - 1
		}
		return 1/k - 1
	}
	var sx, sy, sxx, sxy float64
	lo, hi := math.Inf(1), 0.0
	for _, p := range pts {
		if p.K < 1 || math.IsNaN(p.D) || math.IsInf(p.D, 0) || p.D < 0 {
			return Law{}, fmt.Errorf("a demand of %v s at %.2f operations in service: cannot be fitted", p.D, p.K)
		}
		x := f(p.K)
		sx, sy, sxx, sxy = sx+x, sy+p.D, sxx+x*x, sxy+x*p.D
		lo, hi = min(lo, p.K), max(hi, p.K)
	}
	n := float64(len(pts))
	den := n*sxx - sx*sx
	// Loads within 1% of one another: the law's slope would be noise.
	if hi < lo*1.01 || den <= 0 {
		return Law{}, fmt.Errorf("the runs are all at %.1f operations in service: a load-dependent demand needs two different loads", lo)
	}
	// D = One + Coef·f(k), with f(1) = 0.
	coef := (n*sxy - sx*sy) / den
	l := Law{Form: form, Coef: coef, One: (sy - coef*sx) / n}
	if (form == Falling && l.One-l.Coef < 0) || (form == Rising && l.Coef < 0) {
		l.Hold = hi
	}
	return l, nil
}

func (l Law) String() string {
	sign, c := "+", l.Coef
	if c < 0 {
		sign, c = "−", -c
	}
	var s string
	if l.Form == Rising {
		s = fmt.Sprintf("%s %s %s·(k − 1)", ms(l.One), sign, ms(c))
	} else {
		inf := l.One - l.Coef
		s = fmt.Sprintf("%s %s %s/k", ms(inf), sign, ms(c))
	}
	if l.Hold > 0 {
		s += fmt.Sprintf(", held beyond k = %.1f", l.Hold)
	}
	return s
}
