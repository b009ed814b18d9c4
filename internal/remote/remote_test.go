package remote

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// serve starts a Ping tier of protocol p on a loopback port; it stops with
// the test.
func serve(t testing.TB, p Protocol, o ServerOptions) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(p, o)
	RegisterPing(s)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Stop(ctx)
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func dial(t testing.TB, p Protocol, addr string, o DialOptions) (*Conn, pingpb.PingClient) {
	t.Helper()
	c, err := Dial(p, addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, pingpb.NewPingClient(c)
}

// wireBytes is what a message costs on the wire under p: protobuf behind
// gRPC's 5-byte frame prefix, behind a lean frame's 4-byte length, or its
// JSON.
func wireBytes(t *testing.T, p Protocol, m proto.Message) int64 {
	switch p {
	case GRPC:
		return int64(proto.Size(m) + 5)
	case Lean:
		return int64(proto.Size(m) + leanPrefix)
	}
	b, err := jsonOut.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

// TestCallsAndCounts: replies come back whole on both protocols, and each
// call is counted once, with its messages' bytes each way, into the
// context's Meter (a call without one counts nowhere); the bean's own time
// is reported apart from the call's.
func TestCallsAndCounts(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			_, ping := dial(t, p, serve(t, p, ServerOptions{}), DialOptions{Conns: 2})
			var m Meter
			ctx := WithMeter(context.Background(), &m)
			if _, err := ping.Empty(ctx, &pingpb.EmptyRequest{}); err != nil {
				t.Fatal(err)
			}
			req := &pingpb.Payload{Data: bytes.Repeat([]byte("tier"), 1000), SleepUs: 20000}
			got, err := ping.Echo(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, req) {
				t.Fatalf("echo: %d bytes, want %d", len(got.Data), len(req.Data))
			}
			if _, err := ping.Empty(context.Background(), &pingpb.EmptyRequest{}); err != nil {
				t.Fatal(err)
			}
			c := m.Counts()
			empty := wireBytes(t, p, &pingpb.EmptyRequest{})
			wantBytes := empty + wireBytes(t, p, req)
			if c.Calls != 2 || c.Failed != 0 || c.BytesOut != wantBytes || c.BytesIn != wantBytes {
				t.Errorf("meter %+v, want 2 calls, %d bytes each way", c, wantBytes)
			}
			if c.Bean < 20*time.Millisecond || c.Call < c.Bean || c.Layer() <= 0 {
				t.Errorf("bean %v, call %v: want the bean's 20 ms sleep reported, inside the call", c.Bean, c.Call)
			}
		})
	}
}

// TestErrorsCrossTheLayer: a bean's status (code, message, details) is
// what the caller reads on either protocol, and the call counts as failed.
func TestErrorsCrossTheLayer(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			_, ping := dial(t, p, serve(t, p, ServerOptions{}), DialOptions{})
			var m Meter
			ctx := WithMeter(context.Background(), &m)
			_, err := ping.Fail(ctx, &pingpb.FailRequest{Code: int32(codes.FailedPrecondition), Message: "Sorry, the bid is too low", Detail: []byte("PutBid")})
			st, ok := status.FromError(err)
			if !ok || st.Code() != codes.FailedPrecondition || st.Message() != "Sorry, the bid is too low" {
				t.Fatalf("error %v, want FailedPrecondition with the bean's message", err)
			}
			d := st.Details()
			if len(d) != 1 {
				t.Fatalf("details %v, want the bean's one", d)
			}
			if pl, ok := d[0].(*pingpb.Payload); !ok || string(pl.Data) != "PutBid" {
				t.Errorf("detail %v, want the Payload PutBid", d[0])
			}
			if c := m.Counts(); c.Calls != 1 || c.Failed != 1 {
				t.Errorf("meter %+v, want 1 call, failed", c)
			}
		})
	}
}

// TestDeadlines: a caller's deadline ends its call as DeadlineExceeded on
// both protocols, and a bean's bare context error reaches the caller as
// gRPC's server reports it.
func TestDeadlines(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			_, ping := dial(t, p, serve(t, p, ServerOptions{}), DialOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := ping.Echo(ctx, &pingpb.Payload{SleepUs: 2_000_000})
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("a call past its deadline: %v, want DeadlineExceeded", err)
			}
		})
	}
	for err, want := range map[error]codes.Code{context.Canceled: codes.Canceled, context.DeadlineExceeded: codes.DeadlineExceeded,
		status.Error(codes.NotFound, "x"): codes.NotFound, errors.New("x"): codes.Unknown} {
		if got := statusOf(err).Code(); got != want {
			t.Errorf("statusOf(%v) = %v, want %v", err, got, want)
		}
	}
}

// TestToken: a tier with a token answers only callers that send it.
func TestToken(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			addr := serve(t, p, ServerOptions{Token: "s3cret"})
			for _, tc := range []struct {
				token string
				want  codes.Code
			}{{"", codes.Unauthenticated}, {"wrong", codes.Unauthenticated}, {"s3cret", codes.OK}} {
				_, ping := dial(t, p, addr, DialOptions{Token: tc.token})
				_, err := ping.Empty(context.Background(), &pingpb.EmptyRequest{})
				if got := status.Code(err); got != tc.want {
					t.Errorf("token %q: %v, want %v", tc.token, err, tc.want)
				}
			}
		})
	}
}

// TestTierGone: a tier that is not there, or that accepted the connection
// and never answers, is an error, not a hang.
func TestTierGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	for _, p := range Protocols {
		t.Run(string(p)+"/refused", func(t *testing.T) {
			t.Parallel()
			_, ping := dial(t, p, gone, DialOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := ping.Empty(ctx, &pingpb.EmptyRequest{})
			if status.Code(err) != codes.Unavailable {
				t.Errorf("call to a closed port: %v, want Unavailable", err)
			}
		})
	}
	// Accepts, reads, never answers: a stopped process.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	for _, p := range Protocols {
		t.Run(string(p)+"/mute", func(t *testing.T) {
			_, ping := dial(t, p, mute.Addr().String(), DialOptions{Timeout: 300 * time.Millisecond})
			start := time.Now()
			_, err := ping.Empty(context.Background(), &pingpb.EmptyRequest{})
			if took := time.Since(start); status.Code(err) != codes.DeadlineExceeded || took < 300*time.Millisecond || took > 5*time.Second {
				t.Errorf("call to a mute tier: %v after %v, want DeadlineExceeded at the 300 ms timeout", err, took)
			}
		})
	}
}

// TestNotATier: an HTTP server that is not a tier answers; the caller says
// what it got.
func TestNotATier(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, ping := dial(t, HTTP, ln.Addr().String(), DialOptions{})
	_, err = ping.Empty(context.Background(), &pingpb.EmptyRequest{})
	if status.Code(err) != codes.Unknown || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("call to a plain web server: %v, want Unknown naming HTTP 404", err)
	}
	// The lean protocol's frame read from an HTTP answer (net/http would
	// wait for the end of a request line the lean request has not).
	http400, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { http400.Close() })
	go func() {
		for {
			c, err := http400.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	_, ping = dial(t, Lean, http400.Addr().String(), DialOptions{})
	_, err = ping.Empty(context.Background(), &pingpb.EmptyRequest{})
	if status.Code(err) != codes.Unknown || !strings.Contains(err.Error(), "no lean tier") {
		t.Errorf("lean call to a plain web server: %v, want Unknown saying it is no lean tier", err)
	}
}

// TestCancel: a caller that cancels its call gets Canceled at once, not
// when the bean is done, on every protocol; the connection serves the
// next call (a new one where the cancelled one could not be reused).
// (Over lean the bean itself runs on to its end or its deadline: the tier
// does not watch a connection while its bean runs; Stop waits for it.)
func TestCancel(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			_, ping := dial(t, p, serve(t, p, ServerOptions{}), DialOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			_, err := ping.Echo(ctx, &pingpb.Payload{SleepUs: 1_000_000})
			if took := time.Since(start); status.Code(err) != codes.Canceled || took > 500*time.Millisecond {
				t.Errorf("a cancelled call: %v after %v, want Canceled at once", err, took)
			}
			if _, err := ping.Empty(context.Background(), &pingpb.EmptyRequest{}); err != nil {
				t.Errorf("the call after a cancelled one: %v", err)
			}
		})
	}
}

// TestStopLetsCallsFinish: a server told to stop answers the calls under
// way before it closes, on every protocol.
func TestStopLetsCallsFinish(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s := NewServer(p, ServerOptions{})
			RegisterPing(s)
			served := make(chan error, 1)
			go func() { served <- s.Serve(ln) }()
			_, ping := dial(t, p, ln.Addr().String(), DialOptions{})
			if _, err := ping.Empty(context.Background(), &pingpb.EmptyRequest{}); err != nil {
				t.Fatal(err)
			}
			replied := make(chan error, 1)
			go func() {
				_, err := ping.Echo(context.Background(), &pingpb.Payload{SleepUs: 300_000})
				replied <- err
			}()
			time.Sleep(100 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.Stop(ctx)
			if err := <-replied; err != nil {
				t.Errorf("the call under way when the server stopped: %v, want its reply", err)
			}
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
}

func TestParseProtocol(t *testing.T) {
	for _, p := range Protocols {
		if got, err := ParseProtocol(string(p)); err != nil || got != p {
			t.Errorf("ParseProtocol(%q) = %q, %v", p, got, err)
		}
	}
	if _, err := ParseProtocol("rmi"); err == nil || !strings.Contains(err.Error(), "http, grpc") {
		t.Errorf("ParseProtocol(rmi): %v, want the accepted values named", err)
	}
}

// BenchmarkEmptyCall: one empty call on loopback, caller and tier on the
// same cores; allocs/op counts both sides (BenchmarkEmptyCallClient puts
// the tier in a child process and counts the caller alone).
func BenchmarkEmptyCall(b *testing.B) {
	for _, p := range Protocols {
		b.Run(string(p), func(b *testing.B) {
			_, ping := dial(b, p, serve(b, p, ServerOptions{}), DialOptions{})
			var m Meter
			ctx := WithMeter(context.Background(), &m)
			req := &pingpb.EmptyRequest{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ping.Empty(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestConnMeter: a connection's own meter counts the calls whose context
// carries none (a bean's calls to the next tier), and only those; the
// readiness call of DialReady is not one of them.
func TestConnMeter(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			var connMeter, ctxMeter Meter
			c, err := DialReady(context.Background(), p, serve(t, p, ServerOptions{}), DialOptions{Meter: &connMeter})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ping := pingpb.NewPingClient(c)
			for range 3 {
				if _, err := ping.Empty(context.Background(), &pingpb.EmptyRequest{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := ping.Empty(WithMeter(context.Background(), &ctxMeter), &pingpb.EmptyRequest{}); err != nil {
				t.Fatal(err)
			}
			if got, want := connMeter.Counts(), (Counts{Calls: 3, BytesOut: 3 * wireBytes(t, p, &pingpb.EmptyRequest{}), BytesIn: 3 * wireBytes(t, p, &pingpb.EmptyReply{})}); got.Calls != want.Calls || got.BytesOut != want.BytesOut || got.BytesIn != want.BytesIn {
				t.Errorf("the connection's meter: %+v, want 3 calls, %d B out, %d B in", got, want.BytesOut, want.BytesIn)
			}
			if got := ctxMeter.Counts(); got.Calls != 1 {
				t.Errorf("the context's meter: %d calls, want 1", got.Calls)
			}
		})
	}
}
