package remote

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tierbench/tierbench/internal/store"
)

// The lean protocol (decision 0030): the seed's "optimized calls" (JBoss's
// optimized invokers, JOnAS's Jeremie), protobuf frames on a persistent
// TCP connection, one call at a time per connection, and nothing else:
// no HTTP, no HTTP/2 streams, no per-call headers but the method, the
// deadline and the caller's commit position (position.go).
//
// A connection opens with the preface: "TBL2", then the token (uvarint
// length, bytes; empty when none). Then, for each call:
//
//	request: u32 length | uvarint timeout ns (0: none) | uvarint position (0: none) | uvarint len | method | request message
//	reply:   u32 length | code (1 byte, 0 = OK) | uvarint bean ns | uvarint position (0: unmoved) | reply message, or a google.rpc.Status
//
// Lengths are big-endian and count the bytes after them. (TBL1, before
// decision 0045, had no positions: a tier of either refuses the other's
// preface.)

const leanMagic = "TBL2"

// leanPrefix is a frame's length field.
const leanPrefix = 4

// leanHeaderMax bounds a frame's bytes beyond its message: the method,
// the timeout, the code, the bean time.
const leanHeaderMax = 1 << 10

// maxTokenBytes bounds the preface's token.
const maxTokenBytes = 4 << 10

// leanBufferBytes is a connection's read buffer, each side: a RUBiS
// page's reply (a few KB) arrives in one read.
const leanBufferBytes = 16 << 10

// leanPool is a caller's connections to one tier: a call takes an idle one
// or dials a new one, and gives it back when its reply has been read; up
// to Conns stay open idle, as HTTP's transport keeps them.
type leanPool struct {
	addr              string // HOST:PORT or unix:PATH, for errors
	network, dialAddr string
	token             string
	timeout           time.Duration // of a call whose context has no deadline
	idle              chan *leanConn
	dialer            net.Dialer
	closed            atomic.Bool
}

// leanConn is one connection of a pool, with its buffers.
type leanConn struct {
	c   net.Conn
	r   *bufio.Reader
	out []byte // the request frame being written
	in  []byte // the reply frame's bytes after its length
	hdr [4]byte
}

func newLeanPool(hostport, token string, conns int, timeout time.Duration) *leanPool {
	network, dialAddr := network(hostport)
	return &leanPool{addr: hostport, network: network, dialAddr: dialAddr, token: token, timeout: timeout, idle: make(chan *leanConn, conns),
		dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
}

func (p *leanPool) get(ctx context.Context) (*leanConn, error) {
	select {
	case lc := <-p.idle:
		return lc, nil
	default:
	}
	c, err := p.dialer.DialContext(ctx, p.network, p.dialAddr)
	if err != nil {
		return nil, err
	}
	lc := &leanConn{c: c, r: bufio.NewReaderSize(c, leanBufferBytes)}
	lc.out = append(lc.out, leanMagic...)
	lc.out = binary.AppendUvarint(lc.out, uint64(len(p.token)))
	lc.out = append(lc.out, p.token...)
	// The preface goes with the first request, in the same write.
	return lc, nil
}

// put keeps lc for the next call, or closes it when enough are idle or the
// pool is closed.
func (p *leanPool) put(lc *leanConn) {
	if !p.closed.Load() {
		select {
		case p.idle <- lc:
			return
		default:
		}
	}
	lc.c.Close()
}

func (p *leanPool) close() {
	p.closed.Store(true)
	for {
		select {
		case lc := <-p.idle:
			lc.c.Close()
		default:
			return
		}
	}
}

// longAgo is a deadline in the past: it ends a blocked read or write at
// once.
var longAgo = time.Unix(1, 0)

// invoke makes one call over a pooled connection.
func (p *leanPool) invoke(ctx context.Context, m *Meter, method string, args, reply proto.Message) error {
	lc, err := p.get(ctx)
	if err != nil {
		if m != nil {
			m.bytes(int64(proto.Size(args)+leanPrefix), 0)
		}
		return p.transportError(ctx, method, err)
	}
	t, carried := carriedPosition(ctx)
	code, bean, at, body, sent, err := lc.roundTrip(ctx, method, args, p.timeout, carried)
	if m != nil {
		// A message is counted with its frame's 4-byte length, as gRPC's
		// are with their 5-byte prefix: an empty message is not free.
		in := 0
		if err == nil {
			in = len(body) + leanPrefix
		}
		m.bytes(int64(sent+leanPrefix), int64(in))
		m.beanNanos.Add(bean)
	}
	if err != nil {
		// The connection's state is unknown (a reply may still come):
		// never reused.
		lc.c.Close()
		if errors.Is(err, errLeanFrame) {
			return status.Errorf(codes.Unknown, "%s on %s: %v", method, p.addr, err)
		}
		if errors.Is(err, errLeanTooLarge) {
			return status.Errorf(codes.ResourceExhausted, "%s on %s: %v", method, p.addr, err)
		}
		return p.transportError(ctx, method, err)
	}
	if t != nil && at > 0 {
		t.Advance(at)
	}
	var rerr error
	if code == codes.OK {
		if err := proto.Unmarshal(body, reply); err != nil {
			rerr = status.Errorf(codes.Internal, "%s on %s: reply: %v", method, p.addr, err)
		}
	} else {
		var st spb.Status
		if err := proto.Unmarshal(body, &st); err != nil {
			rerr = status.Errorf(codes.Internal, "%s on %s: error reply: %v", method, p.addr, err)
		} else {
			st.Code = int32(code)
			rerr = status.ErrorProto(&st)
		}
	}
	p.put(lc)
	return rerr
}

var (
	errLeanFrame    = errors.New("the answer is no lean tier's frame")
	errLeanTooLarge = fmt.Errorf("reply larger than %d bytes", maxMessageBytes)
)

// roundTrip writes the request, carrying the position carried, and reads
// its reply: the reply's code, the bean's time, the position it sent back
// (0: none), its message (valid until lc's next call), and the bytes of
// the request's message. A context without a deadline gets timeout's, on
// the socket alone.
func (lc *leanConn) roundTrip(ctx context.Context, method string, args proto.Message, timeout time.Duration, carried uint64) (code codes.Code, bean int64, at uint64, body []byte, sent int, err error) {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(timeout)
	}
	lc.c.SetDeadline(d)
	// A cancelled caller ends a blocked read at once, as on the other
	// protocols; the connection is then closed (invoke). A context that
	// cannot end (Background) needs no watch.
	if ctx.Done() != nil {
		c := lc.c
		stop := context.AfterFunc(ctx, func() { c.SetDeadline(longAgo) })
		defer stop()
	}
	left := max(int64(time.Until(d)), 1)

	start := len(lc.out) // after the preface of a new connection
	lc.out = append(lc.out, 0, 0, 0, 0)
	lc.out = binary.AppendUvarint(lc.out, uint64(left))
	lc.out = binary.AppendUvarint(lc.out, carried)
	lc.out = binary.AppendUvarint(lc.out, uint64(len(method)))
	lc.out = append(lc.out, method...)
	head := len(lc.out)
	if lc.out, err = (proto.MarshalOptions{}).MarshalAppend(lc.out, args); err != nil {
		lc.out = lc.out[:0]
		return 0, 0, 0, nil, 0, fmt.Errorf("request: %w", err)
	}
	sent = len(lc.out) - head
	binary.BigEndian.PutUint32(lc.out[start:], uint32(len(lc.out)-start-4))
	_, err = lc.c.Write(lc.out)
	lc.out = lc.out[:0]
	if err != nil {
		return 0, 0, 0, nil, sent, err
	}
	if _, err := io.ReadFull(lc.r, lc.hdr[:]); err != nil {
		return 0, 0, 0, nil, sent, err
	}
	n := int(binary.BigEndian.Uint32(lc.hdr[:]))
	if n < 2 {
		return 0, 0, 0, nil, sent, errLeanFrame
	}
	if n > maxMessageBytes+leanHeaderMax {
		// Over HTTP it would say HTTP/1.1: "HTTP" is 1.2 GB.
		if n > 2*maxMessageBytes {
			return 0, 0, 0, nil, sent, errLeanFrame
		}
		return 0, 0, 0, nil, sent, errLeanTooLarge
	}
	if cap(lc.in) < n {
		lc.in = make([]byte, n)
	}
	in := lc.in[:n]
	if _, err := io.ReadFull(lc.r, in); err != nil {
		return 0, 0, 0, nil, sent, err
	}
	ns, k := binary.Uvarint(in[1:])
	if k <= 0 || in[0] > byte(codes.Unauthenticated) {
		return 0, 0, 0, nil, sent, errLeanFrame
	}
	at, j := binary.Uvarint(in[1+k:])
	if j <= 0 {
		return 0, 0, 0, nil, sent, errLeanFrame
	}
	return codes.Code(in[0]), int64(ns), at, in[1+k+j:], sent, nil
}

// transportError is the status of a call that got no whole answer, as
// Conn.transportError says.
func (p *leanPool) transportError(ctx context.Context, method string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The connection's deadline is the context's: it passed, and the
		// context's own timer has not fired yet.
		return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
	}
	return status.Errorf(codes.Unavailable, "%s on %s: %v", method, p.addr, err)
}

// leanServer answers the lean protocol: the methods registered, by their
// full names, and the connections open, for Stop.
type leanServer struct {
	methods map[string]leanMethod
	mu      sync.Mutex
	ln      net.Listener
	conns   map[*leanServerConn]struct{}
	closing atomic.Bool
	gone    chan struct{} // closed when the last connection has ended after Stop began
}

type leanMethod struct {
	name string // Service/Method, as Observe is told
	md   *grpc.MethodDesc
	impl any
}

// A connection is idle while it waits for a request's first bytes, busy
// from then until its reply is written; Stop closes idle ones, busy ones
// close after their reply.
const (
	connIdle int32 = iota
	connBusy
	connClosed
)

type leanServerConn struct {
	c     net.Conn
	state atomic.Int32
	// The call being answered: its request's message for dec, the bean's
	// time for timed (bound once per connection, so a call allocates no
	// closure).
	body  []byte
	bean  time.Duration
	dec   func(any) error
	timed grpc.UnaryServerInterceptor
}

func newLeanServer() *leanServer {
	return &leanServer{methods: map[string]leanMethod{}, conns: map[*leanServerConn]struct{}{}}
}

func (l *leanServer) register(sd *grpc.ServiceDesc, impl any) {
	for i := range sd.Methods {
		md := &sd.Methods[i]
		name := sd.ServiceName + "/" + md.MethodName
		l.methods["/"+name] = leanMethod{name: name, md: md, impl: impl}
	}
}

func (s *Server) serveLean(ln net.Listener) error {
	l := s.lean
	l.mu.Lock()
	if l.closing.Load() {
		l.mu.Unlock()
		ln.Close()
		return nil
	}
	l.ln = ln
	l.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			if l.closing.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		sc := &leanServerConn{c: c}
		sc.dec = func(v any) error {
			if err := proto.Unmarshal(sc.body, v.(proto.Message)); err != nil {
				return status.Error(codes.InvalidArgument, "request: "+err.Error())
			}
			return nil
		}
		sc.timed = func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := handler(ctx, req)
			sc.bean = time.Since(start)
			return resp, err
		}
		l.mu.Lock()
		if l.closing.Load() {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.conns[sc] = struct{}{}
		l.mu.Unlock()
		go s.serveLeanConn(sc)
	}
}

// serveLeanConn answers one connection's calls, one after the other.
func (s *Server) serveLeanConn(sc *leanServerConn) {
	l := s.lean
	defer func() {
		sc.c.Close()
		l.mu.Lock()
		delete(l.conns, sc)
		if l.closing.Load() && len(l.conns) == 0 && l.gone != nil {
			close(l.gone)
			l.gone = nil
		}
		l.mu.Unlock()
	}()
	r := bufio.NewReaderSize(sc.c, leanBufferBytes)
	authorized, err := s.leanPreface(r)
	if err != nil {
		s.log.Debug("lean: a connection without the protocol's preface", "from", sc.c.RemoteAddr(), "err", err)
		return
	}
	var hdr [4]byte
	var in, out []byte
	var writeBy time.Time
	for {
		if _, err := io.ReadFull(r, hdr[:1]); err != nil {
			return
		}
		if !sc.state.CompareAndSwap(connIdle, connBusy) {
			return // Stop closed it
		}
		if _, err := io.ReadFull(r, hdr[1:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n > maxMessageBytes+leanHeaderMax {
			// Not read: the connection cannot carry on.
			out = leanReply(out[:0], status.Newf(codes.ResourceExhausted, "request larger than %d bytes", maxMessageBytes).Proto(), codes.ResourceExhausted, 0, 0)
			sc.c.Write(out)
			return
		}
		if cap(in) < n {
			in = make([]byte, n)
		}
		in = in[:n]
		if _, err := io.ReadFull(r, in); err != nil {
			return
		}
		out = s.answerLean(sc, in, authorized, out[:0])
		if now := time.Now(); writeBy.Sub(now) < DefaultTimeout {
			// A reply's write is bounded by 1 to 2 × DefaultTimeout: the
			// deadline moves once every DefaultTimeout, not on every call.
			writeBy = now.Add(2 * DefaultTimeout)
			sc.c.SetWriteDeadline(writeBy)
		}
		if _, err := sc.c.Write(out); err != nil {
			return
		}
		if !sc.state.CompareAndSwap(connBusy, connIdle) || l.closing.Load() {
			return
		}
		sc.body = nil
	}
}

// leanPreface reads a connection's preface: whether it carries the token.
func (s *Server) leanPreface(r *bufio.Reader) (authorized bool, err error) {
	var magic [len(leanMagic)]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return false, err
	}
	if string(magic[:]) != leanMagic {
		return false, fmt.Errorf("preface %q", magic[:])
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxTokenBytes {
		return false, fmt.Errorf("token of %d bytes: %v", n, err)
	}
	token := make([]byte, n)
	if _, err := io.ReadFull(r, token); err != nil {
		return false, err
	}
	return s.token == nil || subtle.ConstantTimeCompare(token, s.token) == 1, nil
}

// answerLean answers the request frame in (after its length) into out.
func (s *Server) answerLean(sc *leanServerConn, in []byte, authorized bool, out []byte) []byte {
	timeout, k := binary.Uvarint(in)
	if k <= 0 {
		return leanReply(out, status.New(codes.InvalidArgument, "request frame: no timeout").Proto(), codes.InvalidArgument, 0, 0)
	}
	in = in[k:]
	from, k := binary.Uvarint(in)
	if k <= 0 {
		return leanReply(out, status.New(codes.InvalidArgument, "request frame: no position").Proto(), codes.InvalidArgument, 0, 0)
	}
	in = in[k:]
	mlen, k := binary.Uvarint(in)
	if k <= 0 || uint64(len(in)-k) < mlen {
		return leanReply(out, status.New(codes.InvalidArgument, "request frame: no method").Proto(), codes.InvalidArgument, 0, 0)
	}
	method := in[k : k+int(mlen)]
	sc.body = in[k+int(mlen):]
	lm, ok := s.lean.methods[string(method)]
	if !ok {
		return leanReply(out, status.Newf(codes.Unimplemented, "unknown method %s", method).Proto(), codes.Unimplemented, 0, 0)
	}
	code := codes.OK
	if s.observe != nil {
		done := s.observe(lm.name)
		defer func() { done(code) }()
	}
	if !authorized {
		code = codes.Unauthenticated
		return leanReply(out, status.Convert(errUnauthenticated).Proto(), code, 0, 0)
	}
	ctx := context.Background()
	if timeout > 0 {
		bc := newBeanContext(time.Now().Add(time.Duration(timeout)))
		defer bc.end()
		ctx = bc
	}
	var t *store.Terminal
	if s.positions {
		ctx, t = callTerminal(ctx, from)
	}
	sc.bean = 0
	resp, err := lm.md.Handler(lm.impl, ctx, sc.dec, sc.timed)
	var at uint64
	if t != nil {
		at = returned(t, from)
	}
	if err != nil {
		st := statusOf(err)
		code = st.Code()
		return leanReply(out, st.Proto(), code, sc.bean, at)
	}
	out = append(out, 0, 0, 0, 0, 0)
	out = binary.AppendUvarint(out, uint64(sc.bean))
	out = binary.AppendUvarint(out, at)
	out, err = (proto.MarshalOptions{}).MarshalAppend(out, resp.(proto.Message))
	if err != nil {
		code = codes.Internal
		return leanReply(out[:0], status.New(code, "reply: "+err.Error()).Proto(), code, sc.bean, at)
	}
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// leanReply is the reply frame of an error, appended to out, with the
// position the call moved its terminal to (0: none).
func leanReply(out []byte, st *spb.Status, code codes.Code, bean time.Duration, at uint64) []byte {
	start := len(out)
	out = append(out, 0, 0, 0, 0, byte(code))
	out = binary.AppendUvarint(out, uint64(bean))
	out = binary.AppendUvarint(out, at)
	head := len(out)
	out, err := (proto.MarshalOptions{}).MarshalAppend(out, st)
	if err != nil {
		out = out[:head] // no message: the code alone
	}
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
	return out
}

// stopLean stops accepting, closes the idle connections, lets the busy
// ones write their reply until ctx ends, then closes what is left.
func (s *Server) stopLean(ctx context.Context) {
	l := s.lean
	l.mu.Lock()
	l.closing.Store(true)
	if l.ln != nil {
		l.ln.Close()
	}
	gone := make(chan struct{})
	if len(l.conns) == 0 {
		close(gone)
	} else {
		l.gone = gone
	}
	for sc := range l.conns {
		if sc.state.CompareAndSwap(connIdle, connClosed) {
			sc.c.Close()
		}
	}
	l.mu.Unlock()
	select {
	case <-gone:
	case <-ctx.Done():
		l.mu.Lock()
		for sc := range l.conns {
			sc.c.Close()
		}
		l.mu.Unlock()
		<-gone
	}
}
