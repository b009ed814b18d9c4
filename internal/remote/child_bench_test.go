package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/remote/pingpb"
)

// pingTierEnv, set to a protocol, makes the test binary a Ping tier
// instead of running tests: BenchmarkEmptyCallClient starts it as a child,
// so that the caller's allocations and CPU are measured apart from the
// tier's.
const pingTierEnv = "TIERBENCH_PING_TIER"

// pingTierProfileEnv, set to a path, makes the Ping tier write its CPU
// profile there: where the tier's time goes in BenchmarkEmptyCallClient.
const pingTierProfileEnv = "TIERBENCH_PING_TIER_PROFILE"

func TestMain(m *testing.M) {
	if p := os.Getenv(pingTierEnv); p != "" {
		if path := os.Getenv(pingTierProfileEnv); path != "" {
			// The tier's CPU profile, written when it stops.
			f, err := os.Create(path)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "ping tier:", err)
				os.Exit(3)
			}
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
		serve := func() error { return servePingTier(Protocol(p)) }
		if network, ok := strings.CutPrefix(p, floorTierPrefix); ok {
			serve = func() error { return serveFloorTier(network) }
		}
		if err := serve(); err != nil {
			fmt.Fprintln(os.Stderr, "ping tier:", err)
			os.Exit(3)
		}
		return
	}
	os.Exit(m.Run())
}

// servePingTier serves Ping on a loopback port, prints the address, and
// stops when its stdin closes (the parent ended or died).
func servePingTier(p Protocol) error {
	addr := "127.0.0.1:0"
	if p == leanUnix {
		dir, err := os.MkdirTemp("", "tierbench-ping-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		p, addr = Lean, UnixPrefix+dir+"/ping.sock"
	}
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	s := NewServer(p, ServerOptions{})
	RegisterPing(s)
	go s.Serve(ln)
	fmt.Println(Addr(ln.Addr()))
	io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Stop(ctx)
	return nil
}

// childTier starts the Ping tier of protocol p in a child process and
// returns its address and pid; it stops with the benchmark.
func childTier(b *testing.B, p Protocol) (addr string, pid int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), pingTierEnv+"="+string(p))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the ping tier did not say where it listens: %v", err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}

// cpuTime is a process's user and system time so far: this process's
// (pid 0) from getrusage, a child's from /proc.
func cpuTime(b *testing.B, pid int) time.Duration {
	if pid == 0 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("the tier's CPU time is read from /proc: %v", err)
	}
	// Fields 14 and 15 (utime, stime) in clock ticks, counted after the
	// command's closing parenthesis, which may itself hold spaces.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// leanUnix is the lean protocol on a Unix-domain socket, for the
// benchmarks' child tier.
const leanUnix Protocol = "lean-unix"

// BenchmarkEmptyCallClient: one empty call on loopback with the tier in a
// child process, as `--tiers 3` runs it. allocs/op and B/op are then the
// caller's alone (the protocol library's included); caller-cpu-µs/op and
// tier-cpu-µs/op are each process's CPU per call.
func BenchmarkEmptyCallClient(b *testing.B) {
	for _, p := range append(Protocols, leanUnix) {
		b.Run(string(p), func(b *testing.B) {
			addr, pid := childTier(b, p)
			dialed := p
			if p == leanUnix {
				dialed = Lean
			}
			_, ping := dial(b, dialed, addr, DialOptions{})
			var m Meter
			ctx := WithMeter(context.Background(), &m)
			req := &pingpb.EmptyRequest{}
			if _, err := ping.Empty(ctx, req); err != nil {
				b.Fatal(err)
			}
			callerBefore, tierBefore := cpuTime(b, 0), cpuTime(b, pid)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := ping.Empty(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64((cpuTime(b, 0)-callerBefore).Microseconds())/n, "caller-cpu-µs/op")
			b.ReportMetric(float64((cpuTime(b, pid)-tierBefore).Microseconds())/n, "tier-cpu-µs/op")
		})
	}
}
