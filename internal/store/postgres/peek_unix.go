//go:build linux || darwin || freebsd || netbsd || openbsd

package postgres

import (
	"errors"
	"net"
	"syscall"
)

// peeker looks at a connection's socket without blocking and without
// consuming anything: one recv(MSG_PEEK|MSG_DONTWAIT), a microsecond, no
// round trip. It is kept with its connection (peek) and its look bound
// once, so that a look, made before every statement of a server thread,
// allocates nothing.
type peeker struct {
	rc   syscall.RawConn // nil: not a socket
	look func(fd uintptr)
	n    int
	err  error
	buf  [1]byte
}

func newPeeker(conn net.Conn) *peeker {
	p := &peeker{}
	if tc, ok := conn.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return p
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return p
	}
	p.rc = rc
	p.look = func(fd uintptr) {
		p.n, _, p.err = syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}
	return p
}

func (p *peeker) peek() sockState {
	if p.rc == nil {
		return sockUnknown
	}
	// Control, not Read: Read takes the descriptor's read lock, which
	// pgx's background reader holds while it waits in a read of its own,
	// and the peek would wait with it, for ever. The peek never blocks, so
	// it needs no lock.
	err := p.rc.Control(p.look)
	switch {
	case err != nil:
		return sockClosed
	case errors.Is(p.err, syscall.EAGAIN) || errors.Is(p.err, syscall.EWOULDBLOCK) || errors.Is(p.err, syscall.EINTR):
		return sockIdle
	case p.err != nil, p.n == 0:
		return sockClosed // reset, or end of file: the server closed it
	}
	return sockPending
}
