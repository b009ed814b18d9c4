//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package postgres

import "net"

// peeker cannot look at a socket on this platform.
type peeker struct{}

func newPeeker(net.Conn) *peeker { return &peeker{} }

func (*peeker) peek() sockState { return sockUnknown }
