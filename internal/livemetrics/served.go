package livemetrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierbench/tierbench/internal/server"
)

// Tiers a served process labels its requests with (tier).
const (
	// TierSite is the whole middle tier: a web workload's pages over its
	// own business logic (serve WORKLOAD without --tier).
	TierSite = "site"
	// TierWeb is the pages alone, over a business tier elsewhere.
	TierWeb = "web"
	// TierBusiness is the business tier served over the remote layer: its
	// operations are the remote methods.
	TierBusiness = "business"
)

// Outcomes of a served request, as tierbench_served_requests_total labels
// them; code says which error.
const (
	ServedSuccess = "success"
	ServedError   = "error"
)

// served are the series of a served tier (serve --metrics-listen): the
// requests it answered, counted as they finish. Unlike a run's, they are
// the server's own view, so they live in the registry as vectors rather
// than being read from a recorder when scraped. A vector with no child
// is not exported: a run's metrics do not show them.
type served struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
}

func newServed(reg prometheus.Registerer, workloadName string) *served {
	constLabels := prometheus.Labels{"workload": workloadName}
	buckets := make([]float64, len(latencyBuckets))
	for i, b := range latencyBuckets {
		buckets[i] = b.Seconds()
	}
	s := &served{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tierbench_served_requests_total",
			Help:        "Requests a served tier answered, by operation (the page's route, the web service's method, or the remote method), outcome (success, error) and code (the HTTP status, or the gRPC code's name; error: an HTTP status of 400 or more, a gRPC code other than OK).",
			ConstLabels: constLabels,
		}, []string{"tier", "operation", "outcome", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "tierbench_served_request_latency_seconds",
			Help:        "Time a served tier took to answer a request, from its arrival at the handler to its answer written, failed ones included.",
			ConstLabels: constLabels,
			Buckets:     buckets,
		}, []string{"tier", "operation"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "tierbench_served_requests_in_flight",
			Help:        "Requests a served tier is answering now, those waiting for a server thread included.",
			ConstLabels: constLabels,
		}, []string{"tier"}),
	}
	reg.MustRegister(s.requests, s.latency, s.inFlight)
	return s
}

// Call counts a request to operation of tier that starts now; done, called
// once it is answered, says with which code and whether it failed.
func (s *Server) Call(tier, operation string) (done func(code string, failed bool)) {
	s.served.inFlight.WithLabelValues(tier).Inc()
	start := time.Now()
	return func(code string, failed bool) { s.served.answered(tier, operation, start, code, failed) }
}

// answered counts a request of tier, in flight since start, as answered.
func (m *served) answered(tier, operation string, start time.Time, code string, failed bool) {
	m.latency.WithLabelValues(tier, operation).Observe(time.Since(start).Seconds())
	outcome := ServedSuccess
	if failed {
		outcome = ServedError
	}
	m.requests.WithLabelValues(tier, operation, outcome, code).Inc()
	m.inFlight.WithLabelValues(tier).Dec()
}

// OtherRoute is the operation of a request no route of the tier matched
// (a 404, a refused method): its path is not a label, so that a scan of
// made-up paths cannot grow the series without bound.
const OtherRoute = "other"

// Handler counts the requests h answers, each under the operation h
// names (server.NameOperation: a service's method), or else the route
// pattern of the http.ServeMux inside h that matched it (which a ServeMux
// sets on the request it is given: "/PHP/ViewItem.php"), so the
// operations are the tier's own, never its clients' paths.
func (s *Server) Handler(tier string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var named string
		r = r.WithContext(server.WithOperation(r.Context(), &named))
		// The pattern of a mux in front of h (server's, matching "/") is
		// not the tier's route.
		r.Pattern = ""
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		s.served.inFlight.WithLabelValues(tier).Inc()
		start := time.Now()
		defer func() {
			op := named
			if op == "" {
				op = r.Pattern
			}
			if op == "" {
				op = OtherRoute
			}
			s.served.answered(tier, op, start, strconv.Itoa(sw.status), sw.status >= 400)
		}()
		h.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status h answered (200 when it wrote the
// body without one).
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (flushes, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
