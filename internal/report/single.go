package report

import (
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
		[2]string{s.Metric.Name, num(s.Metric.Value)},
		[2]string{"throughput (per s)", num(s.ThroughputPerS)},
		[2]string{"operations (steady state)", count(s.Operations)},
		[2]string{"completed in it", count(s.Completed)},
		[2]string{"errors", count(s.Errors)},
		[2]string{"in doubt", count(s.InDoubt)},
		[2]string{"business exceptions", count(s.BusinessExceptions)},
		[2]string{"retries", count(s.Retries)},
		[2]string{"aborts (deadlock, lock timeout, serialization)", fmt.Sprintf("%d, %d, %d", s.Aborts.Deadlock, s.Aborts.LockTimeout, s.Aborts.Serialization)},
		[2]string{"error rate", fmt.Sprintf("%s%% (limit %s%%)", num(s.ErrorRatePct), num(s.MaxErrorRatePct))},
		[2]string{"measured window", num(s.ElapsedS) + " s of " + num(s.RunS) + " s"},
		[2]string{"latency of all operations (ms)", fmt.Sprintf("mean %s, p50 %s, p90 %s, p99 %s, max %s", num(r.TotalLatency.Mean), num(r.TotalLatency.P50), num(r.TotalLatency.P90), num(r.TotalLatency.P99), num(r.TotalLatency.Max))},
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
	failures := table{Class: "failures", Header: []string{"operation", "failed with", "count", "first message"}}
	for _, name := range r.OperationOrder {
		f := r.Operations[name].Failures
		for _, class := range slices.Sorted(maps.Keys(f)) {
			failures.Rows = append(failures.Rows, []string{name, class, count(f[class].Count), f[class].Sample})
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

// spectra is the latency percentile spectrum of each operation.
func spectra(r *result.Result) (section, error) {
	sec := section{ID: "spectrum", Title: "Latency percentile spectrum"}
	if r.Histograms == nil {
		sec.Notes = []string{noHistograms(r)}
		return sec, nil
	}
	c := chart{ID: "chart-spectrum", Title: "Latency by percentile, per operation (ms)", XLabel: "percentile", YLabel: "latency (ms)", XKind: percentileAxis,
		Note: spectrumNote, Data: table{Class: "data", Header: []string{"operation", "percentile", "latency_ms"}}}
	for _, op := range r.OperationOrder {
		pts, err := spectrumOf(r, op)
		if err != nil {
			return sec, err
		}
		if len(pts) == 0 {
			continue
		}
		s, rows := spectrumSeries(op, pts)
		c.Series = append(c.Series, s)
		c.Data.Rows = append(c.Data.Rows, rows...)
	}
	sec.Charts = []chart{c}
	return sec, nil
}

// operationsSection is the per-operation table.
func operationsSection(r *result.Result) section {
	t := table{Class: "operations", Header: []string{"operation", "count", "completed", "errors", "biz-exc", "retries", "mean", "p50", "p90", "p95", "p99", "max", "per s", "queue mean", "service mean"}}
	for _, name := range r.OperationOrder {
		op, ok := r.Operations[name]
		if !ok {
			continue
		}
		l := op.Latency
		rate := 0.0
		if r.Summary.ElapsedS > 0 {
			rate = math.Round(float64(op.Completed)/r.Summary.ElapsedS*10) / 10
		}
		queue, service := "", ""
		if op.Queue != nil {
			queue, service = num(op.Queue.Mean), num(op.Service.Mean)
		}
		t.Rows = append(t.Rows, []string{name, count(op.Count), count(op.Completed), count(op.Errors), count(op.BusinessExceptions), count(op.Retries),
			num(l.Mean), num(l.P50), num(l.P90), num(l.P95), num(l.P99), num(l.Max), num(rate), queue, service})
	}
	return section{ID: "operations", Title: "Operations", Notes: []string{"Latency in ms, end-to-end as the client saw it, steady state; queue = waiting for a server thread, service = holding one."}, Tables: []table{t}}
}

// containerSection is the entity container's counters per entity type,
// and the database's.
func containerSection(r *result.Result) section {
	sec := section{ID: "container", Title: "Container and database"}
	if len(r.EntityOrder) > 0 {
		t := table{Class: "entities", Header: []string{"entity", "finds", "cache hits", "hit rate", "tx hits", "loads", "not found", "stores", "creates", "removes", "instantiations", "activations", "passivations", "discards", "peak ready", "peak pooled", "lock waits", "settings"}}
		for _, name := range r.EntityOrder {
			e := r.Container[name]
			s := e.Settings
			t.Rows = append(t.Rows, []string{name, count(e.Finds), count(e.CacheHits), num(e.HitRate), count(e.TxHits), count(e.Loads), count(e.NotFound), count(e.Stores), count(e.Creates), count(e.Removes),
				count(e.Instantiations), count(e.Activations), count(e.Passivations), count(e.Discards), count(e.PeakReady), count(e.PeakPooled), count(e.LockWaits),
				fmt.Sprintf("option %s, cache %d, pool %d, %s, %s", s.CommitOption, s.Cache, s.Pool, s.Persistence, s.Concurrency)})
		}
		sec.Tables = append(sec.Tables, t)
	} else {
		sec.Notes = append(sec.Notes, "No entity container in this run (direct SQL, or a remote site).")
	}
	d := r.Database
	sec.Tables = append(sec.Tables, table{Class: "database", Header: []string{"statements", "transactions", "commits", "rollbacks", "deadlocks", "serialization failures", "lock timeouts", "unique violations", "connections lost", "in doubt"},
		Rows: [][]string{{count(d.Statements), count(d.Transactions), count(d.Commits), count(d.Rollbacks), count(d.Deadlocks), count(d.SerializationFailures), count(d.LockTimeouts), count(d.UniqueViolations), count(d.ConnectionsLost), count(d.InDoubt)}}})
	return sec
}

// tiersSection is what crossing the tier boundary cost; false when the
// middle tier ran in process.
func tiersSection(r *result.Result) (section, bool) {
	t := r.Tiers
	if t == nil {
		return section{}, false
	}
	tab := table{Class: "tiers", Header: []string{"page", "pages", "calls", "failed", "calls/page", "bytes out/page", "bytes in/page", "call ms", "bean ms", "layer ms/page"}}
	row := func(name string, c result.TierCalls) []string {
		return []string{name, count(c.Pages), count(c.Calls), count(c.Failed), num(c.CallsPerPage), num(c.BytesOutPerPage), num(c.BytesInPerPage), num(c.CallMs), num(c.BeanMs), num(c.LayerMsPerPage)}
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
	if t, ok := tiersSection(r); ok {
		p.Sections = append(p.Sections, t)
	}
	return p, nil
}
