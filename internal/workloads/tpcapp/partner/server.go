package partner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/jsonhttp"
)

// shutdownGrace bounds how long Serve waits for requests in progress.
const shutdownGrace = 5 * time.Second

// Server is one partner. Its zero value is not usable; call New.
type Server struct {
	cfg Config

	requests, approved, declined, duplicates, failed, rejected atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
	// received counts, by run, the requests an ICE (reorder ids) or an
	// SNE (order ids) took for each id: more than one is a duplicate.
	received   map[string]map[int64]int
	labelBytes atomic.Int64
}

// New validates cfg and makes the server.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg.WithDefaults(), rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		received: make(map[string]map[int64]int)}, nil
}

// Config is the server's configuration, defaults applied.
func (s *Server) Config() Config { return s.cfg }

// Stats is a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{Kind: s.cfg.Kind, Requests: s.requests.Load(), Approved: s.approved.Load(), Declined: s.declined.Load(),
		Duplicates: s.duplicates.Load(), Failed: s.failed.Load(), Rejected: s.rejected.Load(), LabelBytes: s.labelBytes.Load()}
}

// Notices are SNE's notices of run: how many it received for each order,
// resends included.
func (s *Server) Notices(run string) map[int64]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.received[run])
}

// Handler is the partner's HTTP API: its own kind's path and PathStats.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	switch s.cfg.Kind {
	case POV:
		mux.HandleFunc(PathVerify, jsonhttp.Allow(http.MethodPost, s.handleVerify, s.refused))
	case PGE:
		mux.HandleFunc(PathAuthorize, jsonhttp.Allow(http.MethodPost, s.handleAuthorize, s.refused))
	case ICE:
		mux.HandleFunc(PathReorder, jsonhttp.Allow(http.MethodPost, s.handleReorder, s.refused))
	case SNE:
		mux.HandleFunc(PathNotice, jsonhttp.Allow(http.MethodPost, s.handleNotice, s.refused))
	}
	mux.HandleFunc(PathStats, jsonhttp.Allow(http.MethodGet, func(w http.ResponseWriter, _ *http.Request) { jsonhttp.Write(w, http.StatusOK, s.Stats()) }, s.refused))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.rejected.Add(1)
		jsonhttp.WriteError(w, http.StatusNotFound, fmt.Sprintf("no resource %s %s on the %s", r.Method, r.URL.Path, s.cfg.Kind.Title()))
	})
	return mux
}

// refused counts a request refused before it reached a handler.
func (s *Server) refused() { s.rejected.Add(1) }

// Serve answers on ln until ctx is done, then lets requests in progress
// finish (up to 5 s). It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("%s: serve %s: %w", s.cfg.Kind, ln.Addr(), err)
	case <-ctx.Done():
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
	return err
}

// admit decodes the request into v and waits the partner's response time.
// It answers the request itself and returns false when the body is bad,
// the partner is failing this request, or the caller gave up.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, v any, valid func() error) bool {
	if status, err := jsonhttp.Decode(w, r, s.cfg.MaxBody, "request", v); err != nil {
		s.rejected.Add(1)
		jsonhttp.WriteError(w, status, err.Error())
		return false
	}
	if err := valid(); err != nil {
		s.rejected.Add(1)
		jsonhttp.WriteError(w, http.StatusUnprocessableEntity, err.Error())
		return false
	}
	s.mu.Lock()
	wait := s.cfg.Delay.Draw(s.rng)
	fail := s.cfg.FailRate > 0 && s.rng.Float64() < s.cfg.FailRate
	s.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return false // nobody is waiting for the answer: nothing happened
		}
	}
	if fail {
		s.failed.Add(1)
		jsonhttp.WriteError(w, http.StatusServiceUnavailable, fmt.Sprintf("the %s is failing this request (--fail-rate %g)", s.cfg.Kind.Title(), s.cfg.FailRate))
		return false
	}
	return true
}

func (s *Server) decide(w http.ResponseWriter, key string) {
	s.requests.Add(1)
	d := Decision{Approved: Approves(key, *s.cfg.Approve)}
	if d.Approved {
		d.AuthCode = fmt.Sprintf("%s-%d", s.cfg.Kind, s.approved.Add(1))
	} else {
		s.declined.Add(1)
		d.Reason = "declined"
	}
	jsonhttp.Write(w, http.StatusOK, d)
}

func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	var req VerifyRequest
	if s.admit(w, r, &req, func() error {
		if req.POID == "" {
			return errors.New("po_id is empty")
		}
		return nil
	}) {
		s.decide(w, req.POID)
	}
}

func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	var req AuthorizeRequest
	if s.admit(w, r, &req, func() error {
		if req.CardNumber == "" || req.Reference == "" {
			return errors.New("card_number and reference are required")
		}
		if req.AmountCents < 0 {
			return fmt.Errorf("amount_cents %d: want >= 0", req.AmountCents)
		}
		return nil
	}) {
		s.decide(w, authorizeKey(req))
	}
}

func (s *Server) handleReorder(w http.ResponseWriter, r *http.Request) {
	var req ReorderRequest
	if !s.admit(w, r, &req, func() error {
		if req.Run == "" || req.ReorderID <= 0 || req.ItemID <= 0 || req.Quantity <= 0 {
			return fmt.Errorf("run, reorder_id, item_id and quantity are required, ids and quantity > 0 (got run %q, reorder %d, item %d, quantity %d)",
				req.Run, req.ReorderID, req.ItemID, req.Quantity)
		}
		return nil
	}) {
		return
	}
	s.requests.Add(1)
	jsonhttp.Write(w, http.StatusOK, ReorderResponse{Accepted: true, Duplicate: s.receive(req.Run, req.ReorderID)})
}

// pngSignature starts every PNG file.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

func (s *Server) handleNotice(w http.ResponseWriter, r *http.Request) {
	var req NoticeRequest
	if !s.admit(w, r, &req, func() error {
		if req.Run == "" || req.OrderID <= 0 || req.Lines < 0 {
			return fmt.Errorf("run and order_id are required, order_id > 0 and lines >= 0 (got run %q, order %d, lines %d)", req.Run, req.OrderID, req.Lines)
		}
		if !bytes.HasPrefix(req.Label, pngSignature) {
			return fmt.Errorf("order %d: label is not a PNG image (%d bytes)", req.OrderID, len(req.Label))
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(req.Label))
		if err != nil || cfg.Width == 0 || cfg.Height == 0 {
			return fmt.Errorf("order %d: label is not a readable PNG image: %v", req.OrderID, err)
		}
		return nil
	}) {
		return
	}
	s.requests.Add(1)
	s.labelBytes.Add(int64(len(req.Label)))
	jsonhttp.Write(w, http.StatusOK, NoticeResponse{Accepted: true, Duplicate: s.receive(req.Run, req.OrderID)})
}

// receive counts a request of run for id, accepted the first time, a
// duplicate after (a redelivery the partner answers again).
func (s *Server) receive(run string, id int64) (dup bool) {
	s.mu.Lock()
	seen := s.received[run]
	if seen == nil {
		seen = make(map[int64]int)
		s.received[run] = seen
	}
	seen[id]++
	dup = seen[id] > 1
	s.mu.Unlock()
	if dup {
		s.duplicates.Add(1)
	} else {
		s.approved.Add(1)
	}
	return dup
}
