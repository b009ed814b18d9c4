// Package server runs the HTTP front of a web workload's middle tier
// (RUBiS's pages, TPC-App's web services): it listens at once, so a bad or
// busy address is known before anything else starts, serves the tier's
// handler beside /healthz, and shuts down gracefully, letting the requests
// under way finish.
//
// It knows nothing of workloads: the CLI gives it a handler.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"
)

// HealthPath answers 200 while the server accepts requests and 503 once
// it is shutting down, so a load balancer stops sending it work first.
const HealthPath = "/healthz"

// Server is one listening HTTP front.
type Server struct {
	http     *http.Server
	ln       net.Listener
	stopping atomic.Bool
	// done is closed when serving has ended, serveErr set before: nil
	// after Shutdown, the listener's failure otherwise.
	done     chan struct{}
	serveErr error
}

// ParseListen checks a --listen address: HOST:PORT, or :PORT for every
// interface. The error names the flag and says what is allowed.
func ParseListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = errors.New("port out of range")
		}
	}
	if err != nil || (host != "" && net.ParseIP(host) == nil && !validHostname(host)) {
		return fmt.Errorf("--listen %q: want HOST:PORT with a port from 0 to 65535 (0: any free port), e.g. 127.0.0.1:8080, or :8080 for every interface", addr)
	}
	return nil
}

// validHostname accepts names a resolver could look up: letters, digits,
// dots and hyphens.
func validHostname(h string) bool {
	for _, c := range h {
		if !(c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return h != ""
}

// Start listens on addr and serves h there (and HealthPath) until
// Shutdown. The caller checks addr with ParseListen first; an address
// that cannot be bound is the error.
func Start(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc(HealthPath, s.health)
	mux.Handle("/", h)
	s.http = &http.Server{
		Handler: mux,
		// A client that never finishes its headers must not hold a
		// connection (and a goroutine) for ever.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	go func() {
		err := s.http.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
		close(s.done)
	}()
	return s, nil
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.stopping.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "stopping")
		return
	}
	fmt.Fprintln(w, "ok")
}

// Addr is the address the server listens on (with the port chosen when
// the given one was 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the server's base URL, for a driver on the same host.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Shutdown stops accepting connections and waits, until ctx is done, for
// the requests under way; then it closes what is left. It returns the
// serving error, if serving had failed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	<-s.done
	return errors.Join(s.serveErr, err)
}

// Done is closed when the server has stopped serving: after Shutdown, or
// on its own when its listener failed (Shutdown then says why).
func (s *Server) Done() <-chan struct{} { return s.done }

// Loopback reports whether a listen address (HOST:PORT, as ParseListen
// accepts it) reaches this host alone: its host is a loopback address, or
// a name all of whose addresses are ("localhost"). An empty host is every
// interface; a name that does not resolve counts as reaching beyond, as
// it may once it resolves.
func Loopback(ctx context.Context, addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// Guard refuses to serve what at addr (given as flag) when other hosts
// reach it and it does not authenticate them, unless insecure: then it
// writes a warning to warn. fix says what else to do (authenticate,
// listen on loopback), when anything else will do.
// A tier open to the network lets anyone who reaches the host use it.
func Guard(ctx context.Context, flag, addr, what, fix string, insecure bool, warn io.Writer) error {
	if Loopback(ctx, addr) {
		return nil
	}
	if insecure {
		fmt.Fprintf(warn, "tierbench: warning: --insecure: serving %s on %s with no authentication: anyone who reaches this host can use it\n", what, addr)
		return nil
	}
	if fix != "" {
		fix += ", or "
	}
	return fmt.Errorf("%s %s reaches other hosts, and %s would answer anyone there: %sgive --insecure to serve it open anyway", flag, addr, what, fix)
}

// operationKey holds, in a measured request's context, where the tier
// names the request's operation.
type operationKey struct{}

// WithOperation returns a context in which NameOperation writes to name.
func WithOperation(ctx context.Context, name *string) context.Context {
	return context.WithValue(ctx, operationKey{}, name)
}

// NameOperation names r's operation where its route does not (one
// endpoint for every method of a service): the tier's metrics count r
// under name. name must be one of a fixed set (a method the tier knows),
// never a client's text: each is a series. Without metrics it does
// nothing.
func NameOperation(r *http.Request, name string) {
	if p, ok := r.Context().Value(operationKey{}).(*string); ok {
		*p = name
	}
}
