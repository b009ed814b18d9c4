package threshold

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		expr string
		want Threshold
	}{
		{"p99<50ms", Threshold{Expr: "p99<50ms", Stat: P99, Cmp: Less, Limit: 50}},
		{"BuyStock.p90<20ms", Threshold{Expr: "BuyStock.p90<20ms", Operation: "BuyStock", Stat: P90, Cmp: Less, Limit: 20}},
		{"tps>1000", Threshold{Expr: "tps>1000", Stat: TPS, Cmp: Greater, Limit: 1000}},
		{"error_rate<0.1%", Threshold{Expr: "error_rate<0.1%", Stat: ErrorRate, Cmp: Less, Limit: 0.1}},
		{"metric>900", Threshold{Expr: "metric>900", Stat: Metric, Cmp: Greater, Limit: 900}},
		{" p99.9 <= 1.5s ", Threshold{Expr: "p99.9<=1.5s", Stat: P999, Cmp: LessEq, Limit: 1500}},
		{"BuyStock.p99.9<800us", Threshold{Expr: "BuyStock.p99.9<800us", Operation: "BuyStock", Stat: P999, Cmp: Less, Limit: 0.8}},
		{"max<250µs", Threshold{Expr: "max<250µs", Stat: Max, Cmp: Less, Limit: 0.25}},
		{"mean<2μs", Threshold{Expr: "mean<2μs", Stat: Mean, Cmp: Less, Limit: 0.002}},
		{"p(95)<200ms", Threshold{Expr: "p(95)<200ms", Stat: P95, Cmp: Less, Limit: 200}},
		{"QueryById.P50<1ms", Threshold{Expr: "QueryById.P50<1ms", Operation: "QueryById", Stat: P50, Cmp: Less, Limit: 1}},
		{"SellStock.tps>=12.5", Threshold{Expr: "SellStock.tps>=12.5", Operation: "SellStock", Stat: TPS, Cmp: GreaterEq, Limit: 12.5}},
		{"SellStock.error_rate<=0%", Threshold{Expr: "SellStock.error_rate<=0%", Operation: "SellStock", Stat: ErrorRate, Cmp: LessEq, Limit: 0}},
	} {
		got, err := Parse(tt.expr)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.expr, got, err, tt.want)
		}
	}
}

func TestParseRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		expr string
		want []string // the message says each
	}{
		{"p99", []string{`--threshold "p99"`, "no comparison", "<, <=, >, >="}},
		{"", []string{"no comparison"}},
		{"p99==50ms", []string{"comparison == not allowed", "allowed: <, <=, >, >="}},
		{"p99=50ms", []string{"comparison = not allowed"}},
		{"p99!=50ms", []string{"comparison != not allowed"}},
		{"p99<<50ms", []string{"comparison << not allowed"}},
		{"<50ms", []string{"no statistic before the comparison"}},
		{"p98<50ms", []string{`unknown statistic "p98"`, "allowed: p50, p90, p95, p99, p99.9, max, mean, tps, error_rate, metric"}},
		{"BuyStock.latency<5ms", []string{`unknown statistic "latency"`}},
		{"BuyStock<5ms", []string{`unknown statistic "BuyStock"`}},
		{".p99<5ms", []string{"no operation name before the dot"}},
		{"BuyStock.metric>5", []string{"metric is the workload's headline figure, not an operation's"}},
		{"p99<50", []string{"p99 is a latency: give the value a unit (ms, s, us or µs), e.g. p99<50ms"}},
		{"p99<50m", []string{`unit "m": a latency takes ms, s, us or µs`}},
		{"p99<50%", []string{`unit "%": a latency takes ms, s, us or µs`}},
		{"p99<ms", []string{`"ms" after the comparison is not a number with its unit`}},
		{"p99<", []string{`"" after the comparison is not a number`}},
		{"p99<-5ms", []string{"-5ms: a limit is 0 or more"}},
		{"p99<NaNms", []string{"is not a number"}},
		{"error_rate<0.1", []string{"error_rate is a share of the operations: write it in percent, e.g. error_rate<0.1%"}},
		{"error_rate<150%", []string{"error_rate 150%: a share is at most 100%"}},
		{"tps>1000/s", []string{`unit "/s": tps is operations finished per second of the steady state, a plain number, e.g. tps>1000`}},
		{"metric>900tpm", []string{`unit "tpm": metric is the workload's headline figure`}},
	} {
		_, err := Parse(tt.expr)
		if err == nil {
			t.Errorf("Parse(%q) accepted it", tt.expr)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q): message of several lines: %q", tt.expr, msg)
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("Parse(%q): %q does not say %q", tt.expr, msg, w)
			}
		}
	}
}

func TestHolds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		expr     string
		measured float64
		want     bool
	}{
		{"p99<50ms", 49.999, true}, {"p99<50ms", 50, false},
		{"p99<=50ms", 50, true}, {"p99<=50ms", 50.001, false},
		{"tps>1000", 1000, false}, {"tps>1000", 1000.1, true},
		{"tps>=1000", 1000, true}, {"tps>=1000", 999.9, false},
		{"p99<1s", 999, true}, {"p99<1s", 1001, false},
	} {
		th, err := Parse(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := th.Holds(tt.measured); got != tt.want {
			t.Errorf("%s with %v measured: holds %v, want %v", tt.expr, tt.measured, got, tt.want)
		}
	}
}

func TestValidateNamesTheWorkloadsOperations(t *testing.T) {
	t.Parallel()
	ops := []string{"CreateAccount", "BuyStock"}
	errs := Validate([]string{"p99<5ms", "BuyStock.p90<2ms", "NewOrder.p90<2ms", "p99"}, "stockonline", ops)
	if len(errs) != 2 {
		t.Fatalf("%d problems, want 2 (an unknown operation, a bad expression): %v", len(errs), errs)
	}
	if want := `--threshold "NewOrder.p90<2ms": stockonline has no operation NewOrder; its operations: CreateAccount, BuyStock`; errs[0].Error() != want {
		t.Errorf("got %q\nwant %q", errs[0], want)
	}
	if !strings.Contains(errs[1].Error(), "no comparison") {
		t.Errorf("second problem %q", errs[1])
	}
}
