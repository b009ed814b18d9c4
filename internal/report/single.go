package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/result"
)

// spectrumPerDecade is how many points a spectrum draws per decade of
// 1/(1-p): smooth at the page's width, a few hundred points at most.
const spectrumPerDecade = 20

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
func count(n int64) string { return strconv.FormatInt(n, 10) }

// ms is a histogram's value in milliseconds as the tables print it:
// exact, since histograms hold whole microseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func passedWord(ok bool) string {
	if ok {
		return "passed"
	}
	return "FAILED"
}

func keyValues(rows ...[2]string) table {
	t := table{Class: "facts", Header: []string{"", ""}}
	for _, r := range rows {
		if r[1] != "" {
			t.Rows = append(t.Rows, []string{r[0], r[1]})
		}
	}
	return t
}

// provenance is the run's who, what, where and when.
func provenance(r *result.Result) section {
	c, e := r.Config, r.Environment
	load := fmt.Sprintf("%d iterations", c.Iterations)
	if c.Duration > 0 {
		load = "duration " + time.Duration(c.Duration).String()
	}
	if c.RampUp > 0 || c.RampDown > 0 {
		load += fmt.Sprintf(", ramp-up %v, ramp-down %v", time.Duration(c.RampUp), time.Duration(c.RampDown))
	}
	var modules []string
	for k, v := range e.Modules {
		modules = append(modules, k+" "+v)
	}
	slices.Sort(modules)
	placement := ""
	if e.Placement != "" {
		placement = fmt.Sprintf("%s: tierbench on CPUs %s, database on CPUs %s", e.Placement, e.AppCPUs, e.DBCPUs)
	}
	terminals := []string{}
	for _, g := range r.Terminals {
		terminals = append(terminals, fmt.Sprintf("%d %s", g.Count, g.Group))
	}
	container := ""
	if c.Persistence != "" {
		container = fmt.Sprintf("persistence %s, commit option %v, cache %v, pool %v", c.Persistence, c.CommitOption, c.Cache, c.Pool)
		if c.Concurrency != "" {
			container += fmt.Sprintf(", concurrency %v", c.Concurrency)
		}
	}
	cfg, _ := json.MarshalIndent(c, "", "  ")
	return section{ID: "provenance", Title: "Run", Tables: []table{keyValues(
		[2]string{"workload", r.Workload},
		[2]string{"setup", r.Setup},
		[2]string{"database", e.DB},
		[2]string{"site", e.Target},
		[2]string{"isolation", e.Isolation},
		[2]string{"terminals", strings.Join(terminals, ", ")},
		[2]string{"server threads", strconv.Itoa(c.ServerThreads)},
		[2]string{"load", load},
		[2]string{"container", container},
		[2]string{"seed", strconv.FormatUint(r.Seed, 10)},
		[2]string{"started", r.StartedAt.UTC().Format(time.RFC3339)},
		[2]string{"tierbench", r.TierbenchVersion},
		[2]string{"go", e.Go},
		[2]string{"host", fmt.Sprintf("%s (%s/%s, %d CPUs)", e.Host, e.OS, e.Arch, e.CPUs)},
		[2]string{"placement", placement},
		[2]string{"modules", strings.Join(modules, ", ")},
	)}, Pre: string(cfg), PreTitle: "the full configuration"}
}

// summarySection is the verdict, the headline figures, the checks and
// the validity rules.
func summarySection(r *result.Result) section {
	s := r.Summary
	verdict := "passed"
	if !s.Passed {
		verdict = "FAILED: " + r.Verdict()
	}
	facts := keyValues(
		[2]string{"verdict", verdict},
		[2]string{s.Metric.Name, rate(s.Metric.Value)},
		[2]string{"throughput (per s)", rate(s.ThroughputPerS)},
		[2]string{"operations (steady state)", grouped(s.Operations)},
		[2]string{"completed in it", grouped(s.Completed)},
		[2]string{"errors", grouped(s.Errors)},
		[2]string{"in doubt", grouped(s.InDoubt)},
		[2]string{"business exceptions", grouped(s.BusinessExceptions)},
		[2]string{"retries", grouped(s.Retries)},
		[2]string{"aborts (deadlock, lock timeout, serialization)", fmt.Sprintf("%s, %s, %s", grouped(s.Aborts.Deadlock), grouped(s.Aborts.LockTimeout), grouped(s.Aborts.Serialization))},
		[2]string{"error rate", fmt.Sprintf("%s%% (limit %s%%)", num(s.ErrorRatePct), num(s.MaxErrorRatePct))},
		[2]string{"measured window", num(s.ElapsedS) + " s of " + num(s.RunS) + " s"},
		[2]string{"latency of all operations", fmt.Sprintf("mean %s, p50 %s, p90 %s, p99 %s, max %s", latency(r.TotalLatency.Mean), latency(r.TotalLatency.P50), latency(r.TotalLatency.P90), latency(r.TotalLatency.P99), latency(r.TotalLatency.Max))},
		[2]string{"interrupted", s.InterruptedDuring},
		[2]string{"unchecked", s.Unchecked},
	)
	sec := section{ID: "summary", Title: "Summary", Tables: []table{facts}}
	if f := s.Failure; f != nil {
		sec.Notes = append(sec.Notes, fmt.Sprintf("The run failed during %s: %s (%s)", f.Phase, f.Error, f.Effect))
	}
	checks := table{Class: "checks", Header: []string{"consistency check", "outcome", "detail"}}
	for _, c := range r.Checks {
		checks.Rows = append(checks.Rows, []string{c.Name, passedWord(c.Passed), c.Detail})
	}
	if len(checks.Rows) > 0 {
		sec.Tables = append(sec.Tables, checks)
	}
	thresholds := table{Class: "checks", Header: []string{"threshold", "outcome", "detail"}}
	for _, c := range r.ThresholdVerdicts() {
		thresholds.Rows = append(thresholds.Rows, []string{c.Name, passedWord(c.Passed), c.Detail})
	}
	if len(thresholds.Rows) > 0 {
		sec.Tables = append(sec.Tables, thresholds)
	}
	failures := table{Class: "failures", Header: []string{"operation", "failed with", "count", "first message"}}
	for _, name := range r.OperationOrder {
		f := r.Operations[name].Failures
		for _, class := range slices.Sorted(maps.Keys(f)) {
			failures.Rows = append(failures.Rows, []string{name, class, grouped(f[class].Count), f[class].Sample})
		}
	}
	if len(failures.Rows) > 0 {
		sec.Tables = append(sec.Tables, failures)
	}
	if v := r.Validity; v != nil {
		rules := table{Class: "validity", Header: []string{"validity rule", "outcome", "detail"}}
		for _, c := range v.Rules {
			rules.Rows = append(rules.Rows, []string{c.Name, passedWord(c.Passed), c.Detail})
		}
		sec.Tables = append(sec.Tables, rules)
	}
	return sec
}

// rampBands shade the ramps of the over-time charts.
func rampBands(r *result.Result) []band {
	p := phasesOf(r)
	var bands []band
	if p.rampUp > 0 {
		bands = append(bands, band{From: 0, To: p.rampUp, Label: "ramp-up"})
	}
	if p.rampDownFrom > 0 {
		bands = append(bands, band{From: p.rampDownFrom, To: p.end, Label: "ramp-down"})
	}
	return bands
}

const rampNote = "Shaded: ramp-up and ramp-down, outside the measured steady state. Each point is the second ending at t."

// overTime is the run's throughput and latency per second.
func overTime(r *result.Result) section {
	secs := perSecond(r)
	ops, errs := series{Name: "completed/s"}, series{Name: "errors/s", Dashed: true}
	p50, p99 := series{Name: "p50"}, series{Name: "p99"}
	tput := table{Class: "data", Header: []string{"t_s", "ops", "errors"}}
	lat := table{Class: "data", Header: []string{"t_s", "p50_ms", "p99_ms"}}
	anyErrors := false
	for _, p := range secs {
		t := float64(p.T)
		ops.X, ops.Y = append(ops.X, t), append(ops.Y, float64(p.Ops))
		errs.X, errs.Y = append(errs.X, t), append(errs.Y, float64(p.Errors))
		anyErrors = anyErrors || p.Errors > 0
		tput.Rows = append(tput.Rows, []string{strconv.Itoa(p.T), count(p.Ops), count(p.Errors)})
		y50, y99 := p.P50Ms, p.P99Ms
		if p.Ops == 0 {
			y50, y99 = math.NaN(), math.NaN()
		}
		p50.X, p50.Y = append(p50.X, t), append(p50.Y, y50)
		p99.X, p99.Y = append(p99.X, t), append(p99.Y, y99)
		lat.Rows = append(lat.Rows, []string{strconv.Itoa(p.T), num(p.P50Ms), num(p.P99Ms)})
	}
	tputSeries := []series{ops}
	if anyErrors {
		tputSeries = append(tputSeries, errs)
	}
	bands := rampBands(r)
	return section{ID: "over-time", Title: "Over time", Notes: []string{rampNote}, Charts: []chart{
		{ID: "chart-throughput", Title: "Throughput (operations completed per second)", XLabel: "time since the start (s)", YLabel: "operations/s", Series: tputSeries, Bands: bands, Data: tput},
		{ID: "chart-latency", Title: "Latency per second, all operations (ms)", XLabel: "time since the start (s)", YLabel: "latency (ms)", Series: []series{p50, p99}, Bands: bands, Data: lat,
			Note: "Per-second percentiles come from coarse per-second histograms (1 significant digit: within 6.25%)."},
	}}
}

// spectrumSeries is one histogram's spectrum as a chart series, and its
// rows for the chart's numbers.
func spectrumSeries(name string, points []spectrumPoint) (series, [][]string) {
	s := series{Name: name}
	var rows [][]string
	for _, p := range points {
		s.X, s.Y = append(s.X, p.percentile), append(s.Y, p.ms)
		rows = append(rows, []string{name, num(p.percentile), num(p.ms)})
	}
	return s, rows
}

type spectrumPoint struct{ percentile, ms float64 }

// spectrumOf is the spectrum of an operation's steady-state latency, or
// of all operations' together when op is empty; none without histograms.
func spectrumOf(r *result.Result, op string) ([]spectrumPoint, error) {
	if r.Histograms == nil {
		return nil, nil
	}
	hist, err := opHistogram(r, op)
	if op == "" {
		hist, err = totalHistogram(r)
	}
	if err != nil {
		return nil, err
	}
	var out []spectrumPoint
	for _, p := range hist.Spectrum(spectrumPerDecade) {
		out = append(out, spectrumPoint{p.Percentile, ms(p.Value)})
	}
	return out, nil
}

const spectrumNote = "Steady state, from each operation's full histogram (3 significant digits). x: the percentile on a log scale of 1/(1−p); the last point of each line, the maximum, sits at the right edge."

// spectrumLines is how many operations one spectrum chart draws: the
// palette's colours, less one for all operations together in the
// charts of the others.
const spectrumLines = 8

// byCount is the run's operations, the most frequent first (ties in the
// workload's order).
func byCount(r *result.Result) []string {
	ops := slices.Clone(r.OperationOrder)
	slices.SortStableFunc(ops, func(a, b string) int { return cmp.Compare(r.Operations[b].Count, r.Operations[a].Count) })
	return ops
}

// spectra is the latency percentile spectrum of each operation: one
// chart of them all when they are few enough to tell apart, otherwise of
// the most frequent, and one chart per other operation (beside all
// operations together) to choose from a list.
func spectra(r *result.Result) (section, error) {
	sec := section{ID: "spectrum", Title: "Latency percentile spectrum"}
	if r.Histograms == nil {
		sec.Notes = []string{noHistograms(r)}
		return sec, nil
	}
	spectrumChart := func(id, title string) chart {
		return chart{ID: id, Title: title, XLabel: "percentile", YLabel: "latency (ms)", XKind: percentileAxis,
			Note: spectrumNote, Data: table{Class: "data", Header: []string{"operation", "percentile", "latency_ms"}}}
	}
	add := func(c *chart, name, op string) error {
		pts, err := spectrumOf(r, op)
		if err != nil || len(pts) == 0 {
			return err
		}
		s, rows := spectrumSeries(name, pts)
		if op == "" {
			s.Dashed, s.Colour = true, "#555"
		}
		c.Series = append(c.Series, s)
		c.Data.Rows = append(c.Data.Rows, rows...)
		return nil
	}
	ops := r.OperationOrder
	var rest []string
	if len(ops) > spectrumLines {
		ops, rest = byCount(r)[:spectrumLines], byCount(r)[spectrumLines:]
		sec.Notes = []string{fmt.Sprintf("The %d most frequent of the %d operations in one chart: more lines would share colours.", spectrumLines, len(r.OperationOrder))}
		sec.PickLabel = fmt.Sprintf("The %d others, by count: open one to see its spectrum beside all operations together.", len(rest))
	}
	c := spectrumChart("chart-spectrum", "Latency by percentile, per operation (ms)")
	for _, op := range ops {
		if err := add(&c, op, op); err != nil {
			return sec, err
		}
	}
	sec.Charts = []chart{c}
	for i, op := range rest {
		c := spectrumChart(fmt.Sprintf("chart-spectrum-other-%d", i), "Latency by percentile: "+op+" (ms)")
		if err := add(&c, op, op); err != nil {
			return sec, err
		}
		if len(c.Series) == 0 {
			continue // none completed: no spectrum
		}
		if err := add(&c, "all operations", ""); err != nil {
			return sec, err
		}
		sec.Picks = append(sec.Picks, pick{Name: op, Chart: c})
	}
	return sec, nil
}

// operationsSection is the per-operation tables: what each did, and how
// long it took (two tables, so that both fit the page's column).
func operationsSection(r *result.Result) section {
	counts := table{Class: "operations", Header: []string{"operation", "count", "completed", "errors", "business exceptions", "retries", "completed per s"}}
	times := table{Class: "latencies", Header: []string{"operation", "mean", "p50", "p90", "p95", "p99", "max", "queue mean", "service mean"}}
	for _, name := range r.OperationOrder {
		op, ok := r.Operations[name]
		if !ok {
			continue
		}
		l := op.Latency
		perS := math.NaN()
		if r.Summary.ElapsedS > 0 {
			perS = float64(op.Completed) / r.Summary.ElapsedS
		}
		queue, service := "", ""
		if op.Queue != nil {
			queue, service = latency(op.Queue.Mean), latency(op.Service.Mean)
		}
		counts.Rows = append(counts.Rows, []string{name, grouped(op.Count), grouped(op.Completed), grouped(op.Errors), grouped(op.BusinessExceptions), grouped(op.Retries), rate(perS)})
		times.Rows = append(times.Rows, []string{name, latency(l.Mean), latency(l.P50), latency(l.P90), latency(l.P95), latency(l.P99), latency(l.Max), queue, service})
	}
	return section{ID: "operations", Title: "Operations", Notes: []string{"Steady state. Latency end-to-end as the client saw it; queue = waiting for a server thread, service = holding one."}, Tables: []table{counts, times}}
}

// containerSection is the entity container's counters per entity type,
// and the database's.
func containerSection(r *result.Result) section {
	sec := section{ID: "container", Title: "Container and database"}
	if len(r.EntityOrder) > 0 {
		cache := table{Class: "entities", Header: []string{"entity", "finds", "cache hits", "hit rate", "tx hits", "loads", "not found", "stores", "creates", "removes"}}
		instances := table{Class: "instances", Header: []string{"entity", "instantiations", "activations", "passivations", "discards", "peak ready", "peak pooled", "lock waits", "settings"}}
		for _, name := range r.EntityOrder {
			e := r.Container[name]
			s := e.Settings
			cache.Rows = append(cache.Rows, []string{name, grouped(e.Finds), grouped(e.CacheHits), share(e.HitRate), grouped(e.TxHits), grouped(e.Loads), grouped(e.NotFound), grouped(e.Stores), grouped(e.Creates), grouped(e.Removes)})
			instances.Rows = append(instances.Rows, []string{name, grouped(e.Instantiations), grouped(e.Activations), grouped(e.Passivations), grouped(e.Discards), grouped(e.PeakReady), grouped(e.PeakPooled), grouped(e.LockWaits),
				fmt.Sprintf("option %s, cache %d, pool %d, %s, %s", s.CommitOption, s.Cache, s.Pool, s.Persistence, s.Concurrency)})
		}
		sec.Tables = append(sec.Tables, cache, instances)
	} else {
		sec.Notes = append(sec.Notes, "No entity container in this run (direct SQL, or a remote site).")
	}
	d := r.Database
	sec.Tables = append(sec.Tables,
		table{Class: "database", Header: []string{"database: statements", "transactions", "commits", "rollbacks", "in doubt"},
			Rows: [][]string{{grouped(d.Statements), grouped(d.Transactions), grouped(d.Commits), grouped(d.Rollbacks), grouped(d.InDoubt)}}},
		table{Class: "database-failures", Header: []string{"deadlocks", "serialization failures", "lock timeouts", "unique violations", "connections lost"},
			Rows: [][]string{{grouped(d.Deadlocks), grouped(d.SerializationFailures), grouped(d.LockTimeouts), grouped(d.UniqueViolations), grouped(d.ConnectionsLost)}}})
	return sec
}

// tiersSection is what crossing the tier boundary cost; false when the
// middle tier ran in process.
func tiersSection(r *result.Result) (section, bool) {
	t := r.Tiers
	if t == nil {
		return section{}, false
	}
	tab := table{Class: "tiers", Header: []string{"page", "pages", "calls", "failed", "calls/page", "bytes out/page", "bytes in/page", "call", "bean", "layer/page"}}
	row := func(name string, c result.TierCalls) []string {
		return []string{name, grouped(c.Pages), grouped(c.Calls), grouped(c.Failed), rate(c.CallsPerPage), rate(c.BytesOutPerPage), rate(c.BytesInPerPage), latency(c.CallMs), latency(c.BeanMs), latency(c.LayerMsPerPage)}
	}
	for _, p := range t.Pages {
		tab.Rows = append(tab.Rows, row(p.Name, p))
	}
	tab.Rows = append(tab.Rows, row("total", t.Total))
	proto := t.Protocol
	if proto == "" {
		proto = "none (no call crossed a process boundary)"
	}
	return section{ID: "tiers", Title: "Tiers", Notes: []string{fmt.Sprintf("Style %s, %d processes, protocol %s.", t.Style, t.Processes, proto)}, Tables: []table{tab}}, true
}

// singlePage is one run's report.
func singlePage(run *Run) (*page, error) {
	r := run.Result
	p := &page{Title: fmt.Sprintf("tierbench report: %s (%s)", r.Workload, run.Name)}
	spec, err := spectra(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", run.Path, err)
	}
	p.Sections = []section{provenance(r), summarySection(r), overTime(r), spec, operationsSection(r), containerSection(r)}
	if s, ok := serversSection(r); ok {
		p.Sections = append(p.Sections, s)
	}
	if t, ok := tiersSection(r); ok {
		p.Sections = append(p.Sections, t)
	}
	return p, nil
}
