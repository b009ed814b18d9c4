package livemetrics

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tierbench/tierbench/internal/agent"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

// Path the metrics are served at.
const Path = "/metrics"

// Stages of a run, as tierbench_run_stage labels them.
const (
	StageStarting = "starting"
	StageDriving  = "driving"
	StageDraining = "draining"
	StageChecking = "checking"
	StageDone     = "done"
	StageServing  = "serving"
)

var stages = []string{StageStarting, StageDriving, StageDraining, StageChecking, StageDone, StageServing}

// Run is what a run offers the exporter once its driver starts.
type Run struct {
	Recorder *metrics.Recorder
	// Began is when the driver started.
	Began time.Time
	// Stage says what the run does after its clients are done (the
	// runner's progress stage; "" while they drive).
	Stage func() string
	// Agents, for a coordinator of driver agents (no Recorder), are the
	// agents' completed and failed operations per operation so far.
	Agents func() []agent.LiveOp
}

// Server serves the metrics of the command it runs in.
type Server struct {
	addr string
	srv  *http.Server
	done chan struct{}

	mu       sync.Mutex
	workload string
	run      *Run
	stage    string
	entities func() []workload.EntityStats

	served *served
}

// Listen binds addr and serves the metrics there until Close. A bare port
// ("9464" or ":9464") listens on loopback only: exposing a run's figures
// beyond the machine takes an explicit host ("0.0.0.0:9464"). With a
// token, a request must send it as a bearer token.
func Listen(addr, workloadName, token string) (*Server, error) {
	bind, err := BindAddress(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	s := &Server{addr: ln.Addr().String(), workload: workloadName, stage: StageStarting, done: make(chan struct{})}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.served = newServed(reg, workloadName)
	mux := http.NewServeMux()
	mux.Handle(Path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "tierbench %s: metrics at %s\n", workloadName, Path)
	})
	var h http.Handler = mux
	if token != "" {
		h = bearer(token, mux)
	}
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) // returns on Close
	}()
	return s, nil
}

// bearer answers 401 to a request without "Authorization: Bearer token".
func bearer(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tierbench metrics"`)
			http.Error(w, "send the token of --metrics-token-file as Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// BindAddress is the address --metrics-listen binds: a bare port is a
// loopback address.
func BindAddress(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("--metrics-listen: empty; give PORT, :PORT (loopback) or HOST:PORT")
	}
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics-listen %q: want PORT, :PORT (loopback) or HOST:PORT", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return "", fmt.Errorf("--metrics-listen %q: %q is not a port", addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Addr is where the server listens (HOST:PORT, the port resolved).
func (s *Server) Addr() string { return s.addr }

// URL of the metrics.
func (s *Server) URL() string { return "http://" + s.addr + Path }

// Watch makes the metrics follow a run from now on.
func (s *Server) Watch(r Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = &r
}

// Entities sets where the container's counters come from.
func (s *Server) Entities(f func() []workload.EntityStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entities = f
}

// SetStage overrides the stage (done once the run has ended; serving for
// a served tier).
func (s *Server) SetStage(stage string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stage = stage
}

// Close stops serving.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

func (s *Server) state() (run *Run, stage string, entities func() []workload.EntityStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stage = s.stage
	if s.run != nil && stage == StageStarting {
		stage = StageDriving
		if s.run.Stage != nil {
			switch st := s.run.Stage(); {
			case strings.HasPrefix(st, "draining"):
				stage = StageDraining
			case strings.HasPrefix(st, "checking"):
				stage = StageChecking
			}
		}
	}
	return s.run, stage, s.entities
}

// latencyBuckets bound the exported latency histograms: 50 µs to a
// minute, about three per decade. The full-precision histograms are in
// the result; these serve dashboards and alerts.
var latencyBuckets = func() []time.Duration {
	var b []time.Duration
	for d := 50 * time.Microsecond; d <= time.Minute; d *= 10 {
		b = append(b, d, 2*d, 5*d)
	}
	return b
}()

var (
	descStage        = prometheus.NewDesc("tierbench_run_stage", "The run's stage: 1 for the current one (starting, driving, draining, checking, done; serving for a served tier).", []string{"workload", "stage"}, nil)
	descElapsed      = prometheus.NewDesc("tierbench_run_elapsed_seconds", "Time since the driver started.", []string{"workload"}, nil)
	descOps          = prometheus.NewDesc("tierbench_operations_total", "Operations finished, by outcome (success, business, error, in_doubt), in every phase of the run, ramps included.", []string{"workload", "operation", "outcome"}, nil)
	descSteadyOps    = prometheus.NewDesc("tierbench_steady_operations_total", "Operations meant to start in the steady state, by outcome: the result's population (its count is success + business).", []string{"workload", "operation", "outcome"}, nil)
	descInFlight     = prometheus.NewDesc("tierbench_operations_in_flight", "Operations asked for by a client and not yet finished, those queued for a server thread included.", []string{"workload"}, nil)
	descLatency      = prometheus.NewDesc("tierbench_operation_latency_seconds", "End-to-end latency of the steady state's completed operations.", []string{"workload", "operation"}, nil)
	descQueue        = prometheus.NewDesc("tierbench_operation_queue_seconds", "Time the steady state's completed operations waited for a server thread (when clients outnumber threads).", []string{"workload", "operation"}, nil)
	descService      = prometheus.NewDesc("tierbench_operation_service_seconds", "Time the steady state's completed operations held a server thread (when clients outnumber threads).", []string{"workload", "operation"}, nil)
	descAgentLatency = prometheus.NewDesc("tierbench_agents_operation_latency_seconds", "A coordinator's view of its driver agents: end-to-end latency of their completed operations, ramps included, from the seconds they reported so far (1 significant digit).", []string{"workload", "operation"}, nil)
	descAgentOps     = prometheus.NewDesc("tierbench_agents_operations_total", "A coordinator's view of its driver agents: operations they finished, completed or failed, ramps included, from the seconds they reported so far.", []string{"workload", "operation", "outcome"}, nil)
)

// containerCounters are the container's monotonic counters.
var containerCounters = []struct {
	desc *prometheus.Desc
	get  func(container.Stats) int64
}{
	{entityDesc("finds", "Finds of the entity type (by primary key, or a finder's row): cache hits + tx hits + loads + not found."), func(s container.Stats) int64 { return s.Finds }},
	{entityDesc("cache_hits", "Finds answered from the ready cache without the database."), func(s container.Stats) int64 { return s.CacheHits }},
	{entityDesc("tx_hits", "Finds answered from the transaction's own instance."), func(s container.Stats) int64 { return s.TxHits }},
	{entityDesc("loads", "Finds that loaded the instance from the database."), func(s container.Stats) int64 { return s.Loads }},
	{entityDesc("not_found", "Finds of an identity without a row."), func(s container.Stats) int64 { return s.NotFound }},
	{entityDesc("stores", "Instances stored to the database."), func(s container.Stats) int64 { return s.Stores }},
	{entityDesc("creates", "Instances created."), func(s container.Stats) int64 { return s.Creates }},
	{entityDesc("removes", "Instances removed."), func(s container.Stats) int64 { return s.Removes }},
	{entityDesc("activations", "Instances activated (pool to ready)."), func(s container.Stats) int64 { return s.Activations }},
	{entityDesc("passivations", "Instances passivated (ready to pool)."), func(s container.Stats) int64 { return s.Passivations }},
	{entityDesc("lock_waits", "Waits for another transaction's lock on an instance."), func(s container.Stats) int64 { return s.LockWaits }},
	{entityDesc("lock_timeouts", "Lock waits that timed out."), func(s container.Stats) int64 { return s.LockTimeouts }},
	{entityDesc("deadlocks", "Deadlocks the container detected."), func(s container.Stats) int64 { return s.Deadlocks }},
	{entityDesc("conflicts", "Optimistic conflicts detected at commit."), func(s container.Stats) int64 { return s.Conflicts }},
}

var descReady = prometheus.NewDesc("tierbench_container_ready_instances", "Instances in the ready cache now.", []string{"workload", "entity"}, nil)

func entityDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("tierbench_container_"+name+"_total", help, []string{"workload", "entity"}, nil)
}

// collector reads the server's run when scraped.
type collector struct{ s *Server }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStage, descElapsed, descOps, descSteadyOps, descInFlight, descLatency, descQueue, descService, descReady, descAgentOps, descAgentLatency} {
		ch <- d
	}
	for _, cc := range containerCounters {
		ch <- cc.desc
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	run, stage, entities := c.s.state()
	w := c.s.workload
	for _, st := range stages {
		v := 0.0
		if st == stage {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descStage, prometheus.GaugeValue, v, w, st)
	}
	if entities != nil {
		for _, e := range entities() {
			for _, cc := range containerCounters {
				ch <- prometheus.MustNewConstMetric(cc.desc, prometheus.CounterValue, float64(cc.get(e.Stats)), w, e.Name)
			}
			ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, float64(e.Stats.ReadyAtEnd), w, e.Name)
		}
	}
	if run == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descElapsed, prometheus.GaugeValue, time.Since(run.Began).Seconds(), w)
	if run.Agents != nil {
		for _, op := range run.Agents() {
			ch <- prometheus.MustNewConstMetric(descAgentOps, prometheus.CounterValue, float64(op.Completed), w, op.Name, "completed")
			ch <- prometheus.MustNewConstMetric(descAgentOps, prometheus.CounterValue, float64(op.Failed), w, op.Name, "failed")
			if op.Latency != nil {
				ch <- histogram(descAgentLatency, op.Latency, w, op.Name)
			}
		}
	}
	if run.Recorder == nil {
		return // a coordinator of agents: their recorders are elsewhere
	}
	live := run.Recorder.Live()
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(live.InFlight), w)
	for _, op := range live.Ops {
		for _, o := range metrics.Outcomes() {
			ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(op.All[o]), w, op.Name, o.String())
			ch <- prometheus.MustNewConstMetric(descSteadyOps, prometheus.CounterValue, float64(op.ByOutcome(o)), w, op.Name, o.String())
		}
		ch <- histogram(descLatency, op.Latency, w, op.Name)
		if op.Queue.Count() > 0 {
			ch <- histogram(descQueue, op.Queue, w, op.Name)
			ch <- histogram(descService, op.Service, w, op.Name)
		}
	}
}

func histogram(d *prometheus.Desc, h *metrics.Histogram, labels ...string) prometheus.Metric {
	counts := h.CumulativeCounts(latencyBuckets)
	buckets := make(map[float64]uint64, len(counts))
	for i, b := range latencyBuckets {
		buckets[b.Seconds()] = counts[i]
	}
	return prometheus.MustNewConstHistogram(d, uint64(h.Count()), h.Sum().Seconds(), buckets, labels...)
}
