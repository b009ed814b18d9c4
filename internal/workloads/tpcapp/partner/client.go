package partner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tierbench/tierbench/internal/jsonhttp"
)

// ErrDeclined is POV's or PGE's business answer: the request was well
// formed and the partner said no.
var ErrDeclined = errors.New("declined")

// Client calls one partner. It is safe for concurrent use.
type Client struct {
	kind Kind
	base string
	hc   *http.Client
}

// NewClient returns a client of the partner of kind k at baseURL, an
// absolute http(s) URL. hc nil means http.DefaultClient; bound each call
// with its context.
func NewClient(k Kind, baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s URL %q: want an absolute http(s) URL such as http://127.0.0.1:8201", k, baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{kind: k, base: strings.TrimSuffix(u.String(), "/"), hc: hc}, nil
}

// URL is the partner's base URL.
func (c *Client) URL() string { return c.base }

// Verify asks POV; a decline is ErrDeclined.
func (c *Client) Verify(ctx context.Context, req VerifyRequest) (Decision, error) {
	return c.decision(ctx, PathVerify, req)
}

// Authorize asks PGE; a decline is ErrDeclined.
func (c *Client) Authorize(ctx context.Context, req AuthorizeRequest) (Decision, error) {
	return c.decision(ctx, PathAuthorize, req)
}

func (c *Client) decision(ctx context.Context, path string, req any) (Decision, error) {
	var d Decision
	if err := c.do(ctx, http.MethodPost, path, req, &d); err != nil {
		return d, err
	}
	if !d.Approved {
		return d, fmt.Errorf("%s: %w", c.kind, ErrDeclined)
	}
	return d, nil
}

// Reorder asks ICE to replenish; sending the same reorder again is safe.
func (c *Client) Reorder(ctx context.Context, req ReorderRequest) (ReorderResponse, error) {
	var res ReorderResponse
	err := c.do(ctx, http.MethodPost, PathReorder, req, &res)
	if err == nil && !res.Accepted {
		err = fmt.Errorf("%s did not accept reorder %d", c.kind, req.ReorderID)
	}
	return res, err
}

// Notify tells SNE that an order shipped; sending the same notice again is
// safe.
func (c *Client) Notify(ctx context.Context, req NoticeRequest) (NoticeResponse, error) {
	var res NoticeResponse
	err := c.do(ctx, http.MethodPost, PathNotice, req, &res)
	if err == nil && !res.Accepted {
		err = fmt.Errorf("%s did not accept the notice of order %d", c.kind, req.OrderID)
	}
	return res, err
}

// Stats reads the partner's counters.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := c.do(ctx, http.MethodGet, PathStats, nil, &st)
	return st, err
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Kind    Kind
	Status  int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered %d %s: %s", e.Kind, e.Status, http.StatusText(e.Status), e.Message)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := jsonhttp.Call(ctx, c.hc, method, c.base+path, body, out)
	var se *jsonhttp.StatusError
	if errors.As(err, &se) {
		return &StatusError{Kind: c.kind, Status: se.Status, Message: se.Message}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.kind, err)
	}
	return nil
}
