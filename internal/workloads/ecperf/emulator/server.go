package emulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is a Supplier Emulator: it accepts POs over HTTP (Handler, Serve)
// and delivers each after its lead time. Close stops it; a Server is not
// reusable after Close.
type Server struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	tr     *http.Transport
	stats  counters

	ctx    context.Context // done when Close is called
	cancel context.CancelFunc

	mu    sync.Mutex
	runs  map[string]map[int64]*order
	queue queue
	seq   uint64

	wake      chan struct{} // cap 1: the queue changed
	slots     chan struct{} // cap MaxInFlight: attempts in progress
	scheduled chan struct{} // closed when the scheduler has returned
	attempts  sync.WaitGroup
	closeOnce sync.Once

	// attempted, if set, is called after every delivery attempt (tests).
	attempted func(run string, po int64, err error)
}

// New validates cfg, applies its defaults and starts the delivery
// scheduler. The caller must Close the Server.
func New(cfg Config) (*Server, error) { return newServer(cfg, nil) }

func newServer(cfg Config, attempted func(run string, po int64, err error)) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.MaxInFlight
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		client:    &http.Client{Transport: tr},
		tr:        tr,
		runs:      make(map[string]map[int64]*order),
		wake:      make(chan struct{}, 1),
		slots:     make(chan struct{}, cfg.MaxInFlight),
		scheduled: make(chan struct{}),
		attempted: attempted,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.schedule()
	return s, nil
}

// Stats is a snapshot of the server's counters.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Close stops the deliveries: attempts under way are cancelled, pending
// POs stay undelivered (Stats.Pending), and Serve returns. Requests that
// arrive afterwards are answered 503. Close waits for the scheduler and
// the attempts to end; it may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		<-s.scheduled
		s.attempts.Wait()
		s.tr.CloseIdleConnections()
	})
}

// Serve answers HTTP requests on ln until ctx is done or the Server is
// closed, then shuts down gracefully: it stops accepting, lets requests in
// progress finish (up to 5 s) and returns nil. It does not stop the
// deliveries; Close does. Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	s.log.Info("supplier emulator listening", "addr", addr, "lead_time_unit", s.cfg.LeadTimeUnit)

	select {
	case err := <-served:
		return fmt.Errorf("emulator: serve %s: %w", addr, err)
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		hs.Close()
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	st := s.Stats()
	s.log.Info("supplier emulator stopped", "addr", addr, "received", st.Received, "delivered", st.Delivered, "pending", st.Pending)
	if err != nil {
		return fmt.Errorf("emulator: shut down %s: %w", addr, err)
	}
	return nil
}
