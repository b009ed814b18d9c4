package result

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/atomicfile"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/inputfile"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Schema names this version of the file format.
const Schema = "tierbench/result/v1"

// Result is one run. The fields DESIGN.md lists are required; the others
// add detail.
type Result struct {
	Schema           string                 `json:"schema"`
	Workload         string                 `json:"workload"`
	TierbenchVersion string                 `json:"tierbench_version"`
	StartedAt        time.Time              `json:"started_at"`
	Seed             uint64                 `json:"seed"`
	Config           config.Run             `json:"config"`
	Environment      Environment            `json:"environment"`
	Load             *Load                  `json:"load,omitempty"`
	Summary          Summary                `json:"summary"`
	Operations       map[string]Operation   `json:"operations"`
	Container        map[string]EntityStats `json:"container"`
	// Tiers: how the middle tier was split and its remote calls (a web
	// workload's); absent for an in-process middle tier.
	Tiers *Tiers `json:"tiers,omitempty"`
	// Partners are the external partner services' counters (TPC-App's
	// POV, PGE, ICE, SNE), in the order the workload lists them.
	Partners []Partner        `json:"partners,omitempty"`
	Database store.Stats      `json:"database"`
	Checks   []workload.Check `json:"checks"`
	// Terminals are the emulated clients by group: one group of
	// --clients for most workloads, ECperf's order-entry terminals,
	// planned lines and large-order line.
	Terminals []Terminals `json:"terminals"`
	// Setup is the workload's own settings in words for the summary's
	// first line (ECperf: "Ir 5, PO dispatch queue"); empty for most.
	Setup string `json:"setup,omitempty"`
	// Validity is the reference's rules for a run to count (ECperf).
	Validity *Validity `json:"validity,omitempty"`
	// Thresholds are the run's --threshold, each judged on the steady
	// state; absent when none was given.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Mix is a Markov-chain workload's observed mix against its table's
	// (RUBiS); absent for the others.
	Mix        *Mix    `json:"mix,omitempty"`
	Timeseries []Point `json:"timeseries"`
	// Agents are the driver agents of a drive spread over several; absent
	// for one process.
	Agents []Agent `json:"agents,omitempty"`
	// Servers are the app servers of a run over several, each apart;
	// Container above is their sum. Balancer stood in front of them.
	Servers  []Server  `json:"servers,omitempty"`
	Balancer *Balancer `json:"balancer,omitempty"`
	// Histograms are the distributions behind every latency figure, per
	// operation and per second (absent in results written before them).
	Histograms *Histograms `json:"histograms,omitempty"`

	// OperationOrder is the workload's order of operations, for tables;
	// EntityOrder the order of its entity types.
	OperationOrder []string `json:"operation_order"`
	EntityOrder    []string `json:"entity_order,omitempty"`
	// TotalLatency and its parts summarise all operations together.
	TotalLatency metrics.Latency `json:"total_latency_ms"`
	TotalQueue   metrics.Latency `json:"total_queue_ms"`
	TotalService metrics.Latency `json:"total_service_ms"`

	// Resources is the CPU time the steady state cost (absent in results
	// of runs from before it was measured).
	Resources *Resources `json:"resources,omitempty"`
}

// Environment is the run's provenance.
type Environment struct {
	// DB is the database's version; empty for a drive-only run, which
	// reaches its Target, a web site, and no database.
	DB        string `json:"db"`
	Target    string `json:"target,omitempty"`
	Isolation string `json:"isolation"`
	// LockGranularity is "table" when every transaction locked the
	// database's tables (--lock-granularity table); empty, the engine's
	// own locks.
	LockGranularity string `json:"lock_granularity,omitempty"`
	Go              string `json:"go"`
	CPUs            int    `json:"cpus"`
	OS              string `json:"os"`
	Arch            string `json:"arch"`
	Host            string `json:"host"`
	// Modules are the versions of the database drivers and libraries
	// compiled in.
	Modules map[string]string `json:"modules,omitempty"`
	// Placement is the run's --placement (mixed, dual): the database was a
	// private PostgreSQL server of the run's, on the CPUs DBCPUs, and
	// tierbench ran on AppCPUs (Linux CPU lists, "0-1,3"). Empty when the
	// run placed nothing.
	Placement string `json:"placement,omitempty"`
	AppCPUs   string `json:"app_cpus,omitempty"`
	DBCPUs    string `json:"db_cpus,omitempty"`
	// Hosts are the hosts of --placement hosts, each a network namespace
	// with its own address, and what ran on it; Link joins each of them
	// to the others; Partitions are the cuts made mid-run (--partition).
	Hosts      []Host      `json:"hosts,omitempty"`
	Link       *Link       `json:"link,omitempty"`
	Partitions []Partition `json:"partitions,omitempty"`
	// PGSettings are the private server's --pg-setting parameters, each
	// with the value the server reported for it after its start.
	PGSettings map[string]string `json:"pg_settings,omitempty"`
}

// Host is one host of a run under --placement hosts.
type Host struct {
	Role      string `json:"role"`
	Namespace string `json:"namespace"`
	Address   string `json:"address"`
	// Runs says what ran there: "PostgreSQL 15", "the business tier (pid
	// 1234)", "the driver".
	Runs []string `json:"runs"`
}

// Link is what joined the hosts: its rate (bits per second, 0: the
// veths' own), its one-way delay, and how each was realised.
type Link struct {
	RateBitS int64   `json:"rate_bit_s,omitempty"`
	DelayMS  float64 `json:"delay_ms,omitempty"`
	How      string  `json:"how"`
}

// Partition is a cut between two hosts during a run: when it began and
// ended, in seconds from the start of the measured run.
type Partition struct {
	Between [2]string `json:"between"`
	FromS   float64   `json:"from_s"`
	ToS     float64   `json:"to_s"`
}

// Load says what (re)population wrote before the run.
type Load struct {
	Rows       int64            `json:"rows"`
	Tables     map[string]int64 `json:"tables"`
	Seconds    float64          `json:"seconds"`
	RowsPerSec float64          `json:"rows_per_s"`
}

// Summary of the steady state.
type Summary struct {
	// Operations completed (successes and business exceptions) that were
	// meant to start in the steady state: the latency population.
	Operations int64 `json:"operations"`
	// Completed are those that finished in the steady state: the
	// throughput population. Fewer than Operations when the run fell
	// behind its schedule.
	Completed int64 `json:"completed"`
	// Errors and InDoubt (commits whose outcome is unknown) are the
	// failures: never in Operations, Completed, the throughput or the
	// metric.
	Errors             int64 `json:"errors"`
	InDoubt            int64 `json:"in_doubt"`
	BusinessExceptions int64 `json:"business_exceptions"`
	Retries            int64 `json:"retries"`
	// ErrorRatePct is the failures' share of the operations meant to start
	// in the steady state, in percent; a run above MaxErrorRatePct
	// (--max-error-rate) does not pass.
	ErrorRatePct    float64 `json:"error_rate_pct"`
	MaxErrorRatePct float64 `json:"max_error_rate_pct"`
	// Aborts by cause over all operations.
	Aborts metrics.Aborts `json:"aborts"`
	// ElapsedS is the measured window rates divide by; RunS the whole run.
	ElapsedS       float64 `json:"elapsed_s"`
	RunS           float64 `json:"run_s"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	Metric         Metric  `json:"metric"`
	// SIPSPerAppServer is TPC-App's second primary metric: SIPS divided by
	// the run's app servers (--app-servers; one: SIPS itself). Only for a
	// workload whose reference defines it (workload.Metric.PerAppServer).
	SIPSPerAppServer *float64 `json:"sips_per_app_server,omitempty"`
	// Passed: the run finished, its error rate is within the limit, and
	// every consistency check, validity rule and threshold held.
	Passed      bool `json:"passed"`
	Interrupted bool `json:"interrupted,omitempty"`
	// InterruptedDuring is the phase an interrupt stopped: load, start,
	// run, drain, checks.
	InterruptedDuring string `json:"interrupted_during,omitempty"`
	// Aborted: a second interrupt stopped the run at once; the operations
	// under way then are not in the figures and the checks did not finish.
	Aborted bool `json:"aborted,omitempty"`
	// Unchecked says why a run has no consistency checks (a drive-only
	// run does not reach the site's database); empty when it has them.
	Unchecked string `json:"unchecked,omitempty"`
	// Failure is what cut the run short (database, broker or tier lost,
	// …); nil when it ran to its end.
	Failure *Failure `json:"failure,omitempty"`
}

// Failure says what stopped a run that could not finish, when, and what it
// did to the figures.
type Failure struct {
	// Phase is where the run was: load, start (the workload's start,
	// warm-up included), run, drain, checks.
	Phase string    `json:"phase"`
	At    time.Time `json:"at"`
	// AtS is seconds since the clients started; absent before they did.
	AtS   *float64 `json:"at_s,omitempty"`
	Error string   `json:"error"`
	// Effect is what the failure did to the counts, in words.
	Effect string `json:"effect"`
}

// Partner is one external partner service's counters.
type Partner struct {
	Name      string           `json:"name"`
	URL       string           `json:"url"`
	InProcess bool             `json:"in_process"`
	Counts    map[string]int64 `json:"counts"`
}

// Metric is the workload's headline figure.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Operation is one transaction type's figures. Latency is end-to-end as
// the client saw it; where clients queued for server threads, Queue and
// Service split it.
type Operation struct {
	Count int64 `json:"count"`
	// Completed is the operations that finished in the steady state, which
	// throughput and the metric count; Count is those meant to start in
	// it, which the latencies describe.
	Completed          int64 `json:"completed"`
	Errors             int64 `json:"errors"`
	InDoubt            int64 `json:"in_doubt,omitempty"`
	BusinessExceptions int64 `json:"business_exceptions"`
	Retries            int64 `json:"retries"`
	// Aborts are attempts aborted by deadlock, lock timeout or
	// serialization failure, retried or not.
	Aborts  *metrics.Aborts  `json:"aborts,omitempty"`
	Latency metrics.Latency  `json:"latency_ms"`
	Queue   *metrics.Latency `json:"queue_ms,omitempty"`
	Service *metrics.Latency `json:"service_ms,omitempty"`
	// Backoff is the pauses before retries, present when there were
	// retries: queue + service + backoff add up to the latency.
	Backoff      *metrics.Latency `json:"backoff_ms,omitempty"`
	ErrorLatency *metrics.Latency `json:"error_latency_ms,omitempty"`
	// Failures are Errors and InDoubt by class (disk_full,
	// connection_lost, constraint, timeout, http_404, …), each with the
	// message of its first; absent when none failed.
	Failures metrics.Failures `json:"failures,omitempty"`
}

// Terminals is one group of identical terminals.
type Terminals struct {
	Group string `json:"group"`
	Count int    `json:"count"`
}

// Validity says whether the run meets its reference's rules. The two
// kinds are also judged apart: response times say whether the system kept
// up, the mix whether the driver dealt what the reference asks (a short
// run can miss it by chance alone, whatever the system under test).
type Validity struct {
	Passed              bool             `json:"passed"`
	ResponseTimesPassed bool             `json:"response_times_passed"`
	MixPassed           bool             `json:"mix_passed"`
	Rules               []workload.Check `json:"rules"`
}

// Tiers are the middle tier's split and what crossing it cost.
type Tiers struct {
	Style string `json:"style"`
	// Protocol: empty when no call crossed a process boundary.
	Protocol string `json:"protocol,omitempty"`
	// Transport: the socket the business tier was called over, "tcp" or
	// "unix"; empty when the run did not start the tiers.
	Transport string `json:"transport,omitempty"`
	Processes int    `json:"processes"`
	// Pages: per kind of page (a web tier's script), every page it served
	// during the run, ramps included; Total: all of them.
	Pages []TierCalls `json:"pages"`
	Total TierCalls   `json:"total"`
}

// TierCalls are the remote calls of some pages: totals, and per page.
type TierCalls struct {
	Name  string `json:"name,omitempty"`
	Pages int64  `json:"pages"`
	Calls int64  `json:"calls"`
	// Failed: calls answered with an error, a business outcome (a RUBiS
	// error page) included.
	Failed   int64 `json:"failed"`
	BytesOut int64 `json:"bytes_out"`
	BytesIn  int64 `json:"bytes_in"`
	// The calls' time as the web tier saw it, the business tier's
	// handlers' share of it, and the rest: the layer's (serialization,
	// network, dispatch).
	CallMs  float64 `json:"call_ms"`
	BeanMs  float64 `json:"bean_ms"`
	LayerMs float64 `json:"layer_ms"`
	// Per page.
	CallsPerPage    float64 `json:"calls_per_page"`
	BytesOutPerPage float64 `json:"bytes_out_per_page"`
	BytesInPerPage  float64 `json:"bytes_in_per_page"`
	LayerMsPerPage  float64 `json:"layer_ms_per_page"`
}

func tierCalls(name string, pages int64, c remote.Counts) TierCalls {
	ms := func(d time.Duration) float64 { return round(d.Seconds()*1000, 3) }
	t := TierCalls{Name: name, Pages: pages, Calls: c.Calls, Failed: c.Failed, BytesOut: c.BytesOut, BytesIn: c.BytesIn,
		CallMs: ms(c.Call), BeanMs: ms(c.Bean), LayerMs: ms(c.Layer())}
	if pages > 0 {
		n := float64(pages)
		t.CallsPerPage = round(float64(c.Calls)/n, 3)
		t.BytesOutPerPage = round(float64(c.BytesOut)/n, 1)
		t.BytesInPerPage = round(float64(c.BytesIn)/n, 1)
		t.LayerMsPerPage = round(c.Layer().Seconds()*1000/n, 4)
	}
	return t
}

func buildTiers(in *workload.Tiers) *Tiers {
	if in == nil {
		return nil
	}
	t := &Tiers{Style: in.Style, Protocol: in.Protocol, Transport: in.Transport, Processes: in.Processes, Pages: []TierCalls{}}
	var total remote.Counts
	var pages int64
	for _, c := range in.Calls {
		t.Pages = append(t.Pages, tierCalls(c.Name, c.Pages, c.Counts))
		total, pages = total.Add(c.Counts), pages+c.Pages
	}
	t.Total = tierCalls("", pages, total)
	return t
}

// EntityStats are an entity type's container counters and the settings it
// ran with.
type EntityStats struct {
	container.Stats
	HitRate  float64        `json:"hit_rate"`
	Settings EntitySettings `json:"settings"`
}

// EntitySettings are a type's container settings. Cache and Pool are the
// sizes at the end of the run: a size given in percent (CacheSetting,
// PoolSetting) follows the type's rows, and ends as a share of the rows
// at the end (the entity's "rows").
type EntitySettings struct {
	CommitOption string `json:"commit_option"`
	Cache        int    `json:"cache"`
	Pool         int    `json:"pool"`
	CacheSetting string `json:"cache_setting,omitempty"`
	PoolSetting  string `json:"pool_setting,omitempty"`
	Persistence  string `json:"persistence"`
	Concurrency  string `json:"concurrency"`
	// Coherence is how the type's cache stayed right across app servers;
	// empty when it needed no mode (none).
	Coherence string `json:"coherence,omitempty"`
	// ReadMostly names the read-write type whose commits invalidated this
	// read-only one (--entity NAME.read-mostly=WRITER); empty: none.
	ReadMostly string `json:"read_mostly,omitempty"`
}

// Point is one second of the time series, over the whole run.
type Point struct {
	T      int     `json:"t_s"`
	Ops    int64   `json:"ops"`
	Errors int64   `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

// Inputs are what a finished run hands to Build.
type Inputs struct {
	Version     string
	Config      config.Run
	Info        workload.Info
	Environment Environment
	Load        *workload.LoadReport
	Started     time.Time
	Elapsed     time.Duration
	Window      time.Duration
	Interrupted bool
	// InterruptedIn names the phase an interrupt stopped.
	InterruptedIn string
	Snapshot      metrics.Snapshot
	// Queued: clients outnumbered server threads, so queue and service
	// time are reported apart.
	Queued   bool
	Database store.Stats
	Checks   []workload.Check
	// Entities are the container's counters (none for direct SQL).
	Entities []workload.EntityStats
	// Tiers: the middle tier's split and its calls; nil: in-process.
	Tiers *workload.Tiers
	// Partners: the partner services' counters (workload.PartnerRun).
	Partners []workload.Partner
	// Groups are the run's terminal groups.
	Groups []workload.Group
	// Failure, when the run could not finish.
	Failure *Failure
	// Resources are the CPU samples of the steady state; nil: none.
	Resources *ResourceInputs
	// Walk: the clients walked a transition table (RUBiS); nil: not.
	Walk *workload.WalkReport
	// Servers: the app servers of a run over several; Balancer in front.
	Servers  []ServerInputs
	Balancer *Balancer
}

// Build assembles the result of a run.
func Build(in Inputs) *Result {
	r := &Result{
		Schema:           Schema,
		Workload:         in.Info.Name,
		TierbenchVersion: in.Version,
		StartedAt:        in.Started.UTC().Truncate(time.Millisecond),
		Seed:             in.Config.Seed,
		Config:           in.Config,
		Environment:      in.Environment,
		Operations:       make(map[string]Operation),
		Terminals:        []Terminals{},
		Container:        make(map[string]EntityStats),
		Database:         in.Database,
		Checks:           in.Checks,
		Timeseries:       []Point{},
		OperationOrder:   in.Info.Operations,
		Tiers:            buildTiers(in.Tiers),
	}
	for _, p := range in.Partners {
		r.Partners = append(r.Partners, Partner{Name: p.Name, URL: p.URL, InProcess: p.InProcess, Counts: p.Counts})
	}
	if r.Checks == nil {
		r.Checks = []workload.Check{}
	}
	if in.Environment.Target != "" && len(in.Checks) == 0 {
		r.Summary.Unchecked = "the driver reaches " + in.Environment.Target +
			", not the database behind it; tierbench run checks the database after (and drive does, with --db, where the workload offers it)"
	}
	for _, g := range in.Groups {
		r.Terminals = append(r.Terminals, Terminals{Group: g.Name, Count: g.Clients})
	}
	r.Setup = workload.OptionsOf(in.Config).Setup(in.Config)
	r.Container, r.EntityOrder = containerOf(in.Entities)
	r.Servers, r.Balancer = buildServers(in.Servers), in.Balancer
	if in.Load != nil {
		secs := in.Load.Duration.Seconds()
		r.Load = &Load{Rows: in.Load.Rows, Tables: in.Load.Tables, Seconds: round(secs, 3)}
		if secs > 0 {
			r.Load.RowsPerSec = round(float64(in.Load.Rows)/secs, 1)
		}
	}
	window := in.Window.Seconds()
	metricCount := int64(0)
	for _, o := range in.Snapshot.Ops {
		op := Operation{
			Count:              o.Count(),
			Completed:          o.Completed,
			Errors:             o.Errors,
			InDoubt:            o.InDoubt,
			BusinessExceptions: o.Business,
			Retries:            o.Retries,
			Latency:            roundLatency(o.Latency.Summary()),
		}
		if o.Retries > 0 {
			b := roundLatency(o.Backoff.Summary())
			op.Backoff = &b
		}
		if in.Queued {
			q, s := roundLatency(o.Queue.Summary()), roundLatency(o.Service.Summary())
			op.Queue, op.Service = &q, &s
		}
		if o.Aborts.Total() > 0 {
			a := o.Aborts
			op.Aborts = &a
			r.Summary.Aborts.Add(a)
		}
		if o.Failed() > 0 {
			e := roundLatency(o.ErrorLatency.Summary())
			op.ErrorLatency = &e
			op.Failures = o.Failures
		}
		r.Operations[o.Name] = op
		r.Summary.Operations += op.Count
		r.Summary.Completed += op.Completed
		r.Summary.Errors += op.Errors
		r.Summary.InDoubt += op.InDoubt
		r.Summary.BusinessExceptions += op.BusinessExceptions
		r.Summary.Retries += op.Retries
		if len(in.Info.Metric.Ops) == 0 || slices.Contains(in.Info.Metric.Ops, o.Name) {
			metricCount += op.Completed
		}
	}
	total := in.Snapshot.Total()
	r.TotalLatency = roundLatency(total.Latency.Summary())
	r.TotalQueue = roundLatency(total.Queue.Summary())
	r.TotalService = roundLatency(total.Service.Summary())
	r.Summary.ElapsedS = round(window, 3)
	r.Summary.RunS = round(in.Elapsed.Seconds(), 3)
	r.Summary.Metric.Name = in.Info.Metric.Name
	if window > 0 {
		r.Summary.ThroughputPerS = round(float64(r.Summary.Completed)/window, 1)
		per := in.Info.Metric.Per.Seconds()
		r.Summary.Metric.Value = round(float64(metricCount)/window*per, 1)
	}
	if in.Info.Metric.PerAppServer {
		// From the count, not the rounded metric: 3 servers of 100.05 SIPS
		// each are 100.1, not 100.0.
		v := 0.0
		if window > 0 {
			v = round(float64(metricCount)/window*in.Info.Metric.Per.Seconds()/float64(in.Config.Servers()), 1)
		}
		r.Summary.SIPSPerAppServer = &v
	}
	r.Summary.Interrupted = in.Interrupted
	r.Summary.InterruptedDuring = in.InterruptedIn
	r.Summary.Failure = in.Failure
	r.Resources = BuildResources(in.Resources)
	r.Summary.MaxErrorRatePct = in.Config.MaxErrorRate.Percent()
	if failed := r.Summary.Errors + r.Summary.InDoubt; failed > 0 {
		r.Summary.ErrorRatePct = round(100*float64(failed)/float64(r.Summary.Operations+failed), 3)
	}
	r.Summary.Passed = !in.Interrupted && in.Failure == nil && !r.TooManyErrors()
	for _, c := range r.Checks {
		r.Summary.Passed = r.Summary.Passed && c.Passed
	}
	if v := in.Info.Validity; v != nil && len(in.Snapshot.Ops) > 0 {
		r.Validity = judge(v, in.Snapshot)
		r.Summary.Passed = r.Summary.Passed && r.Validity.Passed
	}
	if in.Walk != nil && len(in.Snapshot.Ops) > 0 {
		var rule *workload.Check
		clients := 0
		for _, g := range in.Groups {
			clients += g.Clients
		}
		r.Mix, rule = buildMix(in.Walk, in.Snapshot, in.Window, clients)
		if rule != nil {
			if r.Validity == nil {
				r.Validity = &Validity{Passed: true, ResponseTimesPassed: true, MixPassed: true}
			}
			r.Validity.Rules = append(r.Validity.Rules, *rule)
			r.Validity.MixPassed = r.Validity.MixPassed && rule.Passed
			r.Validity.Passed = r.Validity.Passed && rule.Passed
			r.Summary.Passed = r.Summary.Passed && rule.Passed
		}
	}
	r.Thresholds = judgeThresholds(r, in.Snapshot, total.Latency)
	r.Summary.Passed = r.Summary.Passed && len(r.ThresholdsFailed()) == 0
	for _, s := range in.Snapshot.Series {
		r.Timeseries = append(r.Timeseries, Point{T: s.T, Ops: s.Ops, Errors: s.Errors,
			P50Ms: round(float64(s.P50)/1e6, 3), P99Ms: round(float64(s.P99)/1e6, 3)})
	}
	if len(in.Snapshot.Ops) > 0 {
		r.Histograms = buildHistograms(in.Snapshot)
	}
	return r
}

// TooManyErrors reports whether the run's failures exceed its
// --max-error-rate.
func (r *Result) TooManyErrors() bool {
	return r.Summary.ErrorRatePct > r.Summary.MaxErrorRatePct
}

// WriteFile writes r as indented JSON, except that each second of the
// time series and of the histograms takes one line: an hour-long run has
// thousands, and one field per line would double the file for nothing.
func (r *Result) WriteFile(path string) error {
	b, err := r.MarshalFile()
	if err != nil {
		return err
	}
	// Whole or not at all: a full disk must not leave a truncated
	// result that report then refuses.
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// MarshalFile is the content WriteFile writes.
func (r *Result) MarshalFile() ([]byte, error) {
	shell := *r
	shell.Timeseries = nil
	var seconds []SecondHistograms
	if r.Histograms != nil {
		h := *r.Histograms
		seconds, h.Seconds = h.Seconds, nil
		shell.Histograms = &h
	}
	b, err := json.MarshalIndent(&shell, "", "  ")
	if err != nil {
		return nil, err
	}
	b, err = spliceLines(b, `"timeseries": null`, r.Timeseries, "  ")
	if err != nil {
		return nil, err
	}
	if r.Histograms != nil {
		if b, err = spliceLines(b, `"seconds": null`, seconds, "    "); err != nil {
			return nil, err
		}
	}
	return append(b, '\n'), nil
}

// spliceLines replaces the first placeholder in b with the array of
// elems, one compact element per line, at the placeholder's indent.
func spliceLines[T any](b []byte, placeholder string, elems []T, indent string) ([]byte, error) {
	var out bytes.Buffer
	i := bytes.Index(b, []byte(placeholder))
	if i < 0 {
		return nil, fmt.Errorf("write result: %s not found", placeholder)
	}
	key, _, _ := strings.Cut(placeholder, ":")
	out.Write(b[:i])
	out.WriteString(key + ": [")
	for j, e := range elems {
		line, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		if j > 0 {
			out.WriteByte(',')
		}
		out.WriteString("\n" + indent + "  ")
		out.Write(line)
	}
	if len(elems) > 0 {
		out.WriteString("\n" + indent)
	}
	out.WriteByte(']')
	out.Write(b[i+len(placeholder):])
	return out.Bytes(), nil
}

// MaxFileBytes bounds the result files read back (report, model), so
// that a huge file given by mistake is refused at once. The per-second
// series grow a result by about 2.5 KiB a second for Stock-Online's seven
// operations (20 s and 40 s runs measured), so this holds runs of days.
const MaxFileBytes = 1 << 30

// ReadFile reads a result, saying in one line what is wrong with a file
// that is not one of this schema (fs.ErrNotExist stays detectable).
func ReadFile(path string) (*Result, error) {
	b, err := inputfile.Read(context.Background(), path, "a result file", MaxFileBytes)
	if err != nil {
		return nil, err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%s is not a tierbench result: not JSON (%v)", path, err)
	}
	switch head.Schema {
	case Schema:
	case "":
		return nil, fmt.Errorf("%s is not a tierbench result: it has no \"schema\"", path)
	default:
		return nil, fmt.Errorf("%s: schema %q; this tierbench reads %q", path, head.Schema, Schema)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s is not a tierbench result: %v", path, err)
	}
	return &r, nil
}

func roundLatency(l metrics.Latency) metrics.Latency {
	return metrics.Latency{Mean: round(l.Mean, 3), P50: round(l.P50, 3), P90: round(l.P90, 3), P95: round(l.P95, 3), P99: round(l.P99, 3), Max: round(l.Max, 3)}
}

func round(x float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}

// containerOf is the container section of entities, and their order.
func containerOf(entities []workload.EntityStats) (map[string]EntityStats, []string) {
	out := make(map[string]EntityStats)
	var order []string
	for _, e := range entities {
		s := e.Settings
		out[e.Name] = EntityStats{
			Stats:   e.Stats,
			HitRate: round(e.Stats.HitRate(), 4),
			Settings: EntitySettings{CommitOption: s.CommitOption.String(), Cache: e.Stats.CacheSize, Pool: e.Stats.PoolSize,
				CacheSetting: s.Cache.String(), PoolSetting: s.Pool.String(),
				Persistence: string(s.Persistence), Concurrency: string(s.Concurrency), ReadMostly: s.ReadMostly},
		}
		if s.Coherence.Keeps() {
			st := out[e.Name]
			st.Settings.Coherence = string(s.Coherence)
			out[e.Name] = st
		}
		order = append(order, e.Name)
	}
	return out, order
}
