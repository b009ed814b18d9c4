package emulator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tierbench/tierbench/internal/jsonhttp"
)

// Client calls an emulator's HTTP API. It is safe for concurrent use.
type Client struct {
	base string // scheme://host[/prefix], no trailing slash
	hc   *http.Client
}

// RejectedError is a 4xx answer: the emulator refused the request as it
// is, so sending it again will not help.
type RejectedError struct {
	Status  int
	Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("emulator rejected the request (%d %s): %s", e.Status, http.StatusText(e.Status), e.Message)
}

// NewClient returns a Client of the emulator at baseURL, an absolute
// http(s) URL (a path prefix is allowed). hc nil means
// http.DefaultClient; bound each call with its context.
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("emulator: base URL %q, want an absolute http(s) URL without query, such as http://127.0.0.1:8099", baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), hc: hc}, nil
}

// Send sends po and returns StatusAccepted or StatusDuplicate. A 4xx
// answer is a *RejectedError; any other error (5xx, connection) is
// transient and the caller may send the PO again.
func (c *Client) Send(ctx context.Context, po PO) (string, error) {
	var res POResponse
	status, err := c.do(ctx, http.MethodPost, PathPurchaseOrders, po, &res)
	if err != nil {
		return "", fmt.Errorf("send purchase order %d: %w", po.PONumber, err)
	}
	want := map[int]string{http.StatusAccepted: StatusAccepted, http.StatusOK: StatusDuplicate}[status]
	if res.Status != want {
		return "", fmt.Errorf("send purchase order %d: emulator answered %d with status %q", po.PONumber, status, res.Status)
	}
	return res.Status, nil
}

// RunPurchaseOrders lists the POs received in run, by PO number.
func (c *Client) RunPurchaseOrders(ctx context.Context, run string) ([]POSummary, error) {
	var list []POSummary
	if _, err := c.do(ctx, http.MethodGet, RunPurchaseOrdersPath(run), nil, &list); err != nil {
		return nil, fmt.Errorf("list purchase orders of run %q: %w", run, err)
	}
	return list, nil
}

// Forget drops run's POs; those still pending are not delivered.
func (c *Client) Forget(ctx context.Context, run string) (ForgetResponse, error) {
	var res ForgetResponse
	if _, err := c.do(ctx, http.MethodDelete, RunPath(run), nil, &res); err != nil {
		return res, fmt.Errorf("forget run %q: %w", run, err)
	}
	return res, nil
}

// Stats returns the emulator's counters.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	if _, err := c.do(ctx, http.MethodGet, PathStats, nil, &st); err != nil {
		return st, fmt.Errorf("emulator stats: %w", err)
	}
	return st, nil
}

// do calls the emulator: a 4xx answer is a *RejectedError.
func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	status, err := jsonhttp.Call(ctx, c.hc, method, c.base+path, body, out)
	var se *jsonhttp.StatusError
	if errors.As(err, &se) {
		if se.Status >= 400 && se.Status <= 499 {
			return status, &RejectedError{Status: se.Status, Message: se.Message}
		}
		return status, fmt.Errorf("emulator answered %d %s: %s", se.Status, http.StatusText(se.Status), se.Message)
	}
	return status, err
}
