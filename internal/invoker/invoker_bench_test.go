package invoker_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/invoker"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// BenchmarkBeanCall is one bean call under each dispatch, alternating in
// one run. invoke is the dispatch alone: the service's method handler
// called as the server calls it (request decoded by a copy, the
// interceptor the server's), generated's typed call against reflect's
// look-up by name and reflect.Value.Call. http is the same call made by a
// client across the http protocol on loopback, the layer included.
func BenchmarkBeanCall(b *testing.B) {
	ctx := context.Background()
	payload := &pingpb.Payload{Data: []byte("a RUBiS page's request")}
	dec := func(v any) error {
		v.(*pingpb.Payload).Data = payload.Data
		return nil
	}
	ic := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}
	for _, d := range []container.Dispatch{container.Generated, container.Reflect} {
		b.Run("invoke/"+string(d), func(b *testing.B) {
			impl := quiet{&bean{}}
			sd := &pingpb.Ping_ServiceDesc
			if d == container.Reflect {
				sd = invoker.Reflective(sd, impl)
			}
			var echo grpc.MethodDesc
			for _, m := range sd.Methods {
				if m.MethodName == "Echo" {
					echo = m
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := echo.Handler(impl, ctx, dec, ic); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("http/"+string(d), func(b *testing.B) {
			srv := remote.NewServer(remote.HTTP, remote.ServerOptions{})
			pingpb.RegisterPingServer(invoker.Registrar(srv, d), quiet{&bean{}})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(ln)
			defer srv.Stop(ctx)
			conn, err := remote.Dial(remote.HTTP, ln.Addr().String(), remote.DialOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			c := pingpb.NewPingClient(conn)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Echo(ctx, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// quiet is a bean that keeps no record of its calls: the benchmark
// measures the dispatch, not the test's bookkeeping.
type quiet struct{ *bean }

func (quiet) Echo(_ context.Context, p *pingpb.Payload) (*pingpb.Payload, error) { return p, nil }
