package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// noNetwork is the fuzzed server's delivery transport: a fuzzed deliver_to
// may name any host, and a fuzz test must not call it.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("fuzz: no deliveries")
}

// FuzzPOHandler posts arbitrary bodies (and Content-Types) to
// POST /v1/purchase-orders. Whatever arrives, the handler must not panic
// and must answer 202 "accepted" or 200 "duplicate" to a PO that decodes
// strictly and validates, or a 4xx with a JSON error to anything else;
// a PO it took is answered "duplicate" when sent again (the idempotent
// receiver). The seeds below run as an ordinary test with go test, as does
// testdata/fuzz/FuzzPOHandler; go test -fuzz=FuzzPOHandler explores beyond.
func FuzzPOHandler(f *testing.F) {
	valid := `{"run":"r","po_number":1,"supplier_id":2,"site_id":1,"lines":[{"line":1,"part_id":"150","qty":40,"lead_time":2}],"deliver_to":"http://127.0.0.1:1/deliveries"}`
	for _, seed := range []struct{ body, contentType string }{
		{valid, "application/json"},
		{valid, ""},
		{valid, "application/vnd.tierbench+json; charset=utf-8"},
		{valid, "text/plain"},
		{valid, "application/json; charset"}, // a malformed media type
		{valid + valid, "application/json"},  // data after the PO
		{valid + " \n", "application/json"},  // trailing space is fine
		{"", "application/json"},
		{"null", "application/json"},
		{"[]", "application/json"},
		{"{}", "application/json"},
		{`{"run":"r"`, "application/json"}, // cut short
		{`{"run":"r","po_number":1e400}`, "application/json"},
		{`{"run":"r","po_number":-1,"lines":[]}`, "application/json"},
		{`{"run":"r","po_number":9223372036854775808}`, "application/json"},
		{`{"run":"r","po_number":"1"}`, "application/json"},
		{`{"run":"r","po_number":1,"extra":true}`, "application/json"},
		{`{"run":"r","po_number":1,"lines":[{"line":1,"part_id":"1","qty":1,"lead_time":-3},{"line":1,"part_id":"","qty":0}],"deliver_to":"ftp://x"}`, "application/json"},
		{`{"run":"\u0000\ud800","po_number":2,"lines":[{"line":0,"part_id":"x","qty":1,"lead_time":0}],"deliver_to":"http://[::1]:0/"}`, "application/json"},
		{`{"run":"r","po_number":3,"lines":[{"line":1,"part_id":"1","qty":1,"lead_time":2147483647}],"deliver_to":"https://example.invalid/x"}`, "application/json"},
		{`{"run":"r","po_number":4,"lines":null,"deliver_to":"http://h"}`, "application/json"},
		{strings.Repeat("[", 10000), "application/json"},
		{`{"run":"` + strings.Repeat("x", 5000) + `"}`, "application/json"}, // over MaxBody
		{"\xff\xfe{}", "application/json"},
	} {
		f.Add([]byte(seed.body), seed.contentType)
	}

	srv, err := New(Config{MaxBody: 4096})
	if err != nil {
		f.Fatal(err)
	}
	srv.client = &http.Client{Transport: noNetwork{}}
	f.Cleanup(srv.Close)
	h := srv.Handler()

	post := func(t *testing.T, body []byte, contentType string) (int, []byte) {
		req := httptest.NewRequest(http.MethodPost, PathPurchaseOrders, bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if mt, _, err := mime.ParseMediaType(rec.Header().Get("Content-Type")); err != nil || mt != "application/json" {
			t.Fatalf("answer %d with Content-Type %q, want application/json", rec.Code, rec.Header().Get("Content-Type"))
		}
		return rec.Code, rec.Body.Bytes()
	}

	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		status, answer := post(t, body, contentType)
		switch {
		case status == http.StatusAccepted || status == http.StatusOK:
			var res POResponse
			if err := json.Unmarshal(answer, &res); err != nil {
				t.Fatalf("answer %d is not a POResponse: %v: %s", status, err, answer)
			}
			if want := map[int]string{http.StatusAccepted: StatusAccepted, http.StatusOK: StatusDuplicate}[status]; res.Status != want {
				t.Fatalf("answer %d with status %q, want %q", status, res.Status, want)
			}
			// Only a strictly valid PO is taken.
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			var po PO
			if err := dec.Decode(&po); err != nil {
				t.Fatalf("took a body that does not decode: %v: %q", err, body)
			}
			if err := po.Validate(); err != nil {
				t.Fatalf("took an invalid PO: %v: %q", err, body)
			}
			// Sent again, it is a duplicate: never scheduled twice.
			if again, answer := post(t, body, contentType); again != http.StatusOK {
				t.Fatalf("the same PO sent again: %d %s, want 200 duplicate", again, answer)
			}
		case status >= 400 && status <= 499:
			var res ErrorResponse
			if err := json.Unmarshal(answer, &res); err != nil || res.Error == "" {
				t.Fatalf("answer %d is not an ErrorResponse (%v): %s", status, err, answer)
			}
		default:
			t.Fatalf("answer %d to %q (%q): want 202, 200 or a 4xx", status, body, contentType)
		}
	})
}
