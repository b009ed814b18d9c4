//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package postgres

import "net"

// peek cannot look at a socket on this platform.
func peek(net.Conn) sockState { return sockUnknown }
