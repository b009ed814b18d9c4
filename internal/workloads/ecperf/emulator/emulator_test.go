package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests run the emulator on a real socket and deliver to a real
// receiver. Delivery attempts are awaited through the server's attempted
// hook, never by sleeping; durations are real but kept to milliseconds.

// bundle is one emulator under test, its client and its receiver.
type bundle struct {
	srv      *Server
	client   *Client
	recv     *receiver
	attempts chan attempt
	served   chan error // Serve's result
}

type attempt struct {
	run string
	po  int64
	err error
}

// setup starts an emulator with cfg (LeadTimeUnit 10 ms unless set) on
// 127.0.0.1:0 and a receiver answering with answer (nil: always 200).
func setup(t *testing.T, cfg Config, recv *receiver) *bundle {
	t.Helper()
	if recv == nil {
		recv = newReceiver(t, nil)
	}
	if cfg.LeadTimeUnit == 0 {
		cfg.LeadTimeUnit = 10 * time.Millisecond
	}
	b := &bundle{recv: recv, attempts: make(chan attempt, 1000), served: make(chan error, 1)}
	srv, err := newServer(cfg, func(run string, po int64, err error) { b.attempts <- attempt{run, po, err} })
	if err != nil {
		t.Fatal(err)
	}
	b.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { b.served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { // before the receiver's cleanup (LIFO)
		cancel()
		srv.Close()
		if err := <-b.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	b.client, err = NewClient("http://"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// po is a valid PO of run to the receiver with one line per lead time.
func (b *bundle) po(run string, n int64, leadTimes ...int) PO {
	po := PO{Run: run, PONumber: n, SupplierID: 3, SiteID: 1, DeliverTo: b.recv.URL + "/deliveries"}
	for i, lt := range leadTimes {
		po.Lines = append(po.Lines, POLine{Line: i + 1, PartID: "P-" + string(rune('A'+i)), Qty: 10 * (i + 1), LeadTime: lt})
	}
	return po
}

func (b *bundle) send(t *testing.T, po PO, want string) {
	t.Helper()
	got, err := b.client.Send(context.Background(), po)
	if err != nil || got != want {
		t.Fatalf("Send(run %q, po %d) = %q, %v; want %q", po.Run, po.PONumber, got, err, want)
	}
}

// waitAttempts returns the next n delivery attempts.
func (b *bundle) waitAttempts(t *testing.T, n int) []attempt {
	t.Helper()
	var got []attempt
	timeout := time.After(5 * time.Second)
	for len(got) < n {
		select {
		case a := <-b.attempts:
			got = append(got, a)
		case <-timeout:
			t.Fatalf("%d delivery attempts after 5 s, want %d: %v", len(got), n, got)
		}
	}
	return got
}

func (b *bundle) wantStats(t *testing.T, want Stats) {
	t.Helper()
	if got := b.srv.Stats(); got != want {
		t.Errorf("stats\n got %+v\nwant %+v", got, want)
	}
	got, err := b.client.Stats(context.Background())
	if err != nil || got != want {
		t.Errorf("GET %s = %+v, %v; want %+v", PathStats, got, err, want)
	}
}

func (b *bundle) wantList(t *testing.T, run string, want []POSummary) {
	t.Helper()
	got, err := b.client.RunPurchaseOrders(context.Background(), run)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("purchase orders of run %q = %+v, %v; want %+v", run, got, err, want)
	}
}

// receiver is the system under test's side: it records every delivery
// request and answers answer(n) to the n-th (1-based).
type receiver struct {
	*httptest.Server
	answer  func(n int) int
	release chan struct{} // if not nil, requests wait for it to close
	arrived chan struct{} // one per request

	mu          sync.Mutex
	requests    []delivery
	inFlight    int
	maxInFlight int
}

type delivery struct {
	d      Delivery
	at     time.Time
	status int
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	if answer == nil {
		answer = func(int) int { return http.StatusOK }
	}
	r := &receiver{answer: answer, arrived: make(chan struct{}, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var d Delivery
	dec := json.NewDecoder(req.Body)
	dec.DisallowUnknownFields()
	if req.Method != http.MethodPost || req.URL.Path != "/deliveries" || dec.Decode(&d) != nil {
		http.Error(w, "bad delivery", http.StatusTeapot)
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, delivery{d: d, at: at})
	n := len(r.requests)
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.mu.Unlock()
	r.arrived <- struct{}{}
	if r.release != nil {
		select {
		case <-r.release:
		case <-req.Context().Done():
		}
	}
	status := r.answer(n)
	r.mu.Lock()
	r.inFlight--
	r.requests[n-1].status = status
	r.mu.Unlock()
	w.WriteHeader(status)
}

func (r *receiver) got() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.requests...)
}

func TestAcceptedPODeliveredAfterItsLeadTime(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{LeadTimeUnit: 10 * time.Millisecond}, nil)
	po := b.po("run-1", 7, 2, 5) // lead time: the longest line, 5 × 10 ms
	sent := time.Now()
	b.send(t, po, StatusAccepted)

	if a := b.waitAttempts(t, 1)[0]; a.err != nil || a.run != "run-1" || a.po != 7 {
		t.Fatalf("attempt %+v, want a successful delivery of run-1/7", a)
	}
	got := b.recv.got()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1", len(got))
	}
	if early := got[0].at.Sub(sent); early < 50*time.Millisecond {
		t.Errorf("delivered %v after sending, before the lead time of 50ms", early)
	}
	want := Delivery{Run: "run-1", PONumber: 7, Lines: []DeliveryLine{{1, "P-A", 10}, {2, "P-B", 20}}}
	if !reflect.DeepEqual(got[0].d, want) {
		t.Errorf("delivery %+v, want %+v", got[0].d, want)
	}
	b.wantStats(t, Stats{Received: 1, Accepted: 1, Delivered: 1, DeliveryAttempts: 1})
	b.wantList(t, "run-1", []POSummary{{PONumber: 7, Received: 1, Delivered: true}})
}

// A PO that carries its sender's lead-time unit is delivered in that
// unit, not in the emulator's own: a standalone emulator kept its 5 s
// while a run at --cycle-scale 0.1 waited in 0.5 s units, and re-sent
// thousands of POs it thought lost.
func TestPODeliveredInTheUnitItCarries(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{LeadTimeUnit: time.Hour}, nil)
	po := b.po("run-1", 7, 5)
	po.LeadTimeUnit = "10ms"
	sent := time.Now()
	b.send(t, po, StatusAccepted)
	if a := b.waitAttempts(t, 1)[0]; a.err != nil || a.po != 7 {
		t.Fatalf("attempt %+v, want a successful delivery of run-1/7", a)
	}
	if at := b.recv.got()[0].at.Sub(sent); at < 50*time.Millisecond {
		t.Errorf("delivered %v after sending, before 5 × 10ms", at)
	}
}

func TestDeliveriesInDueOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxInFlight: 1}, nil)
	for _, p := range []struct {
		n    int64
		lead int
	}{{1, 8}, {2, 2}, {3, 5}, {4, 0}} {
		b.send(t, b.po("r", p.n, p.lead), StatusAccepted)
	}
	var order []int64
	for _, a := range b.waitAttempts(t, 4) {
		order = append(order, a.po)
	}
	if want := []int64{4, 2, 3, 1}; !reflect.DeepEqual(order, want) {
		t.Errorf("delivered in the order %v, want %v (by lead time)", order, want)
	}
}

func TestDuplicateNotDeliveredTwice(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	po := b.po("run-1", 1, 1)
	b.send(t, po, StatusAccepted)
	b.send(t, po, StatusDuplicate) // while pending
	b.waitAttempts(t, 1)
	b.send(t, po, StatusDuplicate) // once delivered
	other := b.po("run-2", 1, 0)   // same number, another run
	b.send(t, other, StatusAccepted)
	b.waitAttempts(t, 1)

	if got := b.recv.got(); len(got) != 2 || got[0].d.Run != "run-1" || got[1].d.Run != "run-2" {
		t.Errorf("deliveries %+v, want run-1/1 then run-2/1", got)
	}
	// Nothing pending: the duplicates were never scheduled.
	b.wantStats(t, Stats{Received: 4, Accepted: 2, Duplicates: 2, Delivered: 2, DeliveryAttempts: 2})
	b.wantList(t, "run-1", []POSummary{{PONumber: 1, Received: 3, Delivered: true}})
}

func TestMalformedPOsRejectedAndServerKeepsServing(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxBody: 1024}, nil)
	valid := func(edit func(m map[string]any)) string {
		m := map[string]any{
			"run": "r", "po_number": 1, "supplier_id": 2, "site_id": 1,
			"lines":      []any{map[string]any{"line": 1, "part_id": "P-1", "qty": 5, "lead_time": 0}},
			"deliver_to": b.recv.URL + "/deliveries",
		}
		if edit != nil {
			edit(m)
		}
		j, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(j)
	}
	line := func(m map[string]any) map[string]any { return m["lines"].([]any)[0].(map[string]any) }
	big := valid(func(m map[string]any) { line(m)["part_id"] = strings.Repeat("x", 2000) })
	tests := []struct {
		name        string
		body        string
		contentType string
		chunked     bool // no Content-Length
		status      int
		want        string
	}{
		{"bad JSON", `{"run": "r",`, "", false, 400, "malformed JSON"},
		{"not JSON", `purchase order 7`, "", false, 400, "malformed JSON at byte 1"},
		{"empty body", ``, "", false, 400, "empty body"},
		{"unknown field", valid(func(m map[string]any) { m["colour"] = "red" }), "", false, 400, `unknown field "colour"`},
		{"wrong type", valid(func(m map[string]any) { m["po_number"] = "seven" }), "", false, 400, "field po_number is a JSON string"},
		{"two documents", valid(nil) + valid(nil), "", false, 400, "data after the purchase order"},
		{"missing run", valid(func(m map[string]any) { delete(m, "run") }), "", false, 400, "run is empty"},
		{"zero po_number", valid(func(m map[string]any) { m["po_number"] = 0 }), "", false, 400, "po_number is 0, want > 0"},
		{"no lines", valid(func(m map[string]any) { m["lines"] = []any{} }), "", false, 400, "lines is empty"},
		{"qty 0", valid(func(m map[string]any) { line(m)["qty"] = 0 }), "", false, 400, "lines[0].qty is 0, want > 0"},
		{"every problem named", valid(func(m map[string]any) { m["po_number"] = -1; line(m)["lead_time"] = -2 }), "", false, 400, "po_number is -1, want > 0; lines[0].lead_time is -2"},
		{"bad deliver_to", valid(func(m map[string]any) { m["deliver_to"] = "ftp://host/x" }), "", false, 400, `deliver_to "ftp://host/x" is not an absolute http(s) URL`},
		{"relative deliver_to", valid(func(m map[string]any) { m["deliver_to"] = "/deliveries" }), "", false, 400, "deliver_to"},
		{"bad lead_time_unit", valid(func(m map[string]any) { m["lead_time_unit"] = "soon" }), "", false, 400, `lead_time_unit "soon": want a duration above 0 and at most 1h0m0s`},
		{"lead_time_unit too long", valid(func(m map[string]any) { m["lead_time_unit"] = "2h" }), "", false, 400, `lead_time_unit "2h"`},
		{"wrong content type", valid(nil), "text/plain", false, 415, `Content-Type "text/plain", want application/json`},
		{"oversize body", big, "", false, 413, "limit 1024"},
		{"oversize body without length", big, "", true, 413, "limit of 1024 bytes"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // hides the length
			}
			req, err := http.NewRequest(http.MethodPost, b.client.base+PathPurchaseOrders, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			status, msg := roundTrip(t, req)
			if status != tt.status || !strings.Contains(msg, tt.want) {
				t.Errorf("answer %d %q, want %d naming %q", status, msg, tt.status, tt.want)
			}
			// The server keeps serving: a valid PO is still accepted.
			b.send(t, b.po("after-bad", int64(100+i), 0), StatusAccepted)
		})
	}
	b.waitAttempts(t, len(tests))
	n := int64(len(tests))
	b.wantStats(t, Stats{Received: 2 * n, Accepted: n, Rejected: n, Delivered: n, DeliveryAttempts: n})
}

func TestClientSeesRejectionsAsRejectedError(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	po := b.po("r", 0, 1)
	_, err := b.client.Send(context.Background(), po)
	var re *RejectedError
	if !errors.As(err, &re) || re.Status != http.StatusBadRequest || !strings.Contains(re.Message, "po_number is 0") {
		t.Errorf("Send of an invalid PO: %v, want a *RejectedError 400 naming po_number", err)
	}
	b.wantStats(t, Stats{Received: 1, Rejected: 1})
}

func TestWrongMethodsAndPaths(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	tests := []struct {
		method, path string
		status       int
		allow, want  string
	}{
		{"GET", PathPurchaseOrders, 405, "POST", "method GET not allowed on /v1/purchase-orders, want POST"},
		{"PUT", PathPurchaseOrders, 405, "POST", "method PUT not allowed"},
		{"POST", PathStats, 405, "GET", "want GET"},
		{"DELETE", RunPurchaseOrdersPath("r"), 405, "GET", "want GET"},
		{"GET", RunPath("r"), 405, "DELETE", "want DELETE"},
		{"GET", "/v2/anything", 404, "", "no resource /v2/anything"},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, b.client.base+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var er ErrorResponse
		json.NewDecoder(resp.Body).Decode(&er)
		resp.Body.Close()
		if resp.StatusCode != tt.status || resp.Header.Get("Allow") != tt.allow || !strings.Contains(er.Error, tt.want) {
			t.Errorf("%s %s: %d (Allow %q) %q, want %d (Allow %q) naming %q", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Allow"), er.Error, tt.status, tt.allow, tt.want)
		}
	}
	b.wantStats(t, Stats{})
}

func TestDeliveryRetriedUntilTheReceiverAnswers2xx(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t, func(n int) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	b := setup(t, Config{RetryMax: 100 * time.Millisecond}, recv)
	b.send(t, b.po("r", 1, 0), StatusAccepted)

	attempts := b.waitAttempts(t, 4)
	for i, a := range attempts {
		if failed := a.err != nil; failed != (i < 3) {
			t.Errorf("attempt %d: err %v, want failure for the first 3 only", i+1, a.err)
		}
	}
	got := recv.got()
	if len(got) != 4 {
		t.Fatalf("%d delivery requests, want 4", len(got))
	}
	// Backoff 50 ms, 100 ms, then capped at RetryMax 100 ms.
	for i, min := range []time.Duration{50, 100, 100} {
		if gap := got[i+1].at.Sub(got[i].at); gap < min*time.Millisecond {
			t.Errorf("retry %d came %v after the previous attempt, want >= %v", i+1, gap, min*time.Millisecond)
		}
	}
	b.wantStats(t, Stats{Received: 1, Accepted: 1, Delivered: 1, DeliveryAttempts: 4, DeliveryFailures: 3})
	b.wantList(t, "r", []POSummary{{PONumber: 1, Received: 1, Delivered: true}})
}

func TestListingPerRunAndForget(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	const long = 1000 // 10 s: still pending when the test ends
	for _, n := range []int64{3, 1, 2} {
		b.send(t, b.po("r1", n, long), StatusAccepted)
	}
	b.send(t, b.po("r1", 2, long), StatusDuplicate)
	odd := "a/b c?" // escaped in the path
	b.send(t, b.po(odd, 1, long), StatusAccepted)
	b.send(t, b.po("done", 9, 0), StatusAccepted)
	b.waitAttempts(t, 1)

	b.wantList(t, "r1", []POSummary{{1, 1, false}, {2, 2, false}, {3, 1, false}})
	b.wantList(t, odd, []POSummary{{1, 1, false}})
	b.wantList(t, "none", []POSummary{})

	ctx := context.Background()
	for _, f := range []struct {
		run  string
		want ForgetResponse
	}{
		{"r1", ForgetResponse{Forgotten: 3, Cancelled: 3}},
		{"r1", ForgetResponse{}}, // again: nothing left
		{"done", ForgetResponse{Forgotten: 1}},
		{"none", ForgetResponse{}},
	} {
		if got, err := b.client.Forget(ctx, f.run); err != nil || got != f.want {
			t.Errorf("Forget(%q) = %+v, %v; want %+v", f.run, got, err, f.want)
		}
	}
	b.wantList(t, "r1", []POSummary{})
	b.wantList(t, odd, []POSummary{{1, 1, false}})
	b.wantStats(t, Stats{Received: 6, Accepted: 5, Duplicates: 1, Delivered: 1, DeliveryAttempts: 1, Pending: 1, Cancelled: 3})

	// A forgotten run starts afresh.
	b.send(t, b.po("r1", 1, 0), StatusAccepted)
	if a := b.waitAttempts(t, 1)[0]; a.run != "r1" || a.po != 1 || a.err != nil {
		t.Errorf("attempt %+v, want r1/1 delivered", a)
	}
	if n := len(b.recv.got()); n != 2 {
		t.Errorf("%d deliveries, want 2: the cancelled POs were delivered", n)
	}
}

func TestForgetCancelsTheAttemptUnderWay(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t, nil)
	recv.release = make(chan struct{}) // never released: the request hangs
	b := setup(t, Config{}, recv)
	b.send(t, b.po("r", 1, 0), StatusAccepted)
	<-recv.arrived

	if got, err := b.client.Forget(context.Background(), "r"); err != nil || got != (ForgetResponse{Forgotten: 1, Cancelled: 1}) {
		t.Errorf("Forget = %+v, %v; want 1 forgotten, 1 cancelled", got, err)
	}
	if a := b.waitAttempts(t, 1)[0]; !errors.Is(a.err, context.Canceled) {
		t.Errorf("attempt ended with %v, want context.Canceled", a.err)
	}
	b.wantStats(t, Stats{Received: 1, Accepted: 1, DeliveryAttempts: 1, DeliveryFailures: 1, Cancelled: 1})
}

func TestMaxInFlightCapsConcurrentAttempts(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t, nil)
	recv.release = make(chan struct{})
	b := setup(t, Config{MaxInFlight: 2}, recv)
	for n := range int64(5) {
		b.send(t, b.po("r", n+1, 0), StatusAccepted)
	}
	<-recv.arrived
	<-recv.arrived
	select { // a negative check needs a wait; 50 ms is ample on loopback
	case <-recv.arrived:
		t.Error("a third attempt started while 2 were in flight (MaxInFlight 2)")
	case <-time.After(50 * time.Millisecond):
	}
	b.wantStats(t, Stats{Received: 5, Accepted: 5, Pending: 5, DeliveryAttempts: 2})
	close(recv.release)
	b.waitAttempts(t, 5)
	recv.mu.Lock()
	peak := recv.maxInFlight
	recv.mu.Unlock()
	if peak != 2 {
		t.Errorf("at most %d deliveries were in flight, want 2", peak)
	}
	b.wantStats(t, Stats{Received: 5, Accepted: 5, Delivered: 5, DeliveryAttempts: 5})
}

func TestCloseStopsServeAndDeliveries(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	b := setup(t, Config{}, recv)
	b.send(t, b.po("r", 1, 0), StatusAccepted)   // retried until Close
	b.send(t, b.po("r", 2, 100), StatusAccepted) // never due
	b.waitAttempts(t, 1)

	done := make(chan struct{})
	go func() { b.srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return")
	}
	select {
	case err := <-b.served:
		b.served <- err // for the cleanup
		if err != nil {
			t.Errorf("Serve returned %v after Close, want nil", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	st := b.srv.Stats()
	if st.Pending != 2 || st.Delivered != 0 || st.DeliveryAttempts != st.DeliveryFailures {
		t.Errorf("stats after Close %+v, want 2 pending, none delivered", st)
	}
	// The handler outlives Close but refuses new POs with a 5xx.
	w := httptest.NewRecorder()
	body := strings.NewReader(`{}`)
	b.srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, PathPurchaseOrders, body))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "shutting down") {
		t.Errorf("POST after Close: %d %s, want 503", w.Code, w.Body)
	}
}

func TestServeStopsGracefullyOnContext(t *testing.T) {
	t.Parallel()
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	c, _ := NewClient("http://"+ln.Addr().String(), nil)
	if _, err := c.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener is still open after Serve returned")
	}
}

func TestResponseDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResponseDelay: 30 * time.Millisecond}, nil)
	start := time.Now()
	b.send(t, b.po("r", 1, 0), StatusAccepted)
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("answered after %v, before the response delay of 30ms", took)
	}
	b.waitAttempts(t, 1)

	// A sender that gives up during the delay leaves no trace.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := b.client.Send(ctx, b.po("r", 2, 0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send with a 5ms deadline: %v, want context.DeadlineExceeded", err)
	}
	b.send(t, b.po("r", 3, 0), StatusAccepted) // after the abandoned request's handler
	b.waitAttempts(t, 1)
	b.wantList(t, "r", []POSummary{{1, 1, true}, {3, 1, true}})
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := New(Config{LeadTimeUnit: -time.Second, MaxInFlight: -1, ResponseDelay: -time.Millisecond})
	for _, want := range []string{"LeadTimeUnit is -1s", "MaxInFlight is -1", "ResponseDelay is -1ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v, want an error naming %q", err, want)
		}
	}
}

func roundTrip(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var er ErrorResponse
	if err := json.NewDecoder(resp.Body).Decode(&er); err != nil {
		t.Errorf("answer %d is not an ErrorResponse: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, er.Error
}
