package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestParseMaxRegression(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want string
	}{
		{"5%", "metric=5%,tps=5%,p50=5%,p99=5%"},
		{"2.5", "metric=2.5%,tps=2.5%,p50=2.5%,p99=2.5%"},
		{"tps=5%,p99=10%", "tps=5%,p99=10%"},
		{"p99=10%, metric=0%", "metric=0%,p99=10%"},
	} {
		m, err := ParseMaxRegression(tt.in)
		if err != nil || m.String() != tt.want {
			t.Errorf("ParseMaxRegression(%q) = %v, %v; want %s", tt.in, m, err, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"lots", `--max-regression "lots": "lots" is not a share of 0% or more (examples: 5%, 0.5%); or give shares by figure, as tps=5%,p99=10% (figures: metric, tps, p50, p99)`},
		{"-5%", `"-5%" is not a share of 0% or more`},
		{"tpz=5%", `unknown figure "tpz"; figures: metric, tps, p50, p99`},
		{"tps=5%,tps=6%", "tps given twice"},
		{"tps=5%,p99", `"p99" is not FIGURE=SHARE, as tps=5%`},
		{"p99=", `p99: "" is not a share`},
	} {
		_, err := ParseMaxRegression(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseMaxRegression(%q): %v, want it to say %q", tt.in, err, tt.want)
		}
	}
}

// A figure regresses when it is worse than the limit and its interval
// does not hold zero; which way is worse depends on the figure.
func TestRegressionsNeedTheLimitAndTheInterval(t *testing.T) {
	t.Parallel()
	diff := func(pct, low, high float64, ci bool) Difference {
		return Difference{Delta: pct, Low: low, High: high, Percent: pct, HasCI: ci}
	}
	for _, tt := range []struct {
		name   string
		key    string
		higher bool
		d      Difference
		want   bool
	}{
		{"throughput down beyond the limit, significant", "tps", true, diff(-10, -15, -5, true), true},
		{"throughput down beyond the limit, interval holds 0", "tps", true, diff(-10, -25, 5, true), false},
		{"throughput down within the limit, significant", "tps", true, diff(-4, -6, -2, true), false},
		{"throughput up", "tps", true, diff(30, 20, 40, true), false},
		{"throughput down beyond the limit, no interval", "tps", true, diff(-10, 0, 0, false), true},
		{"p99 up beyond the limit, significant", "p99", false, diff(12, 2, 22, true), true},
		{"p99 down", "p99", false, diff(-12, -22, -2, true), false},
		{"p99 up, interval holds 0", "p99", false, diff(12, -2, 26, true), false},
		{"baseline of zero", "p99", false, Difference{Delta: 3, Percent: math.NaN(), HasCI: true, Low: 1, High: 5}, false},
		{"figure not bounded", "p50", false, diff(50, 40, 60, true), false},
	} {
		c := &Comparison{Groups: []Group{{Label: "A"}, {Label: "B"}},
			Figures: []Figure{{Name: tt.key, Key: tt.key, HigherIsBetter: tt.higher, Diffs: []Difference{{}, tt.d}}}}
		rs := c.Regressions(MaxRegression{"tps": 5, "p99": 5})
		got := len(rs) == 1 && rs[0].Regressed
		if got != tt.want {
			t.Errorf("%s: regressed %v (%+v), want %v", tt.name, got, rs, tt.want)
		}
		var out bytes.Buffer
		regressed := WriteRegressions(&out, MaxRegression{"tps": 5, "p99": 5}, rs)
		if (len(regressed) > 0) != tt.want || (tt.want && !strings.Contains(out.String(), "FAIL B "+tt.key)) {
			t.Errorf("%s: printed\n%s(regressed %v)", tt.name, out.String(), regressed)
		}
	}
}
