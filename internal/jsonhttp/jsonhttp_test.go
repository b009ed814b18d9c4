package jsonhttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type thing struct {
	N int `json:"n"`
}

// echo decodes a thing strictly and answers it back, or the error.
func echo() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/thing", Allow(http.MethodPost, func(w http.ResponseWriter, r *http.Request) {
		var t thing
		if status, err := Decode(w, r, 64, "thing", &t); err != nil {
			WriteError(w, status, err.Error())
			return
		}
		Write(w, http.StatusCreated, t)
	}, nil))
	return mux
}

// Every way a body can be wrong gets its status and a message naming it.
func TestDecodeRefusesBadBodies(t *testing.T) {
	srv := httptest.NewServer(echo())
	defer srv.Close()
	for _, c := range []struct {
		name, ctype, body string
		status            int
		says              string
	}{
		{"ok", "application/json", `{"n": 3}`, http.StatusCreated, ""},
		{"no content type", "", `{"n": 3}`, http.StatusCreated, ""},
		{"xml", "application/xml", `<n>3</n>`, http.StatusUnsupportedMediaType, "want application/json"},
		{"empty", "application/json", ``, http.StatusBadRequest, "empty body"},
		{"syntax", "application/json", `{"n": }`, http.StatusBadRequest, "malformed JSON at byte"},
		{"truncated", "application/json", `{"n": 3`, http.StatusBadRequest, "unexpected end"},
		{"type", "application/json", `{"n": "three"}`, http.StatusBadRequest, "field n is a JSON string"},
		{"unknown field", "application/json", `{"n": 3, "m": 4}`, http.StatusBadRequest, `unknown field "m"`},
		{"trailing", "application/json", `{"n": 3} {"n": 4}`, http.StatusBadRequest, "data after the thing"},
		{"too big", "application/json", `{"n": ` + strings.Repeat(" ", 100) + `3}`, http.StatusRequestEntityTooLarge, "limit 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/thing", strings.NewReader(c.body))
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e ErrorBody
			json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != c.status || !strings.Contains(e.Error, c.says) {
				t.Errorf("%d %q, want %d saying %q", resp.StatusCode, e.Error, c.status, c.says)
			}
		})
	}
}

func TestCallAndAllow(t *testing.T) {
	srv := httptest.NewServer(echo())
	defer srv.Close()
	ctx := context.Background()
	var got thing
	status, err := Call(ctx, srv.Client(), http.MethodPost, srv.URL+"/thing", thing{N: 7}, &got)
	if err != nil || status != http.StatusCreated || got.N != 7 {
		t.Errorf("Call: %d %+v %v, want 201 {7}", status, got, err)
	}
	status, err = Call(ctx, srv.Client(), http.MethodGet, srv.URL+"/thing", nil, &got)
	var se *StatusError
	if !errors.As(err, &se) || status != http.StatusMethodNotAllowed || !strings.Contains(se.Message, "want POST") {
		t.Errorf("GET on a POST resource: %d %v, want 405 saying want POST", status, err)
	}
}
