//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package postgres_test

import "time"

// cpuTime cannot be read on this platform: the benchmarks report no CPU.
func cpuTime() cpu { return cpu{} }
