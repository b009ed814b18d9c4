package remote

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// TestLeanUnixSocket: a lean tier on a Unix-domain socket (unix:PATH)
// answers as on TCP, with the same counts; concurrent callers share the
// pool's connections and every call is answered and counted once, on
// both sides; the socket's file goes with the tier.
func TestLeanUnixSocket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tier.sock")
	ln, err := Listen(UnixPrefix + path)
	if err != nil {
		t.Fatal(err)
	}
	addr := Addr(ln.Addr())
	if addr != UnixPrefix+path {
		t.Fatalf("Addr = %q, want %q", addr, UnixPrefix+path)
	}
	if p, got, err := ParseURL(URL(Lean, addr)); err != nil || p != Lean || got != addr {
		t.Fatalf("ParseURL(%q) = %q, %q, %v; want lean, %q", URL(Lean, addr), p, got, err, addr)
	}
	var observed atomic.Int64
	s := NewServer(Lean, ServerOptions{Token: "s3cret", Observe: func(string) func(codes.Code) {
		observed.Add(1)
		return func(codes.Code) {}
	}})
	RegisterPing(s)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()

	_, ping := dial(t, Lean, addr, DialOptions{Token: "s3cret", Conns: 3})
	var m Meter
	ctx := WithMeter(context.Background(), &m)
	const callers, calls = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			for j := range calls {
				req := &pingpb.Payload{Data: []byte(strings.Repeat("x", i*10+j))}
				got, err := ping.Echo(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if string(got.Data) != string(req.Data) {
					errs <- errors.New("a reply that is not its request's")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_, err = ping.Fail(ctx, &pingpb.FailRequest{Code: int32(codes.NotFound), Message: "no such item"})
	if st, _ := status.FromError(err); st.Code() != codes.NotFound || st.Message() != "no such item" {
		t.Errorf("a bean's error over the socket: %v, want NotFound, no such item", err)
	}
	c := m.Counts()
	if c.Calls != callers*calls+1 || c.Failed != 1 {
		t.Errorf("caller's meter: %d calls, %d failed; want %d, 1", c.Calls, c.Failed, callers*calls+1)
	}
	if got := observed.Load(); got != callers*calls+1 {
		t.Errorf("the tier observed %d calls, want %d", got, callers*calls+1)
	}
	_, wrong := dial(t, Lean, addr, DialOptions{Token: "wrong"})
	if _, err := wrong.Empty(context.Background(), &pingpb.EmptyRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the wrong token over the socket: %v, want Unauthenticated", err)
	}

	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Stop(stop)
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the socket's file after Stop: %v, want it gone", err)
	}
	_, gone := dial(t, Lean, addr, DialOptions{})
	if _, err := gone.Empty(context.Background(), &pingpb.EmptyRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("a call to a stopped tier's socket: %v, want Unavailable", err)
	}
}

// TestUnixAddresses: unix:PATH is the lean protocol's, with an absolute
// path in a URL; TCP addresses read as before.
func TestUnixAddresses(t *testing.T) {
	for _, tc := range []struct {
		url, addr string
		ok        bool
	}{
		{"lean://unix:/run/tier.sock", "unix:/run/tier.sock", true},
		{"lean://127.0.0.1:7000", "127.0.0.1:7000", true},
		{"lean://unix:tier.sock", "", false},
		{"grpc://unix:/run/tier.sock", "", false},
		{"http://unix:/run/tier.sock", "", false},
	} {
		_, addr, err := ParseURL(tc.url)
		if (err == nil) != tc.ok || addr != tc.addr {
			t.Errorf("ParseURL(%q) = %q, %v; want %q, ok %v", tc.url, addr, err, tc.addr, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "lean://unix:/PATH") {
			t.Errorf("ParseURL(%q): %v, want the accepted forms named", tc.url, err)
		}
	}
	for _, p := range []Protocol{HTTP, GRPC} {
		if _, err := Dial(p, "unix:/run/tier.sock", DialOptions{}); err == nil || !strings.Contains(err.Error(), "lean") {
			t.Errorf("Dial(%s, unix:…): %v, want a refusal naming lean", p, err)
		}
	}
	if got := Transport("unix:/run/tier.sock"); got != "unix" {
		t.Errorf("Transport(unix:…) = %q", got)
	}
	if got := Transport("127.0.0.1:7000"); got != "tcp" {
		t.Errorf("Transport(127.0.0.1:7000) = %q", got)
	}
}

// TestBeanContext: a lean call's context carries the caller's deadline,
// ends at it once the bean waits on it, and reads Canceled after the
// call, as context.WithTimeout's; contexts derived from it end with it.
func TestBeanContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := time.Now().Add(time.Second)
		c := newBeanContext(d)
		if got, ok := c.Deadline(); !ok || !got.Equal(d) {
			t.Errorf("Deadline = %v, %v; want %v", got, ok, d)
		}
		if c.Err() != nil {
			t.Errorf("Err before the deadline: %v", c.Err())
		}
		child, cancel := context.WithCancel(c)
		defer cancel()
		start := time.Now()
		<-c.Done()
		<-child.Done()
		if took := time.Since(start); took != time.Second || c.Err() != context.DeadlineExceeded || child.Err() != context.DeadlineExceeded {
			t.Errorf("after %v: Err %v, the child's %v; want DeadlineExceeded at 1s", took, c.Err(), child.Err())
		}
		c.end()
		if c.Err() != context.DeadlineExceeded {
			t.Errorf("Err after a call past its deadline: %v", c.Err())
		}

		ended := newBeanContext(time.Now().Add(time.Second))
		ended.end()
		if ended.Err() != context.Canceled {
			t.Errorf("Err after the call, unarmed: %v, want Canceled", ended.Err())
		}
		select {
		case <-ended.Done():
		default:
			t.Error("Done after the call is not closed")
		}

		armed := newBeanContext(time.Now().Add(time.Second))
		stopped := make(chan struct{})
		context.AfterFunc(armed, func() { close(stopped) })
		armed.end()
		<-stopped
		if armed.Err() != context.Canceled {
			t.Errorf("Err after the call, armed: %v, want Canceled", armed.Err())
		}
	})
}

// TestLeanBeanDeadline: the bean's context over lean carries the caller's
// deadline: a bean that waits on it ends at it.
func TestLeanBeanDeadline(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Lean, ServerOptions{})
	RegisterPing(s)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	_, ping := dial(t, Lean, ln.Addr().String(), DialOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := ping.Echo(ctx, &pingpb.Payload{SleepUs: 5_000_000}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a call past its deadline: %v", err)
	}
	// Stop waits for the bean: it ends at the deadline, not after its 5 s.
	stop, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	start := time.Now()
	s.Stop(stop)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Stop took %v: the bean did not end at its caller's deadline", took)
	}
	<-served
}
