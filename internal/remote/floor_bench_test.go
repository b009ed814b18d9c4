package remote

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// The floor of an empty call: a bare Go ping-pong of the lean protocol's
// frame sizes between two processes, with nothing but the frames on the
// socket (no method table, no protobuf, no meter), over loopback TCP and
// over a Unix-domain socket. BenchmarkEmptyCallClient's figures read
// against it: what the protocol adds to what Go and the kernel cost.

// floorNetworks are the floor's sockets: the child tier of floor-NETWORK
// listens on one. A "-blocking" one is read and written by blocking
// system calls on both sides, the goroutine waiting in the kernel instead
// of Go's network poller: the kernel's own floor.
var floorNetworks = []string{"tcp", "unix", "tcp-blocking", "unix-blocking"}

const floorTierPrefix = "floor-"

// floorFrames are the sizes of an empty call's request and reply frames
// over lean, their 4-byte lengths included: the request with the layer's
// default timeout and Ping's Empty method, the reply with a bean time of
// a few microseconds, neither with a commit position.
func floorFrames() (request, reply int) {
	var b []byte
	b = binary.AppendUvarint(b, uint64(DefaultTimeout))
	b = binary.AppendUvarint(b, 0) // no position
	b = binary.AppendUvarint(b, uint64(len(pingpb.Ping_Empty_FullMethodName)))
	request = leanPrefix + len(b) + len(pingpb.Ping_Empty_FullMethodName)
	reply = leanPrefix + 1 + len(binary.AppendUvarint(nil, uint64(5*time.Microsecond))) + 1 // and no position
	return request, reply
}

// serveFloorTier answers the floor's ping-pong on network, prints the
// address, and stops when its stdin closes.
func serveFloorTier(network string) error {
	network, blocking := strings.CutSuffix(network, "-blocking")
	addr := "127.0.0.1:0"
	if network == "unix" {
		dir, err := os.MkdirTemp("", "tierbench-floor-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		addr = filepath.Join(dir, "floor.sock")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go floorEcho(floorConn(c, blocking))
		}
	}()
	fmt.Println(network + ":" + ln.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	return ln.Close()
}

// floorEcho reads each request frame and writes a reply frame, one read
// and one write each (the frames are a few dozen bytes).
func floorEcho(c io.ReadWriteCloser) {
	defer c.Close()
	request, reply := floorFrames()
	in, out := make([]byte, request), make([]byte, reply)
	binary.BigEndian.PutUint32(out, uint32(reply-leanPrefix))
	for {
		if _, err := io.ReadFull(c, in); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// BenchmarkFloorPingPong: the floor under BenchmarkEmptyCallClient, with
// the tier in a child process as there: one request frame written and one
// reply frame read per op, on one connection. caller-cpu-µs/op and
// tier-cpu-µs/op are each process's CPU per round trip.
func BenchmarkFloorPingPong(b *testing.B) {
	for _, network := range floorNetworks {
		b.Run(network, func(b *testing.B) {
			addr, pid := childTier(b, Protocol(floorTierPrefix+network))
			_, addr, _ = strings.Cut(addr, ":")
			network, blocking := strings.CutSuffix(network, "-blocking")
			nc, err := net.Dial(network, addr)
			if err != nil {
				b.Fatal(err)
			}
			c := floorConn(nc, blocking)
			defer c.Close()
			request, reply := floorFrames()
			out, in := make([]byte, request), make([]byte, reply)
			binary.BigEndian.PutUint32(out, uint32(request-leanPrefix))
			roundTrip := func() {
				if _, err := c.Write(out); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, in); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip()
			callerBefore, tierBefore := cpuTime(b, 0), cpuTime(b, pid)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				roundTrip()
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64((cpuTime(b, 0)-callerBefore).Microseconds())/n, "caller-cpu-µs/op")
			b.ReportMetric(float64((cpuTime(b, pid)-tierBefore).Microseconds())/n, "tier-cpu-µs/op")
		})
	}
}

// floorConn is c, or, blocking, its socket put in blocking mode and read
// and written by system calls that wait in the kernel.
func floorConn(c net.Conn, blocking bool) io.ReadWriteCloser {
	if !blocking {
		return c
	}
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		panic(err)
	}
	var fd int
	raw.Control(func(f uintptr) { fd = int(f) })
	if err := syscall.SetNonblock(fd, false); err != nil {
		panic(err)
	}
	return blockingConn{c: c, fd: fd}
}

type blockingConn struct {
	c  net.Conn // kept open while fd is used
	fd int
}

func (b blockingConn) Read(p []byte) (int, error) {
	n, err := syscall.Read(b.fd, p)
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	return max(n, 0), err
}

func (b blockingConn) Write(p []byte) (int, error) {
	n, err := syscall.Write(b.fd, p)
	return max(n, 0), err
}

func (b blockingConn) Close() error { return b.c.Close() }
