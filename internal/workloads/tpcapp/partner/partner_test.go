package partner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseDelay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Delay
		bad  bool
	}{
		{in: "none", want: Delay{Kind: NoDelay}},
		{in: "0", want: Delay{Kind: NoDelay}},
		{in: "fixed:500ms", want: Delay{Kind: FixedDelay, Mean: 500 * time.Millisecond}},
		{in: "negexp:1s", want: Delay{Kind: NegExpDelay, Mean: time.Second}},
		{in: "uniform:100ms-300ms", want: Delay{Kind: UniformDelay, Min: 100 * time.Millisecond, Max: 300 * time.Millisecond, Mean: 200 * time.Millisecond}},
		{in: "fixed", bad: true},
		{in: "fixed:-1s", bad: true},
		{in: "uniform:300ms-100ms", bad: true},
		{in: "uniform:100ms", bad: true},
		{in: "gauss:1s", bad: true},
	} {
		got, err := ParseDelay(c.in)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "want none, fixed:DURATION") {
				t.Errorf("ParseDelay(%q) = %v, %v; want an error naming what is allowed", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseDelay(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := ParseDelay(got.String()); err != nil || back != got {
			t.Errorf("ParseDelay(%q.String() = %q) = %+v, %v", c.in, got.String(), back, err)
		}
	}
}

func TestDelayDrawsStayInTheirRange(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	u := Delay{Kind: UniformDelay, Min: 10 * time.Millisecond, Max: 20 * time.Millisecond}
	e := Delay{Kind: NegExpDelay, Mean: 10 * time.Millisecond}
	var sum time.Duration
	const n = 20000
	for range n {
		if d := u.Draw(rng); d < u.Min || d > u.Max {
			t.Fatalf("uniform draw %v outside [%v, %v]", d, u.Min, u.Max)
		}
		d := e.Draw(rng)
		if d < 0 || d > negExpTruncate*e.Mean {
			t.Fatalf("negexp draw %v outside [0, %v]", d, negExpTruncate*e.Mean)
		}
		sum += d
	}
	// The truncation at 5× removes e^-5 ≈ 0.7% of the mass's tail: the mean
	// stays within a few percent of Mean.
	if mean := sum / n; mean < 9*time.Millisecond || mean > 11*time.Millisecond {
		t.Errorf("negexp mean %v, want about %v", mean, e.Mean)
	}
	if d := (Delay{Kind: FixedDelay, Mean: time.Second}).Draw(rng); d != time.Second {
		t.Errorf("fixed draw %v", d)
	}
}

// serve starts a partner on a loopback port and returns its client.
func serve(t *testing.T, cfg Config) (*Server, *Client) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	c, err := NewClient(cfg.Kind, "http://"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

func ratio(r float64) *float64 { return &r }

func TestDecisionsFollowTheApprovalRatio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, kind := range []Kind{POV, PGE} {
		srv, c := serve(t, Config{Kind: kind, Delay: Delay{Kind: NoDelay}, Approve: ratio(0.7)})
		var approved, declined int64
		for i := range 200 {
			var err error
			var key string
			if kind == POV {
				key = fmt.Sprintf("PO-%d", i)
				_, err = c.Verify(ctx, VerifyRequest{POID: key, Customer: "c"})
			} else {
				req := AuthorizeRequest{CardNumber: "4111111111111111", Reference: fmt.Sprintf("order-%d", i), AmountCents: 100}
				key = authorizeKey(req)
				_, err = c.Authorize(ctx, req)
			}
			want := Approves(key, 0.7)
			switch {
			case err == nil && want:
				approved++
			case errors.Is(err, ErrDeclined) && !want:
				declined++
			default:
				t.Fatalf("%s key %q: err %v, want approved %v", kind, key, err, want)
			}
		}
		if approved < 120 || approved > 160 {
			t.Errorf("%s approved %d of 200 at ratio 0.7", kind, approved)
		}
		st := srv.Stats()
		if st.Requests != 200 || st.Approved != approved || st.Declined != declined || st.Failed != 0 || st.Rejected != 0 {
			t.Errorf("%s stats %+v, want 200 requests, %d approved, %d declined", kind, st, approved, declined)
		}
		remote, err := c.Stats(ctx)
		if err != nil || remote != st {
			t.Errorf("%s stats over HTTP %+v, %v; want %+v", kind, remote, err, st)
		}
	}
}

func TestICEAcceptsEachReorderOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, c := serve(t, Config{Kind: ICE, Delay: Delay{Kind: NoDelay}})
	for i, id := range []int64{1, 2, 1, 2, 1} {
		res, err := c.Reorder(ctx, ReorderRequest{Run: "r", ReorderID: id, ItemID: 7, Quantity: 10})
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 2; res.Duplicate != want {
			t.Errorf("reorder %d (call %d): duplicate %v, want %v", id, i, res.Duplicate, want)
		}
	}
	// Another run's reorder 1 is a reorder of its own.
	if res, err := c.Reorder(ctx, ReorderRequest{Run: "other", ReorderID: 1, ItemID: 7, Quantity: 10}); err != nil || res.Duplicate {
		t.Errorf("another run's reorder 1: %+v, %v", res, err)
	}
	if st := srv.Stats(); st.Requests != 6 || st.Approved != 3 || st.Duplicates != 3 {
		t.Errorf("stats %+v, want 6 requests: 3 first times, 3 duplicates", st)
	}
}

func TestFailRateAnswers503WithoutEffect(t *testing.T) {
	t.Parallel()
	srv, c := serve(t, Config{Kind: ICE, Delay: Delay{Kind: NoDelay}, FailRate: 1})
	_, err := c.Reorder(context.Background(), ReorderRequest{Run: "r", ReorderID: 1, ItemID: 1, Quantity: 1})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || !strings.Contains(se.Message, "--fail-rate") {
		t.Fatalf("err %v, want a 503 naming --fail-rate", err)
	}
	if st := srv.Stats(); st.Failed != 1 || st.Requests != 0 || st.Approved != 0 {
		t.Errorf("stats %+v, want 1 failed and nothing else", st)
	}
}

func TestDelayIsWaitedThrough(t *testing.T) {
	t.Parallel()
	_, c := serve(t, Config{Kind: POV, Delay: Delay{Kind: FixedDelay, Mean: 80 * time.Millisecond}, Approve: ratio(1)})
	began := time.Now()
	if _, err := c.Verify(context.Background(), VerifyRequest{POID: "x"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 80*time.Millisecond {
		t.Errorf("a call to a partner with a fixed 80ms delay took %v", took)
	}
}

func TestBadRequestsGet4xx(t *testing.T) {
	t.Parallel()
	srv, err := New(Config{Kind: PGE, Delay: Delay{Kind: NoDelay}, MaxBody: 256})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	for _, c := range []struct {
		method, path, ctype, body string
		status                    int
	}{
		{"POST", PathAuthorize, "application/json", `{`, 400},
		{"POST", PathAuthorize, "application/json", `{"card_number":"1","reference":"r","bogus":1}`, 400},
		{"POST", PathAuthorize, "application/json", `{"card_number":"1","reference":"r"} {}`, 400},
		{"POST", PathAuthorize, "text/xml", `<a/>`, 415},
		{"POST", PathAuthorize, "application/json", `{"card_number":"` + strings.Repeat("9", 300) + `"}`, 413},
		{"POST", PathAuthorize, "application/json", `{"card_number":"","reference":"r"}`, 422},
		{"POST", PathAuthorize, "application/json", `{"card_number":"1","reference":"r","amount_cents":-5}`, 422},
		{"POST", PathVerify, "application/json", `{"po_id":"1"}`, 404},
		{"GET", PathAuthorize, "", ``, 405},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), `"error"`) {
			t.Errorf("%s %s %q: %d %s, want %d with an error", c.method, c.path, c.body, rec.Code, rec.Body, c.status)
		}
	}
	if st := srv.Stats(); st.Requests != 0 || st.Rejected < 8 {
		t.Errorf("stats %+v, want every request rejected", st)
	}
}

func FuzzPartnersSurviveAnyBody(f *testing.F) {
	f.Add("pov", `{"po_id":"1"}`)
	f.Add("pge", `{"card_number":"1","reference":"x","amount_cents":1}`)
	f.Add("ice", `{"run":"r","reorder_id":1,"item_id":1,"quantity":1}`)
	f.Add("ice", `{"run":"r","reorder_id":-1}`)
	f.Add("sne", `{"run":"r","order_id":1,"label":"iVBORw0KGgo="}`)
	f.Add("pge", "\x00\xff{")
	servers := map[Kind]http.Handler{}
	for _, k := range Kinds {
		srv, err := New(Config{Kind: k, Delay: Delay{Kind: NoDelay}})
		if err != nil {
			f.Fatal(err)
		}
		servers[k] = srv.Handler()
	}
	paths := map[Kind]string{POV: PathVerify, PGE: PathAuthorize, ICE: PathReorder, SNE: PathNotice}
	f.Fuzz(func(t *testing.T, kind, body string) {
		k, err := ParseKind(kind)
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", paths[k], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		servers[k].ServeHTTP(rec, req)
		if rec.Code != 200 && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("%s %q: status %d", k, body, rec.Code)
		}
	})
}

// tinyPNG is a 2 × 1 PNG, the smallest label SNE takes.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 1))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// SNE accepts each order's notice once per run, answers a notice sent
// again as a duplicate, keeps how many it received of each order, counts
// the labels' bytes, and refuses a label that is not a PNG image.
func TestSNEAcceptsEachNoticeOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, c := serve(t, Config{Kind: SNE, Delay: Delay{Kind: NoDelay}})
	label := tinyPNG(t)
	for i, id := range []int64{1, 2, 1, 3, 1} {
		res, err := c.Notify(ctx, NoticeRequest{Run: "r", OrderID: id, ShipType: "AIR", Lines: 2, Label: label})
		if err != nil {
			t.Fatal(err)
		}
		if want := id == 1 && i > 0; res.Duplicate != want {
			t.Errorf("notice of order %d (call %d): duplicate %v, want %v", id, i, res.Duplicate, want)
		}
	}
	if res, err := c.Notify(ctx, NoticeRequest{Run: "other", OrderID: 1, Label: label}); err != nil || res.Duplicate {
		t.Errorf("another run's order 1: %+v, %v", res, err)
	}
	_, err := c.Notify(ctx, NoticeRequest{Run: "r", OrderID: 4, Label: []byte("GIF89a not a png")})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnprocessableEntity || !strings.Contains(se.Message, "not a PNG") {
		t.Errorf("a GIF label: %v, want 422 saying it is not a PNG", err)
	}
	if got := srv.Notices("r"); !maps.Equal(got, map[int64]int{1: 3, 2: 1, 3: 1}) {
		t.Errorf("notices of run r: %v", got)
	}
	st := srv.Stats()
	if st.Requests != 6 || st.Approved != 4 || st.Duplicates != 2 || st.Rejected != 1 || st.LabelBytes != 6*int64(len(label)) {
		t.Errorf("stats %+v, want 6 notices: 4 first times, 2 again, 1 rejected, %d label bytes", st, 6*len(label))
	}
	if remote, err := c.Stats(ctx); err != nil || remote != st || remote.Counts()["label_bytes"] != st.LabelBytes {
		t.Errorf("stats over HTTP %+v, %v; want %+v", remote, err, st)
	}
}
