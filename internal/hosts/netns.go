package hosts

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// In runs f on an OS thread of its own moved into the network namespace
// named by path (Plan.Path): the sockets f makes are that namespace's and
// stay so, whichever thread uses them later. The thread goes back to the
// namespace it came from; if it cannot, it is not given back to the Go
// runtime (its goroutine ends locked to it, and the runtime ends it), so
// no other goroutine ever runs in a namespace it did not ask for.
func In(path string, f func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer own.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns back from %s: %w", path, err) // the thread ends with the goroutine
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}
