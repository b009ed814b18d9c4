package emulator

import (
	"cmp"
	"container/heap"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/tierbench/tierbench/internal/jsonhttp"
)

// Handler is the emulator's HTTP API. Every answer is JSON; every 4xx and
// 5xx carries an ErrorResponse.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(PathPurchaseOrders, jsonhttp.Allow(http.MethodPost, s.handlePO, nil))
	mux.HandleFunc(PathStats, jsonhttp.Allow(http.MethodGet, s.handleStats, nil))
	mux.HandleFunc(pathRuns+"{run}/purchase-orders", jsonhttp.Allow(http.MethodGet, s.handleList, nil))
	mux.HandleFunc(pathRuns+"{run}", jsonhttp.Allow(http.MethodDelete, s.handleForget, nil))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.WriteError(w, http.StatusNotFound, fmt.Sprintf("no resource %s", r.URL.Path))
	})
	return mux
}

func (s *Server) handlePO(w http.ResponseWriter, r *http.Request) {
	po, status, err := s.decodePO(w, r)
	if !s.delay(r) {
		return // the sender gave up: nothing happened
	}
	if s.ctx.Err() != nil {
		jsonhttp.WriteError(w, http.StatusServiceUnavailable, "the emulator is shutting down")
		return
	}
	s.stats.received.Add(1)
	if err != nil {
		s.stats.rejected.Add(1)
		s.log.Debug("purchase order rejected", "status", status, "err", err)
		jsonhttp.WriteError(w, status, err.Error())
		return
	}

	s.mu.Lock()
	byNumber := s.runs[po.Run]
	if byNumber == nil {
		byNumber = make(map[int64]*order)
		s.runs[po.Run] = byNumber
	}
	if o := byNumber[po.PONumber]; o != nil {
		o.received++
		s.mu.Unlock()
		s.stats.duplicates.Add(1)
		s.log.Debug("duplicate purchase order", "run", po.Run, "po", po.PONumber)
		jsonhttp.Write(w, http.StatusOK, POResponse{Status: StatusDuplicate})
		return
	}
	s.seq++
	o := &order{po: po, received: 1, seq: s.seq, index: -1}
	byNumber[po.PONumber] = o
	s.stats.accepted.Add(1)
	s.stats.pending.Add(1)
	unit := s.cfg.LeadTimeUnit
	if !s.cfg.OwnUnit {
		unit = po.unit(unit)
	}
	s.enqueue(o, time.Now().Add(time.Duration(po.leadTime())*unit))
	s.mu.Unlock()
	s.log.Debug("purchase order accepted", "run", po.Run, "po", po.PONumber, "lead_time", po.leadTime())
	jsonhttp.Write(w, http.StatusAccepted, POResponse{Status: StatusAccepted})
}

// delay waits Config.ResponseDelay; false if the request was abandoned
// meanwhile (noticed once its body has been read).
func (s *Server) delay(r *http.Request) bool {
	if s.cfg.ResponseDelay <= 0 {
		return true
	}
	t := time.NewTimer(s.cfg.ResponseDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
	case <-r.Context().Done():
		return false
	}
	return true
}

// decodePO reads one PO strictly (see jsonhttp.Decode), at most MaxBody
// bytes, valid. On error it returns the status to answer.
func (s *Server) decodePO(w http.ResponseWriter, r *http.Request) (PO, int, error) {
	var po PO
	if status, err := jsonhttp.Decode(w, r, s.cfg.MaxBody, "purchase order", &po); err != nil {
		return po, status, err
	}
	if err := po.Validate(); err != nil {
		return po, http.StatusBadRequest, fmt.Errorf("purchase order: %s", sentence(err))
	}
	return po, 0, nil
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	jsonhttp.Write(w, http.StatusOK, s.Stats())
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	byNumber := s.runs[r.PathValue("run")]
	list := make([]POSummary, 0, len(byNumber))
	for n, o := range byNumber {
		list = append(list, POSummary{PONumber: n, Received: o.received, Delivered: o.delivered})
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b POSummary) int { return cmp.Compare(a.PONumber, b.PONumber) })
	jsonhttp.Write(w, http.StatusOK, list)
}

func (s *Server) handleForget(w http.ResponseWriter, r *http.Request) {
	run := r.PathValue("run")
	var res ForgetResponse
	s.mu.Lock()
	for _, o := range s.runs[run] {
		res.Forgotten++
		if !o.pending() {
			continue
		}
		res.Cancelled++
		o.forgotten = true
		if o.index >= 0 {
			heap.Remove(&s.queue, o.index)
		}
		if o.cancel != nil {
			o.cancel()
		}
		s.stats.pending.Add(-1)
		s.stats.cancelled.Add(1)
	}
	delete(s.runs, run)
	s.mu.Unlock()
	s.log.Debug("run forgotten", "run", run, "forgotten", res.Forgotten, "cancelled", res.Cancelled)
	jsonhttp.Write(w, http.StatusOK, res)
}
