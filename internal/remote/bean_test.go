package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
	"github.com/tierbench/tierbench/internal/store"
)

// failingBean answers Empty with FailureStatus of the error it is given.
type failingBean struct {
	pingpb.UnimplementedPingServer
	err error
}

func (b *failingBean) Empty(context.Context, *pingpb.EmptyRequest) (*pingpb.EmptyReply, error) {
	return nil, FailureStatus(b.err)
}

// A bean's failure crosses either protocol in its store class: the caller
// retries a deadlock and reconciles a commit in doubt as it would in
// process, and tells a failure the bean sent from a call never answered.
func TestFailureClassesCrossTheLayer(t *testing.T) {
	for _, p := range Protocols {
		t.Run(string(p), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			bean := &failingBean{}
			s := NewServer(p, ServerOptions{})
			pingpb.RegisterPingServer(s, bean)
			go s.Serve(ln)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				s.Stop(ctx)
			})
			_, ping := dial(t, p, ln.Addr().String(), DialOptions{})
			for _, tc := range []struct {
				err       error
				code      codes.Code
				retryable bool
			}{
				{store.Classified(store.ErrDeadlock, errors.New("pq: deadlock detected")), codes.Aborted, true},
				{store.Classified(store.ErrSerialization, errors.New("could not serialize")), codes.Aborted, true},
				{store.Classified(store.ErrLockTimeout, errors.New("lock wait")), codes.Aborted, true},
				{fmt.Errorf("commit: %w", store.Classified(store.ErrInDoubt, errors.New("EOF"))), codes.Internal, false},
				{store.Classified(store.ErrUnreachable, errors.New("refused")), codes.Unavailable, false},
				{store.Classified(store.ErrConnectionLost, errors.New("reset")), codes.Unavailable, false},
				{store.Classified(store.ErrDiskFull, errors.New("database or disk is full (13)")), codes.Internal, false},
				{store.Classified(store.ErrConstraint, errors.New("NOT NULL constraint failed")), codes.Internal, false},
				{store.Classified(store.ErrUniqueViolation, errors.New("duplicate key")), codes.Internal, false},
				{errors.New("a bug"), codes.Internal, false},
			} {
				bean.err = tc.err
				_, err := ping.Empty(context.Background(), &pingpb.EmptyRequest{})
				if got := status.Code(err); got != tc.code {
					t.Errorf("%v: code %v, want %v", tc.err, got, tc.code)
				}
				class, answered := FailureClass(err)
				if !answered {
					t.Errorf("%v: the bean's answer was not recognised as one", tc.err)
				}
				back := FailureError(err)
				for _, c := range []error{store.ErrDeadlock, store.ErrSerialization, store.ErrLockTimeout, store.ErrInDoubt,
					store.ErrUnreachable, store.ErrConnectionLost, store.ErrDiskFull, store.ErrConstraint, store.ErrUniqueViolation} {
					if errors.Is(tc.err, c) != errors.Is(back, c) {
						t.Errorf("%v came back as %v (class %v): errors.Is(%v) differs", tc.err, back, class, c)
					}
				}
				if store.Retryable(back) != tc.retryable {
					t.Errorf("%v: retryable %v after the layer, want %v", tc.err, store.Retryable(back), tc.retryable)
				}
				if status.Code(back) != tc.code {
					t.Errorf("%v: the classified error lost its status code", tc.err)
				}
			}
		})
	}
	// A call no bean answered carries no class and says so.
	_, answered := FailureClass(status.Error(codes.Unavailable, "connection refused"))
	if answered {
		t.Error("a status without the detail read as the bean's answer")
	}
}
