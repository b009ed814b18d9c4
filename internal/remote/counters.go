package remote

import (
	"context"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// The layer's counters service: a business tier answers its container's
// counters (JSON, appservers.Counters) to the run that drives it, over the
// protocol and token of its other calls. It reuses ping.proto's messages
// (an empty request, a Payload of bytes), so its description is written
// here rather than generated: the bytes are JSON the layer does not read.
const (
	countersService = "tierbench.remote.Counters"
	countersMethod  = "/" + countersService + "/Entities"
)

// countersDesc describes the service to gRPC and to the http protocol's
// mux alike (Server.RegisterService).
var countersDesc = grpc.ServiceDesc{
	ServiceName: countersService,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Entities",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(pingpb.EmptyRequest)
			if err := dec(in); err != nil {
				return nil, err
			}
			read := srv.(func() ([]byte, error))
			call := func(context.Context, any) (any, error) {
				b, err := read()
				if err != nil {
					return nil, err
				}
				return &pingpb.Payload{Data: b}, nil
			}
			if interceptor == nil {
				return call(ctx, in)
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: countersMethod}, call)
		},
	}},
	Metadata: "counters.go",
}

// RegisterCounters answers the counters service on s with what read
// returns.
func RegisterCounters(s *Server, read func() ([]byte, error)) {
	s.RegisterService(&countersDesc, read)
}

// Counters asks the tier behind c for its counters.
func Counters(ctx context.Context, c grpc.ClientConnInterface) ([]byte, error) {
	out := new(pingpb.Payload)
	if err := c.Invoke(ctx, countersMethod, &pingpb.EmptyRequest{}, out); err != nil {
		return nil, err
	}
	return out.Data, nil
}
