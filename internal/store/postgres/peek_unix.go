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
	// Control, not Read: Read takes the descriptor's read lock, which
	// pgx's background reader holds while it waits in a read of its own,
	// and the peek would wait with it, for ever. The peek never blocks, so
	// it needs no lock.
	err = rc.Control(func(fd uintptr) {
		n, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
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
