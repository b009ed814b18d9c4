package remote

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
	"github.com/tierbench/tierbench/internal/store"
)

// positionBean records the position each call's terminal carried in and
// moves it by step, as a transaction that writes moves its client's; Fail
// moves it and then fails.
type positionBean struct {
	pingpb.UnimplementedPingServer
	step uint64
	mu   sync.Mutex
	seen []int64 // each call's terminal's position; -1: no terminal
}

func (b *positionBean) record(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := store.TerminalOf(ctx)
	if t == nil {
		b.seen = append(b.seen, -1)
		return
	}
	b.seen = append(b.seen, int64(t.Position()))
	if b.step > 0 {
		t.Advance(t.Position() + b.step)
	}
}

func (b *positionBean) Empty(ctx context.Context, _ *pingpb.EmptyRequest) (*pingpb.EmptyReply, error) {
	b.record(ctx)
	return &pingpb.EmptyReply{}, nil
}

func (b *positionBean) Fail(ctx context.Context, r *pingpb.FailRequest) (*pingpb.EmptyReply, error) {
	b.record(ctx)
	return nil, status.Error(codes.Code(r.Code), r.Message)
}

// TestPositionsCrossTheLayer: on every protocol, a call carries the
// position of its context's terminal to a tier with positions, whose bean
// runs with a terminal there (at 0 when the caller carried none); a
// position the bean moves comes back and advances the caller's terminal,
// with an error too; one it leaves is not sent back. A tier without
// positions gives its beans no terminal, whatever the caller carries.
func TestPositionsCrossTheLayer(t *testing.T) {
	const at = 0x16_B374D848 // 16/B374D848
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			call := func(ctx context.Context, positions bool, step uint64, fail bool) []int64 {
				t.Helper()
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				bean := &positionBean{step: step}
				s := NewServer(p, ServerOptions{Positions: positions})
				pingpb.RegisterPingServer(s, bean)
				done := make(chan error, 1)
				go func() { done <- s.Serve(ln) }()
				defer func() {
					stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					s.Stop(stop)
					<-done
				}()
				_, ping := dial(t, p, ln.Addr().String(), DialOptions{})
				if fail {
					_, err = ping.Fail(ctx, &pingpb.FailRequest{Code: int32(codes.FailedPrecondition), Message: "Sorry"})
					if status.Code(err) != codes.FailedPrecondition {
						t.Fatalf("Fail: %v", err)
					}
				} else if _, err := ping.Empty(ctx, &pingpb.EmptyRequest{}); err != nil {
					t.Fatal(err)
				}
				return bean.seen
			}
			withTerminal := func(from uint64) (context.Context, *store.Terminal) {
				term := new(store.Terminal)
				term.Advance(from)
				return store.WithTerminal(context.Background(), term), term
			}

			if seen := call(context.Background(), true, 5, false); len(seen) != 1 || seen[0] != 0 {
				t.Errorf("no terminal in the caller's context: the bean saw %v, want a terminal at 0", seen)
			}
			ctx, term := withTerminal(at)
			if seen := call(WithMeter(ctx, new(Meter)), true, 5, false); len(seen) != 1 || seen[0] != at || term.Position() != at+5 {
				t.Errorf("carried %x: the bean saw %x, the caller's terminal came back at %x; want %x and %x", at, seen, term.Position(), at, at+5)
			}
			ctx, term = withTerminal(at)
			if seen := call(ctx, true, 7, true); len(seen) != 1 || seen[0] != at || term.Position() != at+7 {
				t.Errorf("a failed call: the bean saw %x, the caller's terminal came back at %x; want %x and %x", seen, term.Position(), at, at+7)
			}
			ctx, term = withTerminal(0)
			if seen := call(ctx, true, 3, false); len(seen) != 1 || seen[0] != 0 || term.Position() != 3 {
				t.Errorf("a terminal at 0: the bean saw %x, the caller's came back at %x; want 0 and 3", seen, term.Position())
			}
			ctx, term = withTerminal(at)
			if seen := call(ctx, true, 0, false); len(seen) != 1 || seen[0] != at || term.Position() != at {
				t.Errorf("a call that writes nothing: the bean saw %x, the caller's terminal %x; want %x both", seen, term.Position(), at)
			}
			ctx, term = withTerminal(at)
			if seen := call(ctx, false, 5, false); len(seen) != 1 || seen[0] != -1 || term.Position() != at {
				t.Errorf("a tier without positions: the bean saw %v, the caller's terminal %x; want no terminal, %x unmoved", seen, term.Position(), at)
			}
		})
	}
}

// BenchmarkEmptyCallWithPosition is BenchmarkEmptyCall over replicas: the
// caller's terminal carries a position and the tier runs the call with a
// terminal of its own (the bean writes nothing, so none comes back).
// Against BenchmarkEmptyCall: what carrying the position costs a call.
func BenchmarkEmptyCallWithPosition(b *testing.B) {
	for _, p := range Protocols {
		b.Run(string(p), func(b *testing.B) {
			_, ping := dial(b, p, serve(b, p, ServerOptions{Positions: true}), DialOptions{})
			var m Meter
			term := new(store.Terminal)
			term.Advance(0x16_B374D848)
			ctx := store.WithTerminal(WithMeter(context.Background(), &m), term)
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
