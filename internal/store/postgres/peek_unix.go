//go:build linux || darwin || freebsd || netbsd || openbsd

package postgres

import (
	"errors"
	"net"
	"syscall"
)

// peek looks at conn's socket without blocking and without consuming
// anything: one recv(MSG_PEEK|MSG_DONTWAIT), a microsecond, no round trip.
func peek(conn net.Conn) sockState {
	if tc, ok := conn.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return sockUnknown
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return sockUnknown
	}
	var buf [1]byte
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	})
	switch {
	case err != nil:
		return sockClosed
	case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK) || errors.Is(rerr, syscall.EINTR):
		return sockIdle
	case rerr != nil, n == 0:
		return sockClosed // reset, or end of file: the server closed it
	}
	return sockPending
}
