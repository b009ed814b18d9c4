package remote

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tierbench/tierbench/internal/store"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Token, when set, is required of every call ("authorization: Bearer
	// TOKEN"); a call without it is refused as Unauthenticated.
	Token string
	Log   *slog.Logger
	// Observe, when set, is told of each call to a registered method as
	// it arrives (its service's full name, "/", the method's), refused
	// ones included; done is told the code it was answered with.
	Observe func(method string) (done func(codes.Code))
	// Positions: the tier's database has read replicas. Each call runs
	// with a store.Terminal at the commit position its caller carried
	// (none: 0), and the position after its writes goes back with the
	// reply (position.go; decision 0045).
	Positions bool
}

// Server answers the calls of the services registered with it over one
// protocol. It is a grpc.ServiceRegistrar: a generated Register…Server
// function registers a bean with it.
type Server struct {
	token   []byte // nil: none required
	log     *slog.Logger
	observe func(method string) (done func(codes.Code))
	// positions: ServerOptions.Positions.
	positions bool
	grpc      *grpc.Server
	mux       *http.ServeMux
	http      *http.Server
	lean      *leanServer
}

// NewServer returns a server of protocol p.
func NewServer(p Protocol, o ServerOptions) *Server {
	s := &Server{log: o.Log, observe: o.Observe, positions: o.Positions}
	if o.Token != "" {
		s.token = []byte(o.Token)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	switch p {
	case GRPC:
		unary := []grpc.UnaryServerInterceptor{s.observeCall, s.authorize, timeBean}
		if s.positions {
			unary = append(unary, carryPosition)
		}
		s.grpc = grpc.NewServer(
			grpc.ChainUnaryInterceptor(unary...),
			grpc.ChainStreamInterceptor(s.authorizeStream),
			grpc.MaxRecvMsgSize(maxMessageBytes),
			// Callers ping an idle-looking connection to find a tier that
			// stopped answering (see Dial); allow it.
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveTime / 2, PermitWithoutStream: true}),
		)
	case Lean:
		s.lean = newLeanServer()
	default:
		s.mux = http.NewServeMux()
		s.http = &http.Server{Handler: s.mux, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: DefaultTimeout,
			// A call's reply is written when its bean is done: the write
			// timeout bounds the bean too, beyond any caller's patience.
			WriteTimeout: 2 * DefaultTimeout, IdleTimeout: 2 * time.Minute}
	}
	return s
}

// RegisterService registers impl, a bean implementing sd's interface.
func (s *Server) RegisterService(sd *grpc.ServiceDesc, impl any) {
	if s.grpc != nil {
		s.grpc.RegisterService(sd, impl)
		return
	}
	if s.lean != nil {
		s.lean.register(sd, impl)
		return
	}
	for i := range sd.Methods {
		md := &sd.Methods[i]
		s.mux.Handle("POST /"+sd.ServiceName+"/"+md.MethodName, s.httpMethod(sd.ServiceName+"/"+md.MethodName, md, impl))
	}
}

// HandleHTTP answers pattern beside the calls over the http protocol (a
// load balancer's health check); false over gRPC, which answers no HTTP/1.
func (s *Server) HandleHTTP(pattern string, h http.Handler) bool {
	if s.mux == nil {
		return false
	}
	s.mux.Handle(pattern, h)
	return true
}

// Serve answers calls on ln until Stop; it returns nil after Stop.
func (s *Server) Serve(ln net.Listener) error {
	if s.grpc != nil {
		return s.grpc.Serve(ln)
	}
	if s.lean != nil {
		return s.serveLean(ln)
	}
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Stop lets the calls in progress finish until ctx ends, then closes
// every connection.
func (s *Server) Stop(ctx context.Context) {
	if s.grpc != nil {
		done := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			s.grpc.Stop()
			<-done
		}
		return
	}
	if s.lean != nil {
		s.stopLean(ctx)
		return
	}
	if err := s.http.Shutdown(ctx); err != nil {
		s.http.Close()
	}
}

// observeCall tells Observe of a gRPC call, before its token is checked,
// so that refused calls count too.
func (s *Server) observeCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.observe == nil {
		return handler(ctx, req)
	}
	done := s.observe(strings.TrimPrefix(info.FullMethod, "/"))
	resp, err := handler(ctx, req)
	done(status.Code(err))
	return resp, err
}

func (s *Server) authorize(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.checkToken(ctx); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) authorizeStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.checkToken(ss.Context()); err != nil {
		return err
	}
	return handler(srv, ss)
}

// checkToken refuses a gRPC call without the token, when one is required.
func (s *Server) checkToken(ctx context.Context) error {
	if s.token == nil {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(tokenKey); len(v) != 1 || !s.tokenIs(v[0]) {
		return errUnauthenticated
	}
	return nil
}

var errUnauthenticated = status.Error(codes.Unauthenticated, "this tier requires its token (--token-file)")

func (s *Server) tokenIs(header string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), s.token) == 1
}

// timeBean measures the handler alone (the request already decoded) and
// reports it in the reply's trailer.
func timeBean(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	grpc.SetTrailer(ctx, metadata.Pairs(beanTimeKey, strconv.FormatInt(int64(time.Since(start)), 10)))
	return resp, err
}

var (
	jsonIn  = protojson.UnmarshalOptions{DiscardUnknown: true}
	jsonOut = protojson.MarshalOptions{}
)

// httpMethod answers one method over HTTP: the request's JSON decoded into
// the method's request message, the bean called as gRPC would call it, its
// reply or its status returned as JSON.
func (s *Server) httpMethod(name string, md *grpc.MethodDesc, impl any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := codes.OK
		if s.observe != nil {
			done := s.observe(name)
			defer func() { done(code) }()
		}
		fail := func(st *status.Status) {
			code = st.Code()
			writeStatus(w, st)
		}
		if s.token != nil && !s.tokenIs(r.Header.Get(tokenKey)) {
			fail(status.Convert(errUnauthenticated))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessageBytes))
		if err != nil {
			fail(status.New(codes.ResourceExhausted, "request: "+err.Error()))
			return
		}
		dec := func(v any) error {
			if err := jsonIn.Unmarshal(body, v.(proto.Message)); err != nil {
				return status.Error(codes.InvalidArgument, "request: "+err.Error())
			}
			return nil
		}
		var bean time.Duration
		timed := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			start := time.Now()
			defer func() { bean = time.Since(start) }()
			return handler(ctx, req)
		}
		ctx := r.Context()
		var t *store.Terminal
		var from uint64
		if s.positions {
			from = parsePosition(r.Header.Get(positionKey))
			ctx, t = callTerminal(ctx, from)
		}
		resp, err := md.Handler(impl, ctx, dec, timed)
		w.Header().Set(beanTimeKey, strconv.FormatInt(int64(bean), 10))
		if t != nil {
			if at := returned(t, from); at > 0 {
				w.Header().Set(positionKey, store.FormatLSN(at))
			}
		}
		if err != nil {
			fail(statusOf(err))
			return
		}
		out, err := jsonOut.Marshal(resp.(proto.Message))
		if err != nil {
			fail(status.New(codes.Internal, "reply: "+err.Error()))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.Write(out)
	})
}

// statusOf is a bean's error as gRPC's server reports it: its status, or
// for a bare context error, Canceled or DeadlineExceeded.
func statusOf(err error) *status.Status {
	if st, ok := status.FromError(err); ok {
		return st
	}
	return status.FromContextError(err)
}

// writeStatus answers an error: the HTTP status its code maps to, and the
// google.rpc.Status (code, message, details) as JSON, which the caller
// turns back into the same error.
func writeStatus(w http.ResponseWriter, st *status.Status) {
	body, err := jsonOut.Marshal(st.Proto())
	if err != nil {
		body, _ = jsonOut.Marshal(status.New(st.Code(), st.Message()).Proto())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus(st.Code()))
	w.Write(body)
}

// httpStatus is the HTTP status of a gRPC code, as grpc-gateway maps them:
// a person or a proxy reading the exchange sees a sensible status; the
// caller reads the code from the body.
func httpStatus(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Canceled:
		return 499
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
