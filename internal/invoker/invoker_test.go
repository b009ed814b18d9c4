package invoker_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/invoker"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// bean answers the Ping service: Echo returns its payload, Fail the
// status asked for; calls counts what reached it.
type bean struct {
	pingpb.UnimplementedPingServer
	mu    sync.Mutex
	calls []string
}

func (b *bean) note(m string) {
	b.mu.Lock()
	b.calls = append(b.calls, m)
	b.mu.Unlock()
}

func (b *bean) Empty(context.Context, *pingpb.EmptyRequest) (*pingpb.EmptyReply, error) {
	b.note("Empty")
	return &pingpb.EmptyReply{}, nil
}

func (b *bean) Echo(_ context.Context, p *pingpb.Payload) (*pingpb.Payload, error) {
	b.note("Echo")
	return p, nil
}

func (b *bean) Fail(_ context.Context, r *pingpb.FailRequest) (*pingpb.EmptyReply, error) {
	b.note("Fail")
	return nil, status.Error(codes.Code(r.Code), r.Message)
}

// serve serves b's Ping service over p, invoked as d says, and dials it.
func serve(t *testing.T, p remote.Protocol, d container.Dispatch, b *bean) (pingpb.PingClient, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var observed []string
	srv := remote.NewServer(p, remote.ServerOptions{Observe: func(m string) func(codes.Code) {
		return func(c codes.Code) {
			mu.Lock()
			observed = append(observed, m+" "+c.String())
			mu.Unlock()
		}
	}})
	pingpb.RegisterPingServer(invoker.Registrar(srv, d), b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Stop(context.Background()) })
	conn, err := remote.Dial(p, ln.Addr().String(), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pingpb.NewPingClient(conn), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), observed...)
	}
}

// TestReflectAnswersAsGenerated: over both protocols, a bean invoked by
// reflection gets the same requests and its caller the same replies and
// errors as under the generated handlers, through the server's
// interceptors (observed with the same method and code).
func TestReflectAnswersAsGenerated(t *testing.T) {
	for _, p := range remote.Protocols {
		t.Run(string(p), func(t *testing.T) {
			var got [2]string
			for n, d := range []container.Dispatch{container.Generated, container.Reflect} {
				b := &bean{}
				c, observed := serve(t, p, d, b)
				ctx := context.Background()
				in := &pingpb.Payload{Data: []byte("payload")}
				out, err := c.Echo(ctx, in)
				if err != nil || !proto.Equal(in, out) {
					t.Fatalf("%s: Echo %v gave %v, %v", d, in, out, err)
				}
				_, err = c.Fail(ctx, &pingpb.FailRequest{Code: int32(codes.FailedPrecondition), Message: "no credit"})
				st := status.Convert(err)
				if st.Code() != codes.FailedPrecondition || st.Message() != "no credit" {
					t.Fatalf("%s: Fail gave %v, want FailedPrecondition no credit", d, err)
				}
				var w bytes.Buffer
				w.WriteString(string(out.Data) + " " + st.Code().String() + " " + st.Message())
				b.mu.Lock()
				calls := b.calls
				b.mu.Unlock()
				for _, c := range calls {
					w.WriteString(" " + c)
				}
				for _, o := range observed() {
					w.WriteString(" " + o)
				}
				got[n] = w.String()
			}
			if got[0] != got[1] {
				t.Errorf("generated saw %q, reflect %q", got[0], got[1])
			}
			const want = "payload FailedPrecondition no credit Echo Fail tierbench.ping.Ping/Echo OK tierbench.ping.Ping/Fail FailedPrecondition"
			if got[0] != want {
				t.Errorf("calls %q, want %q", got[0], want)
			}
		})
	}
}

// TestReflectiveNeedsTheMethods: a bean without a method its service
// names is refused when it is registered, as grpc refuses it.
func TestReflectiveNeedsTheMethods(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a bean without the service's methods was registered")
		}
	}()
	invoker.Reflective(&pingpb.Ping_ServiceDesc, struct{}{})
}
