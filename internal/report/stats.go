package report

import (
	"math"
)

// Estimate is a figure with its standard error: from a run's batches of
// steady-state seconds or from repetitions of a configuration. DF are the
// degrees of freedom of its standard error; zero when it has none (a run
// too short, a result without histograms).
type Estimate struct {
	Value, SE, DF float64
}

// HasSE reports whether the estimate carries an uncertainty.
func (e Estimate) HasSE() bool { return e.DF > 0 && !math.IsNaN(e.SE) }

// Difference is b − a with its 95% confidence interval (Welch's t: the
// two estimates' variances need not be equal).
type Difference struct {
	Delta, Low, High float64
	// Percent is Delta relative to a's value; NaN when a's is zero.
	Percent float64
	// HasCI: both estimates carry a standard error.
	HasCI bool
}

// Significant: the interval excludes zero.
func (d Difference) Significant() bool { return d.HasCI && (d.Low > 0 || d.High < 0) }

// Confidence is the level of every interval the reports show.
const Confidence = 0.95

func difference(a, b Estimate) Difference {
	d := Difference{Delta: b.Value - a.Value, Percent: math.NaN()}
	if a.Value != 0 {
		d.Percent = 100 * d.Delta / math.Abs(a.Value)
	}
	if !a.HasSE() || !b.HasSE() {
		return d
	}
	d.HasCI = true
	va, vb := a.SE*a.SE, b.SE*b.SE
	se := math.Sqrt(va + vb)
	if se == 0 {
		d.Low, d.High = d.Delta, d.Delta
		return d
	}
	// Welch–Satterthwaite degrees of freedom.
	df := (va + vb) * (va + vb) / (va*va/a.DF + vb*vb/b.DF)
	half := studentT(1-(1-Confidence)/2, df) * se
	d.Low, d.High = d.Delta-half, d.Delta+half
	return d
}

// interval is an estimate's own 95% confidence interval.
func interval(e Estimate) (low, high float64, ok bool) {
	if !e.HasSE() {
		return 0, 0, false
	}
	half := studentT(1-(1-Confidence)/2, e.DF) * e.SE
	return e.Value - half, e.Value + half, true
}

// fromSamples is the mean of xs with its standard error, treating the xs
// as independent: repetitions of a configuration, or batch means.
func fromSamples(xs []float64) Estimate {
	n := float64(len(xs))
	if len(xs) == 0 {
		return Estimate{Value: math.NaN()}
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) < 2 {
		return Estimate{Value: mean}
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return Estimate{Value: mean, SE: math.Sqrt(ss / (n - 1) / n), DF: n - 1}
}

// Batching says how a run's steady-state seconds were cut into batches.
type Batching struct {
	Batches, Size int
}

// batchesFor cuts n seconds into 10 to 30 batches of equal length, the
// usual range for batch means: enough batches for the t interval to be
// tight, long enough that neighbouring batches' means are nearly
// independent although neighbouring seconds are not. A steady state of
// fewer than 20 seconds cannot make 10 batches of 2: it gets one-second
// batches, an interval that takes its seconds as independent; fewer than
// 2 seconds, none.
func batchesFor(n int) Batching {
	switch {
	case n < 2:
		return Batching{}
	case n < 20:
		return Batching{Batches: n, Size: 1}
	}
	b := min(max(n/5, 10), 30)
	return Batching{Batches: b, Size: n / b}
}

// batchMeans is the standard error of the mean of a series correlated in
// time, from the means of its batches; the seconds past the last whole
// batch are left out of the spread (not of the centre the caller uses).
func batchMeans(xs []float64) (Estimate, Batching) {
	bt := batchesFor(len(xs))
	if bt.Batches == 0 {
		return Estimate{Value: math.NaN()}, bt
	}
	means := make([]float64, bt.Batches)
	for i := range means {
		s := 0.0
		for _, x := range xs[i*bt.Size : (i+1)*bt.Size] {
			s += x
		}
		means[i] = s / float64(bt.Size)
	}
	return fromSamples(means), bt
}

// studentT is the p-quantile of Student's t distribution with df degrees
// of freedom (df may be fractional, as Welch's are), by bisection on its
// distribution function.
func studentT(p, df float64) float64 {
	if df <= 0 || math.IsNaN(df) {
		return math.NaN()
	}
	if math.IsInf(df, 1) || df > 1e7 {
		df = 1e7
	}
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < p {
		hi *= 2
		if hi > 1e12 {
			return math.Inf(1)
		}
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// tCDF is Student's t distribution function for t ≥ 0.
func tCDF(t, df float64) float64 {
	x := df / (df + t*t)
	return 1 - 0.5*incompleteBeta(df/2, 0.5, x)
}

// incompleteBeta is the regularized incomplete beta function I_x(a, b),
// by its continued fraction (Lentz's method).
func incompleteBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	lga, _ := math.Lgamma(a)
	lgb, _ := math.Lgamma(b)
	lgab, _ := math.Lgamma(a + b)
	front := math.Exp(lgab - lga - lgb + a*math.Log(x) + b*math.Log(1-x))
	// The fraction converges fast only on this side of the mean.
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaFraction(b, a, 1-x)/b
	}
	return front * betaFraction(a, b, x) / a
}

func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		for _, num := range []float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			f *= d * c
		}
		if math.Abs(d*c-1) < eps {
			break
		}
	}
	return f
}
