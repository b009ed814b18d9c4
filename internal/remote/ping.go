package remote

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// pingBean answers the layer's own service (pingpb): every tier registers
// it, so a caller can tell that a tier is up, and what a call costs with
// no bean work behind it.
type pingBean struct {
	pingpb.UnimplementedPingServer
}

// RegisterPing adds the Ping service to s.
func RegisterPing(s *Server) { pingpb.RegisterPingServer(s, pingBean{}) }

func (pingBean) Empty(context.Context, *pingpb.EmptyRequest) (*pingpb.EmptyReply, error) {
	return &pingpb.EmptyReply{}, nil
}

func (pingBean) Echo(ctx context.Context, p *pingpb.Payload) (*pingpb.Payload, error) {
	if p.SleepUs > 0 {
		t := time.NewTimer(time.Duration(p.SleepUs) * time.Microsecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return p, nil
}

func (pingBean) Fail(_ context.Context, r *pingpb.FailRequest) (*pingpb.EmptyReply, error) {
	st := status.New(codes.Code(r.Code), r.Message)
	if r.Detail != nil {
		with, err := st.WithDetails(&pingpb.Payload{Data: r.Detail})
		if err != nil {
			return nil, err
		}
		st = with
	}
	return nil, st.Err()
}

// DialReady dials the tier at hostport as Dial does, then makes one call
// on the connection (gRPC connects only then), so that a tier that cannot
// answer fails whoever starts with it, not their first measured call.
func DialReady(ctx context.Context, p Protocol, hostport string, o DialOptions) (*Conn, error) {
	c, err := Dial(p, hostport, o)
	if err != nil {
		return nil, err
	}
	if meterOf(ctx) == nil && o.Meter != nil {
		// The readiness call is the layer's, not one o.Meter counts.
		ctx = WithMeter(ctx, new(Meter))
	}
	if err := Ping(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Ping makes one empty call on c: nil when the tier behind it answers.
func Ping(ctx context.Context, c *Conn) error {
	_, err := pingpb.NewPingClient(c).Empty(ctx, &pingpb.EmptyRequest{})
	return err
}
