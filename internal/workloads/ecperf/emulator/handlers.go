package emulator

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Handler is the emulator's HTTP API. Every answer is JSON; every 4xx and
// 5xx carries an ErrorResponse.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(PathPurchaseOrders, allow(http.MethodPost, s.handlePO))
	mux.HandleFunc(PathStats, allow(http.MethodGet, s.handleStats))
	mux.HandleFunc(pathRuns+"{run}/purchase-orders", allow(http.MethodGet, s.handleList))
	mux.HandleFunc(pathRuns+"{run}", allow(http.MethodDelete, s.handleForget))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no resource %s", r.URL.Path))
	})
	return mux
}

// allow answers 405 to every method but method.
func allow(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s, want %s", r.Method, r.URL.Path, method))
			return
		}
		h(w, r)
	}
}

func (s *Server) handlePO(w http.ResponseWriter, r *http.Request) {
	po, status, err := s.decodePO(w, r)
	if !s.delay(r) {
		return // the sender gave up: nothing happened
	}
	if s.ctx.Err() != nil {
		writeError(w, http.StatusServiceUnavailable, "the emulator is shutting down")
		return
	}
	s.stats.received.Add(1)
	if err != nil {
		s.stats.rejected.Add(1)
		s.log.Debug("purchase order rejected", "status", status, "err", err)
		writeError(w, status, err.Error())
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
		writeJSON(w, http.StatusOK, POResponse{Status: StatusDuplicate})
		return
	}
	s.seq++
	o := &order{po: po, received: 1, seq: s.seq, index: -1}
	byNumber[po.PONumber] = o
	s.stats.accepted.Add(1)
	s.stats.pending.Add(1)
	s.enqueue(o, time.Now().Add(time.Duration(po.leadTime())*s.cfg.LeadTimeUnit))
	s.mu.Unlock()
	s.log.Debug("purchase order accepted", "run", po.Run, "po", po.PONumber, "lead_time", po.leadTime())
	writeJSON(w, http.StatusAccepted, POResponse{Status: StatusAccepted})
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

// decodePO reads one PO strictly: JSON only, no unknown fields, nothing
// after it, at most MaxBody bytes, valid. On error it returns the status
// to answer.
func (s *Server) decodePO(w http.ResponseWriter, r *http.Request) (PO, int, error) {
	var po PO
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return po, http.StatusUnsupportedMediaType, fmt.Errorf("purchase order: Content-Type %q, want application/json", ct)
		}
	}
	if r.ContentLength > s.cfg.MaxBody {
		return po, http.StatusRequestEntityTooLarge, fmt.Errorf("purchase order: body of %d bytes, limit %d", r.ContentLength, s.cfg.MaxBody)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&po)
	if err == nil {
		if extra := dec.Decode(new(json.RawMessage)); extra != io.EOF {
			err = extra
			if err == nil {
				err = errors.New("data after the purchase order")
			}
		}
	}
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return po, http.StatusRequestEntityTooLarge, fmt.Errorf("purchase order: body larger than the limit of %d bytes", tooBig.Limit)
	case errors.As(err, &syntax):
		return po, http.StatusBadRequest, fmt.Errorf("purchase order: malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		return po, http.StatusBadRequest, fmt.Errorf("purchase order: field %s is a JSON %s, want %s", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return po, http.StatusBadRequest, errors.New("purchase order: empty body, want a JSON purchase order")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return po, http.StatusBadRequest, errors.New("purchase order: malformed JSON: unexpected end of the body")
	case err != nil:
		// Unknown fields and trailing data: encoding/json has no error type
		// for them; its message names the field.
		return po, http.StatusBadRequest, fmt.Errorf("purchase order: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := po.Validate(); err != nil {
		return po, http.StatusBadRequest, fmt.Errorf("purchase order: %s", sentence(err))
	}
	return po, 0, nil
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
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
	writeJSON(w, http.StatusOK, list)
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
	writeJSON(w, http.StatusOK, res)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "want > 0" stays readable with curl
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, ErrorResponse{Error: msg})
}
