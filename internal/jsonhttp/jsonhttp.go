// Package jsonhttp is the JSON-over-HTTP plumbing the emulated partners
// share (ECperf's Supplier Emulator, TPC-App's POV, PGE and ICE): request
// bodies read strictly, answers and errors written as JSON, other methods
// refused with 405, and the client's call that reads an error's message
// back.
package jsonhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// ErrorBody is the body of every 4xx and 5xx answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// Allow answers 405 to every method but method, calling refused (when not
// nil) for each. (A method in the mux's pattern would leave the other
// methods to the catch-all's 404.)
func Allow(method string, h http.HandlerFunc, refused func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			if refused != nil {
				refused()
			}
			w.Header().Set("Allow", method)
			WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s, want %s", r.Method, r.URL.Path, method))
			return
		}
		h(w, r)
	}
}

// Write answers v as JSON with status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "want > 0" stays readable with curl
	enc.Encode(v)
}

// WriteError answers an ErrorBody with status.
func WriteError(w http.ResponseWriter, status int, msg string) {
	Write(w, status, ErrorBody{Error: msg})
}

// Decode reads one JSON value of at most max bytes into v, strictly: a
// JSON content type (when one is given), no unknown fields, nothing after
// the value. On error it returns the status to answer and a message that
// starts with what (e.g. "purchase order").
func Decode(w http.ResponseWriter, r *http.Request, max int64, what string, v any) (int, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return http.StatusUnsupportedMediaType, fmt.Errorf("%s: Content-Type %q, want application/json", what, ct)
		}
	}
	if r.ContentLength > max {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("%s: body of %d bytes, limit %d", what, r.ContentLength, max)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, max))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if extra := dec.Decode(new(json.RawMessage)); extra != io.EOF {
			err = extra
			if err == nil {
				err = fmt.Errorf("data after the %s", what)
			}
		}
	}
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Errorf("%s: body larger than the limit of %d bytes", what, tooBig.Limit)
	case errors.As(err, &syntax):
		return http.StatusBadRequest, fmt.Errorf("%s: malformed JSON at byte %d: %v", what, syntax.Offset, err)
	case errors.As(err, &typ):
		return http.StatusBadRequest, fmt.Errorf("%s: field %s is a JSON %s, want %s", what, typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return http.StatusBadRequest, fmt.Errorf("%s: empty body, want a JSON %s", what, what)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest, fmt.Errorf("%s: malformed JSON: unexpected end of the body", what)
	default:
		// Unknown fields and trailing data: encoding/json has no error type
		// for them; its message names the field.
		return http.StatusBadRequest, fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
	}
}

// StatusError is an answer outside 2xx, with its ErrorBody's message (or
// the body itself when it is not one).
type StatusError struct {
	Status  int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// HTTPStatus lets a result count the failure under its status.
func (e *StatusError) HTTPStatus() int { return e.Status }

// maxAnswer bounds what Call reads of an answer.
const maxAnswer = 16 << 20

// Call sends body as JSON (none when nil) to url and decodes a 2xx answer
// into out (discarded when nil); any other answer is a *StatusError. It
// returns the answer's status (0 when there was none). The connection is
// left reusable: the body is read to its end.
func Call(ctx context.Context, hc *http.Client, method, url string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read the answer (%s): %w", resp.Status, err)
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		var e ErrorBody
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return resp.StatusCode, &StatusError{Status: resp.StatusCode, Message: msg}
	}
	if out == nil {
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("decode the answer (%s): %w", resp.Status, err)
	}
	return resp.StatusCode, nil
}
