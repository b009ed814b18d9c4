//go:build linux || darwin || freebsd || netbsd || openbsd

package postgres_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used in user space and in the
// kernel: in a benchmark against a server elsewhere, the client's.
func cpuTime() cpu {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return cpu{}
	}
	return cpu{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}
}
