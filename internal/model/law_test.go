package model

import (
	"math"
	"strings"
	"testing"
)

func TestFitLawThroughTwoPoints(t *testing.T) {
	t.Parallel()
	// Falling: 0.108 ms alone, 0.083 ms at 10: D∞ + (D1 − D∞)/k through
	// both gives D1 − D∞ = 0.025 / 0.9 ms and D∞ = 0.083 − that/10.
	l, err := FitLaw(Falling, []LawPoint{{1, 0.108e-3}, {10, 0.083e-3}})
	if err != nil {
		t.Fatal(err)
	}
	span := 0.025e-3 / 0.9
	if !near(l.At(1), 0.108e-3, 1e-12) || !near(l.At(10), 0.083e-3, 1e-12) || !near(l.At(1e9), 0.083e-3-span/10, 1e-6) || l.Hold != 0 {
		t.Errorf("law %v: D(1) %v D(10) %v D(∞) %v hold %v", l, l.At(1), l.At(10), l.At(1e9), l.Hold)
	}
	// Rising: 0.012 ms alone, 0.452 ms at 7.89 operations: a slope of
	// 0.44/6.89 ms per operation.
	r, err := FitLaw(Rising, []LawPoint{{1, 0.012e-3}, {7.89, 0.452e-3}})
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.At(1), 0.012e-3, 1e-12) || !near(r.At(7.89), 0.452e-3, 1e-12) || !near(r.Coef, 0.44e-3/6.89, 1e-12) {
		t.Errorf("law %v: D(1) %v D(7.89) %v slope %v", r, r.At(1), r.At(7.89), r.Coef)
	}
	if s := r.String(); !strings.Contains(s, "0.012 ms + 0.064 ms·(k − 1)") {
		t.Errorf("rising law reads %q", s)
	}
}

func TestFitLawLeastSquares(t *testing.T) {
	t.Parallel()
	// Points exactly on D = 2 + 3/k (in ms) come back exactly; a
	// fourth point off the law moves it by the least-squares amount.
	var pts []LawPoint
	for _, k := range []float64{1, 2, 4} {
		pts = append(pts, LawPoint{k, (2 + 3/k) * 1e-3})
	}
	l, err := FitLaw(Falling, pts)
	if err != nil || !near(l.One, 5e-3, 1e-9) || !near(l.Coef, 3e-3, 1e-9) {
		t.Fatalf("law %+v, %v; want D1 = 5 ms, D1 − D∞ = 3 ms", l, err)
	}
	// Off the law: the fit passes through none of the points but the
	// residuals sum to zero (an intercept is fitted).
	pts = append(pts, LawPoint{8, 4e-3})
	l, _ = FitLaw(Falling, pts)
	sum := 0.0
	for _, p := range pts {
		sum += p.D - l.At(p.K)
	}
	if math.Abs(sum) > 1e-15 {
		t.Errorf("residuals sum to %v, want 0", sum)
	}
}

func TestFitLawRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pts  []LawPoint
		want string
	}{
		{[]LawPoint{{1, 1e-3}}, "two loads at least"},
		{[]LawPoint{{4, 1e-3}, {4.01, 2e-3}}, "all at 4.0 operations in service"},
		{[]LawPoint{{1, math.NaN()}, {4, 1e-3}}, "cannot be fitted"},
	} {
		if _, err := FitLaw(Falling, tt.pts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FitLaw(%v) = %v, want %q", tt.pts, err, tt.want)
		}
	}
}

func TestLawHeldWhereItWouldGoNegative(t *testing.T) {
	t.Parallel()
	// A CPU demand of 1 ms alone and 0.1 ms at 2: D∞ would be −0.8 ms.
	// Past the highest load measured the demand stays at its value there.
	l, err := FitLaw(Falling, []LawPoint{{1, 1e-3}, {2, 0.1e-3}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Hold != 2 || !near(l.At(50), 0.1e-3, 1e-9) || !strings.Contains(l.String(), "held beyond k = 2.0") {
		t.Errorf("law %v: hold %v, D(50) %v; want it held at 0.1 ms beyond 2", l, l.Hold, l.At(50))
	}
	// Spread over 4 app servers, a load of 8 is 2 at each.
	l.Spread = 4
	if !near(l.At(8), 0.1e-3, 1e-9) || !near(l.At(4), 1e-3, 1e-9) {
		t.Errorf("spread over 4: D(8) %v D(4) %v, want 0.1 ms and 1 ms", l.At(8), l.At(4))
	}
}
