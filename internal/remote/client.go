package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tierbench/tierbench/internal/store"
)

// DialOptions configure a Conn.
type DialOptions struct {
	// Token is sent with every call (the server's --token-file).
	Token string
	// Conns: HTTP keeps up to this many connections open (a call needs
	// one to itself); gRPC opens this many HTTP/2 connections and spreads
	// the calls over them. At least 1; size it by the caller's server
	// threads, which bound its calls in flight.
	Conns int
	// Timeout bounds a call whose context has no deadline of its own
	// (0: DefaultTimeout). gRPC also pings a connection with calls in
	// flight, and fails them when the tier stops answering the pings.
	Timeout time.Duration
	// Meter, when set, counts the calls whose context carries none: the
	// calls a tier's beans make to the next tier (a facade over remote
	// entity beans), whose contexts are the server's.
	Meter *Meter
}

// keepaliveTime: a gRPC connection with calls in flight and nothing read
// for this long is pinged; no answer within keepaliveTimeout closes it and
// fails its calls (Unavailable).
const (
	keepaliveTime    = 10 * time.Second
	keepaliveTimeout = 5 * time.Second
)

// Conn is a connection to a tier: a grpc.ClientConnInterface, so the
// generated clients call through it on either protocol.
type Conn struct {
	target  string
	timeout time.Duration
	meter   *Meter // of calls whose context has none

	// gRPC
	grpcs []*grpc.ClientConn
	next  atomic.Uint32

	// HTTP
	base   string // http://host:port
	client *http.Client
	auth   string
	// replies are buffers the HTTP replies are read into. Not the
	// requests': net/http may still read a request body after Do returns.
	replies sync.Pool

	// lean
	lean *leanPool
}

// Dial connects to the tier at hostport over protocol p (a tier's URL
// gives both: ParseURL). gRPC connects lazily; the first call reports a
// tier that is not there.
func Dial(p Protocol, hostport string, o DialOptions) (*Conn, error) {
	o.Conns = max(o.Conns, 1)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if path, ok := strings.CutPrefix(hostport, UnixPrefix); ok {
		if p != Lean || path == "" {
			return nil, fmt.Errorf("tier address %q: a Unix-domain socket (unix:PATH) is the lean protocol's", hostport)
		}
	} else if _, _, err := net.SplitHostPort(hostport); err != nil {
		return nil, fmt.Errorf("tier address %q: want host:port: %v", hostport, err)
	}
	c := &Conn{target: hostport, timeout: o.Timeout, meter: o.Meter}
	switch p {
	case GRPC:
		opts := []grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithStatsHandler(callStats{}),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes)),
		}
		if o.Token != "" {
			opts = append(opts, grpc.WithPerRPCCredentials(bearer{md: map[string]string{tokenKey: "Bearer " + o.Token}}))
		}
		for range o.Conns {
			cc, err := grpc.NewClient("passthrough:///"+hostport, opts...)
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("tier %s: %w", hostport, err)
			}
			c.grpcs = append(c.grpcs, cc)
		}
	case HTTP:
		c.base = "http://" + hostport
		c.client = &http.Client{
			Transport: &http.Transport{
				Proxy:               nil, // tiers talk directly, whatever the environment says
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConns:        o.Conns,
				MaxIdleConnsPerHost: o.Conns,
				IdleConnTimeout:     90 * time.Second,
				DisableCompression:  true,
			},
		}
		if o.Token != "" {
			c.auth = "Bearer " + o.Token
		}
	case Lean:
		c.lean = newLeanPool(hostport, o.Token, o.Conns, o.Timeout)
	default:
		_, err := ParseProtocol(string(p))
		return nil, err
	}
	return c, nil
}

// Close closes c's connections.
func (c *Conn) Close() error {
	var errs []error
	for _, cc := range c.grpcs {
		errs = append(errs, cc.Close())
	}
	if c.client != nil {
		c.client.CloseIdleConnections()
	}
	if c.lean != nil {
		c.lean.close()
	}
	return errors.Join(errs...)
}

// Invoke makes one call: what a generated client's method does.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	// The lean protocol bounds a call without a deadline by its socket's
	// (roundTrip), without a context of its own.
	if _, ok := ctx.Deadline(); !ok && c.lean == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	m := meterOf(ctx)
	if m == nil && c.meter != nil {
		// gRPC's stats handler reads the meter from the context.
		m = c.meter
		ctx = WithMeter(ctx, m)
	}
	start := time.Now()
	var err error
	switch {
	case c.grpcs != nil:
		cc := c.grpcs[0]
		if len(c.grpcs) > 1 {
			cc = c.grpcs[c.next.Add(1)%uint32(len(c.grpcs))]
		}
		if _, at := carriedPosition(ctx); at > 0 {
			// What comes back, callStats reads from the trailer.
			ctx = metadata.AppendToOutgoingContext(ctx, positionKey, store.FormatLSN(at))
		}
		err = cc.Invoke(ctx, method, args, reply, opts...)
	case c.lean != nil:
		err = c.lean.invoke(ctx, m, method, args.(proto.Message), reply.(proto.Message))
	default:
		err = c.invokeHTTP(ctx, m, method, args.(proto.Message), reply.(proto.Message))
	}
	if m != nil {
		m.done(time.Since(start), err)
	}
	return err
}

// NewStream: the tiers' interfaces are unary calls, as remote EJB calls
// are; streams go over gRPC only.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if c.grpcs == nil {
		return nil, status.Errorf(codes.Unimplemented, "%s: streams are carried over the grpc protocol only", method)
	}
	return c.grpcs[0].NewStream(ctx, desc, method, opts...)
}

func (c *Conn) invokeHTTP(ctx context.Context, m *Meter, method string, args, reply proto.Message) error {
	out, err := jsonOut.Marshal(args)
	if err != nil {
		return status.Errorf(codes.Internal, "%s: request: %v", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader(out))
	if err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.auth != "" {
		req.Header.Set(tokenKey, c.auth)
	}
	t, carried := carriedPosition(ctx)
	if carried > 0 {
		req.Header.Set(positionKey, store.FormatLSN(carried))
	}
	count := func(in int64) {
		if m != nil {
			m.bytes(int64(len(out)), in)
		}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		count(0)
		return c.transportError(ctx, method, err)
	}
	defer resp.Body.Close()
	if t != nil {
		if v := resp.Header.Get(positionKey); v != "" {
			t.Advance(parsePosition(v))
		}
	}
	buf, _ := c.replies.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer c.replies.Put(buf)
	buf.Reset()
	if resp.ContentLength > 0 && resp.ContentLength <= maxMessageBytes {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, maxMessageBytes+1))
	count(n)
	if ns, perr := strconv.ParseInt(resp.Header.Get(beanTimeKey), 10, 64); perr == nil && m != nil {
		m.beanNanos.Add(ns)
	}
	if err != nil {
		return c.transportError(ctx, method, fmt.Errorf("reply cut off: %w", err))
	}
	if n > maxMessageBytes {
		return status.Errorf(codes.ResourceExhausted, "%s on %s: reply larger than %d bytes", method, c.target, maxMessageBytes)
	}
	if resp.StatusCode != http.StatusOK {
		var st spb.Status
		if jsonIn.Unmarshal(buf.Bytes(), &st) != nil || st.Code == 0 {
			// Not a tier's answer: something else on that address.
			return status.Errorf(codes.Unknown, "%s on %s: HTTP %s: %.200s", method, c.target, resp.Status, buf.Bytes())
		}
		return status.ErrorProto(&st)
	}
	if err := jsonIn.Unmarshal(buf.Bytes(), reply); err != nil {
		return status.Errorf(codes.Internal, "%s on %s: reply: %v", method, c.target, err)
	}
	return nil
}

// transportError is the status of a call that got no whole answer: the
// caller's deadline or cancellation as gRPC reports them, else the tier
// unreachable.
func (c *Conn) transportError(ctx context.Context, method string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	return status.Errorf(codes.Unavailable, "%s on %s: %v", method, c.target, err)
}

// callStats counts a gRPC call's bytes and the bean time its trailer
// reports into the call's Meter.
type callStats struct{}

func (callStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (callStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (callStats) HandleConn(context.Context, stats.ConnStats)                       {}

func (callStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if tr, ok := s.(*stats.InTrailer); ok {
		// The position the call's writes moved its caller's terminal to.
		if v := tr.Trailer.Get(positionKey); len(v) == 1 {
			if t := store.TerminalOf(ctx); t != nil {
				t.Advance(parsePosition(v[0]))
			}
		}
	}
	m := meterOf(ctx)
	if m == nil {
		return
	}
	switch s := s.(type) {
	case *stats.OutPayload:
		m.bytes(int64(s.WireLength), 0)
	case *stats.InPayload:
		m.bytes(0, int64(s.WireLength))
	case *stats.InTrailer:
		if v := s.Trailer.Get(beanTimeKey); len(v) == 1 {
			if ns, err := strconv.ParseInt(v[0], 10, 64); err == nil {
				m.beanNanos.Add(ns)
			}
		}
	}
}

// bearer sends the token with each gRPC call.
type bearer struct{ md map[string]string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return b.md, nil
}
func (bearer) RequireTransportSecurity() bool { return false }
