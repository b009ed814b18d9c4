// Package remote is the communication layer between tiers. A tier's
// remote interfaces are declared once, as gRPC services in .proto files;
// their generated clients and service descriptions are carried over the
// protocol a run chooses:
//
//   - grpc: protobuf over HTTP/2, by grpc-go;
//   - http: HTTP/1.1 with JSON bodies (protojson of the same messages), by
//     net/http: POST /package.Service/Method, the error as a google.rpc
//     Status in JSON;
//   - lean: protobuf frames on persistent TCP connections, one call at a
//     time on each, nothing else (lean.go; decision 0030), the seed's
//     "optimized calls".
//
// Both give the caller the same thing: the generated client's reply, or an
// error that status.FromError reads with the same code, message and
// details. Every call is counted on the caller's side (calls, bytes each
// way, the time in the layer apart from the time in the bean: the server
// reports its handler's time with each reply) into the Meter its context
// carries.
//
// A server can require a shared token: a tier reachable from other hosts
// answers no one else.
package remote

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// Protocol is the communication layer: how calls and replies travel.
type Protocol string

const (
	GRPC Protocol = "grpc"
	HTTP Protocol = "http"
	Lean Protocol = "lean"
)

// Protocols are the accepted values of --protocol.
var Protocols = []Protocol{HTTP, GRPC, Lean}

// ParseProtocol reads a --protocol value.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, len(Protocols))
	for i, p := range Protocols {
		names[i] = string(p)
	}
	return "", fmt.Errorf("protocol %q: want one of %s", s, strings.Join(names, ", "))
}

// beanTimeKey carries the server's handler time of a call, in
// nanoseconds: a gRPC trailer, an HTTP response header (the lean
// protocol's reply frame carries it in binary).
const beanTimeKey = "tierbench-bean-ns"

// tokenKey carries the shared token: "authorization: Bearer TOKEN" on both
// protocols.
const tokenKey = "authorization"

// maxMessageBytes bounds a request or reply on both protocols (gRPC's
// default receive limit): a RUBiS page's data is far below it.
const maxMessageBytes = 4 << 20

// DefaultTimeout bounds a call whose context has no deadline of its own:
// a tier stopped (SIGSTOP) or wedged ends the call as DeadlineExceeded
// instead of a hang.
const DefaultTimeout = 30 * time.Second

// ParseURL reads a tier's URL: its scheme is the protocol (http://HOST:PORT,
// grpc://HOST:PORT or lean://HOST:PORT, as `tierbench serve --tier business`
// prints it; lean://unix:/PATH for a lean tier on a Unix-domain socket).
func ParseURL(u string) (Protocol, string, error) {
	const want = "want http://HOST:PORT, grpc://HOST:PORT, lean://HOST:PORT or lean://unix:/PATH, as the business tier prints it"
	scheme, hostport, ok := strings.Cut(u, "://")
	if !ok {
		return "", "", fmt.Errorf("%q has no scheme; %s", u, want)
	}
	p, err := ParseProtocol(scheme)
	if err != nil {
		return "", "", fmt.Errorf("%q: scheme %q is no protocol; %s", u, scheme, want)
	}
	if path, ok := strings.CutPrefix(hostport, UnixPrefix); ok {
		if p != Lean || !strings.HasPrefix(path, "/") {
			return "", "", fmt.Errorf("%q: a Unix-domain socket is lean://unix:/PATH (an absolute path, the lean protocol only); %s", u, want)
		}
		return p, hostport, nil
	}
	hostport = strings.TrimSuffix(hostport, "/")
	if host, port, err := net.SplitHostPort(hostport); err != nil || host == "" || port == "" {
		return "", "", fmt.Errorf("%q: no HOST:PORT; %s", u, want)
	}
	return p, hostport, nil
}

// URL is the address of a tier serving protocol p at hostport.
func URL(p Protocol, hostport string) string { return string(p) + "://" + hostport }

// UnixPrefix marks an address as a Unix-domain socket's path
// ("unix:/run/tier.sock"), for tiers on one host: the lean protocol
// carries calls over one as over TCP (decision 0039).
const UnixPrefix = "unix:"

// network splits an address into a network and an address for net.Dial
// and net.Listen: ("unix", PATH) for unix:PATH, else ("tcp", HOST:PORT).
func network(addr string) (string, string) {
	if path, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		return "unix", path
	}
	return "tcp", addr
}

// Listen listens at addr: HOST:PORT, or unix:PATH for a Unix-domain
// socket (removed when the listener closes).
func Listen(addr string) (net.Listener, error) {
	return net.Listen(network(addr))
}

// Addr is a listener's address as Dial, ParseURL and URL take it:
// HOST:PORT, or unix:PATH.
func Addr(a net.Addr) string {
	if a.Network() == "unix" {
		return UnixPrefix + a.String()
	}
	return a.String()
}

// Transport is the socket an address is reached over: "unix" or "tcp".
func Transport(addr string) string {
	n, _ := network(addr)
	return n
}
