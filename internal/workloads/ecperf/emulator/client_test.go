package emulator

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNewClientValidatesTheBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		ok   bool
		base string
	}{
		{"http://127.0.0.1:8099", true, "http://127.0.0.1:8099"},
		{"https://emu.example:443/", true, "https://emu.example:443"},
		{"http://gateway/emulator/", true, "http://gateway/emulator"},
		{"", false, ""},
		{"127.0.0.1:8099", false, ""},
		{"ftp://emu/", false, ""},
		{"http://", false, ""},
		{"http://emu/?x=1", false, ""},
		{"http://emu/#top", false, ""},
		{"http://emu:port", false, ""},
	}
	for _, tt := range tests {
		c, err := NewClient(tt.url, nil)
		switch {
		case tt.ok && (err != nil || c.base != tt.base):
			t.Errorf("NewClient(%q): %v, want base %q", tt.url, err, tt.base)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), "want an absolute http(s) URL")):
			t.Errorf("NewClient(%q): %v, want an error", tt.url, err)
		}
	}
}

func TestClientUnderAPathPrefix(t *testing.T) {
	t.Parallel()
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(http.StripPrefix("/emulator", srv.Handler()))
	defer hs.Close()
	c, err := NewClient(hs.URL+"/emulator/", nil)
	if err != nil {
		t.Fatal(err)
	}
	po := PO{Run: "r", PONumber: 1, Lines: []POLine{{Line: 1, PartID: "P", Qty: 1, LeadTime: 100}}, DeliverTo: "http://127.0.0.1:1/"}
	if got, err := c.Send(context.Background(), po); err != nil || got != StatusAccepted {
		t.Errorf("Send = %q, %v", got, err)
	}
	if st, err := c.Stats(context.Background()); err != nil || st.Accepted != 1 {
		t.Errorf("Stats = %+v, %v", st, err)
	}
}

// A 5xx or a connection failure is transient (retry); a 4xx is final.
func TestClientTellsTransientFromRejected(t *testing.T) {
	t.Parallel()
	po := PO{Run: "r", PONumber: 1}
	tests := []struct {
		name     string
		status   int
		body     string
		rejected bool
		want     string
	}{
		{"server error", 500, `{"error":"database on fire"}`, false, "500 Internal Server Error: database on fire"},
		{"unavailable, text body", 503, "try later\n", false, "503 Service Unavailable: try later"},
		{"bad request", 400, `{"error":"po_number is 0, want > 0"}`, true, "(400 Bad Request): po_number is 0"},
		{"conflict", 409, `{"error":"no"}`, true, "(409 Conflict): no"},
		{"unexpected status", 201, `{"status":"accepted"}`, false, `answered 201 with status "accepted"`},
		{"lying status", 202, `{"status":"duplicate"}`, false, `answered 202 with status "duplicate"`},
		{"not JSON", 202, `accepted`, false, "decode the answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer hs.Close()
			c, err := NewClient(hs.URL, hs.Client())
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Send(context.Background(), po)
			var re *RejectedError
			if err == nil || errors.As(err, &re) != tt.rejected || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Send: %v (rejected %v), want rejected=%v naming %q", err, re != nil, tt.rejected, tt.want)
			}
			if re != nil && re.Status != tt.status {
				t.Errorf("RejectedError.Status %d, want %d", re.Status, tt.status)
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, _ := NewClient("http://"+addr, nil)
		_, err = c.Send(context.Background(), po)
		var re *RejectedError
		if err == nil || errors.As(err, &re) {
			t.Errorf("Send to a closed port: %v, want a transient error", err)
		}
	})
}
