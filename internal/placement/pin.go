package placement

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pin restricts every thread of this process to cpus and returns a
// function that gives each thread back the CPUs the calling thread had
// before. A thread inherits its mask from the thread that creates it, so
// once every thread is pinned the threads the Go runtime starts later are
// too; Pin goes over /proc/self/task until a pass finds no thread it has
// not pinned yet, so a thread created meanwhile is not missed either.
// GOMAXPROCS follows the CPUs, as it would have been set on a machine of
// that size: more Ps than CPUs would only make the runtime's threads
// preempt each other.
func Pin(cpus CPUSet) (restore func() error, err error) {
	if len(cpus) == 0 {
		return nil, errors.New("pin: no CPUs")
	}
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		return nil, fmt.Errorf("pin: sched_getaffinity: %w", err)
	}
	if err := setAll(cpus.mask()); err != nil {
		setAll(&before)
		return nil, fmt.Errorf("pin to %s: %w", cpus.Words(), err)
	}
	procs := runtime.GOMAXPROCS(len(cpus))
	return func() error {
		runtime.GOMAXPROCS(procs)
		if err := setAll(&before); err != nil {
			return fmt.Errorf("unpin: %w", err)
		}
		return nil
	}, nil
}

// setAll sets mask on every thread of the process, passing over the task
// list again until it finds none new. A thread that has ended meanwhile
// (ESRCH) is no matter.
func setAll(mask *unix.CPUSet) error {
	done := make(map[int]bool)
	for {
		tids, err := threads()
		if err != nil {
			return err
		}
		fresh := false
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh = true
			done[tid] = true
			if err := unix.SchedSetaffinity(tid, mask); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("sched_setaffinity(thread %d): %w", tid, err)
			}
		}
		if !fresh {
			return nil
		}
	}
}

// threads lists this process's thread IDs.
func threads() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(entries))
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
