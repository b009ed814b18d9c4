package report

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/result"
)

func TestStudentTQuantiles(t *testing.T) {
	t.Parallel()
	// Two-sided 95% critical values from the standard tables.
	for _, tc := range []struct{ df, want float64 }{{1, 12.7062}, {2, 4.3027}, {10, 2.2281}, {30, 2.0423}, {1e9, 1.9600}} {
		if got := studentT(0.975, tc.df); math.Abs(got-tc.want) > 5e-4 {
			t.Errorf("t(0.975, %v) = %.4f, want %.4f", tc.df, got, tc.want)
		}
	}
}

func TestBatching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		want Batching
	}{{1, Batching{}}, {5, Batching{5, 1}}, {19, Batching{19, 1}}, {20, Batching{10, 2}}, {60, Batching{12, 5}}, {3600, Batching{30, 120}}} {
		if got := batchesFor(tc.n); got != tc.want {
			t.Errorf("batchesFor(%d) = %+v, want %+v", tc.n, got, tc.want)
		}
	}
}

// seriesRun is a 62-second run (1 s ramps) whose steady-state seconds
// complete the given numbers of operations.
func seriesRun(name string, clients int, steady []float64) *Run {
	r := &result.Result{Workload: "demo", Config: config.Run{Clients: clients, Duration: config.Duration(time.Duration(len(steady)+2) * time.Second),
		RampUp: config.Duration(time.Second), RampDown: config.Duration(time.Second)}}
	r.Timeseries = append(r.Timeseries, result.Point{T: 1, Ops: 1})
	sum := 0.0
	for i, x := range steady {
		r.Timeseries = append(r.Timeseries, result.Point{T: i + 2, Ops: int64(x)})
		sum += x
	}
	r.Timeseries = append(r.Timeseries, result.Point{T: len(steady) + 2, Ops: 1})
	mean := sum / float64(len(steady))
	r.Summary.ThroughputPerS, r.Summary.Metric = mean, result.Metric{Name: "TPS", Value: mean}
	r.OperationOrder = []string{}
	return &Run{Path: name + ".json", Name: name, Result: r}
}

// noisy is n seconds around mean, normally spread with sd, from a fixed
// seed.
func noisy(seed uint64, n int, mean, sd float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = math.Round(mean + sd*rng.NormFloat64())
	}
	return xs
}

// The throughput interval comes from batch means of the steady-state
// seconds: 60 seconds make 12 batches of 5. Two runs 30% apart differ
// significantly; two runs 1% apart, with seconds spread by 10%, do not.
func TestThroughputDifferenceInterval(t *testing.T) {
	t.Parallel()
	base := seriesRun("base", 1, noisy(1, 60, 1000, 100))
	for _, tc := range []struct {
		name        string
		other       []float64
		significant bool
	}{
		{"clearly faster", noisy(2, 60, 1300, 100), true},
		{"within the noise", noisy(3, 60, 1010, 100), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := seriesRun("other", 2, tc.other)
			c := Compare(Groups([]*Run{base, other}))
			if len(c.Groups) != 2 {
				t.Fatalf("%d groups, want 2", len(c.Groups))
			}
			d := c.Figures[1].Diffs[1]
			a, b := c.Figures[1].Estimates[0], c.Figures[1].Estimates[1]
			// The expected interval, computed here from its definition.
			batchSE := func(xs []float64) float64 {
				var means []float64
				for i := 0; i < 12; i++ {
					s := 0.0
					for _, x := range xs[i*5 : i*5+5] {
						s += x
					}
					means = append(means, s/5)
				}
				return fromSamples(means).SE
			}
			sa, sb := batchSE(noisy(1, 60, 1000, 100)), batchSE(tc.other)
			if math.Abs(a.SE-sa) > 1e-9 || math.Abs(b.SE-sb) > 1e-9 || a.DF != 11 || b.DF != 11 {
				t.Errorf("standard errors %v (df %v), %v (df %v); want %v, %v with 11 df", a.SE, a.DF, b.SE, b.DF, sa, sb)
			}
			se := math.Sqrt(sa*sa + sb*sb)
			df := math.Pow(se, 4) / (math.Pow(sa, 4)/11 + math.Pow(sb, 4)/11)
			half := studentT(0.975, df) * se
			if math.Abs(d.Delta-(b.Value-a.Value)) > 1e-9 || math.Abs(d.High-d.Low-2*half) > 1e-6 {
				t.Errorf("difference %+v, want %v ± %v", d, b.Value-a.Value, half)
			}
			if d.Significant() != tc.significant {
				t.Errorf("difference %s: significant %v, want %v", DiffText(d), d.Significant(), tc.significant)
			}
			if got := strings.Contains(DiffText(d), "not significant"); got == tc.significant {
				t.Errorf("DiffText %q", DiffText(d))
			}
		})
	}
}

// Results of one configuration are repetitions: their spread gives the
// interval (a t interval on n-1 degrees of freedom), whatever each run's
// seconds say.
func TestRepetitionsMakeTheInterval(t *testing.T) {
	t.Parallel()
	var runs []*Run
	for i, mean := range []float64{1000, 1010, 990} {
		runs = append(runs, seriesRun("a"+string(rune('1'+i)), 1, noisy(uint64(i), 60, mean, 1)))
	}
	for i, mean := range []float64{1100, 1090, 1110} {
		runs = append(runs, seriesRun("b"+string(rune('1'+i)), 2, noisy(uint64(10+i), 60, mean, 1)))
	}
	groups := Groups(runs)
	if len(groups) != 2 || len(groups[0].Runs) != 3 || len(groups[1].Runs) != 3 {
		t.Fatalf("groups %v, want two of three", groups)
	}
	c := Compare(groups)
	e := c.Figures[1].Estimates[0]
	var xs []float64
	for _, r := range groups[0].Runs {
		xs = append(xs, r.Result.Summary.ThroughputPerS)
	}
	want := fromSamples(xs)
	if e != want || e.DF != 2 {
		t.Errorf("group A's estimate %+v, want %+v on 2 df", e, want)
	}
	if d := c.Figures[1].Diffs[1]; !d.Significant() || d.Low < 50 || d.High > 150 {
		t.Errorf("B − A = %s, want about +100, significant", DiffText(d))
	}
	if !strings.Contains(c.Methods[0], "3 repetitions") {
		t.Errorf("method %q", c.Methods[0])
	}
}

// A group's interval of a positive figure stops at 0: a latency's t
// interval of a wide spread would start below it. Differences, which can
// be negative, keep theirs.
func TestComparisonIntervalsOfPositiveFiguresStopAtZero(t *testing.T) {
	t.Parallel()
	wide := Estimate{Value: 1, SE: 2, DF: 3}
	c := &Comparison{Groups: []Group{{Label: "A"}, {Label: "B"}}, Figures: []Figure{{Name: "p99 ms",
		Estimates: []Estimate{wide, wide}, Diffs: []Difference{{}, difference(wide, Estimate{Value: 1.5, SE: 2, DF: 3})}}}}
	tables := comparisonTables(c)
	if got := tables[0].Rows[0][1]; got != "1.00 ms [0 ms, 7.36 ms]" {
		t.Errorf("A's p99 %q, want 1.00 ms [0 ms, 7.36 ms]", got)
	}
	if got := tables[1].Rows[0][1]; !strings.HasPrefix(got, "+500 µs [-") {
		t.Errorf("B − A %q: the difference's interval must keep its negative end", got)
	}
}
