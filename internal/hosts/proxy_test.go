package hosts

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// echo serves an echo on loopback.
func echo(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, ln, func(c net.Conn) { io.Copy(c, c); c.(*net.TCPConn).CloseWrite() })
}

// A request and its reply each cross the proxy once: a round trip takes
// at least twice its delay; the bytes come back whole and in order, and
// the end crosses too (the echo's reply ends when the request does).
func TestHostsProxyDelays(t *testing.T) {
	t.Parallel()
	target := echo(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const delay = 20 * time.Millisecond
	p := NewProxy(ln, func() (net.Conn, error) { return net.Dial("tcp", target) }, delay)
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		start := time.Now()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
			t.Fatalf("read %q, %v", b, err)
		}
		if rtt := time.Since(start); rtt < 2*delay {
			t.Errorf("round trip %v, want at least 2 × %v", rtt, delay)
		}
	}
	// 1 MiB in chunks: all of it back, in order, then the end.
	want := make([]byte, 1<<20)
	rand.Read(want)
	go func() { c.Write(want); c.(*net.TCPConn).CloseWrite() }()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("read %d bytes back (%v), want the %d sent, in order", len(got), err, len(want))
	}
}

// BenchmarkLinkRate sends 4 MB a round from one host to another over a
// 100mbit link and reports the bytes per second that came through, and
// their ratio to the rate (burst, latency: Link.Burst, queueLatency).
//
//	go test -run '^$' -bench BenchmarkLinkRate -benchtime 5x ./internal/hosts/
func BenchmarkLinkRate(b *testing.B) {
	testsvc.Namespaces(b)
	link, _ := ParseLink("100mbit")
	p, err := Up(context.Background(), 1<<22+9000+b.N%100, []string{"a", "b"}, link)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Down()
	var ln net.Listener
	if err := In(p.Path("b"), func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(p.Host("b").Address, "0"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	serve(b, ln, func(c net.Conn) { io.Copy(io.Discard, c); c.Close() })
	const size = 4 << 20
	buf := make([]byte, size)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		var c net.Conn
		if err := In(p.Path("a"), func() (err error) {
			c, err = net.Dial("tcp", ln.Addr().String())
			return err
		}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c) // the receiver closes once it has all
		total += time.Since(start)
		c.Close()
	}
	bps := float64(size) * float64(b.N) / total.Seconds()
	b.ReportMetric(bps, "B/s")
	b.ReportMetric(bps*8/float64(link.Rate), "of-rate")
}
