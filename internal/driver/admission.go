package driver

import "sync"

// admission is the server's thread pool as the clients see it: a client
// takes a free thread or waits for one, in the order it arrived, and a
// finishing client hands its thread straight to the longest waiting one.
//
// It is a mutex over a free list and a queue, not a channel of thread
// numbers, because with a channel every waiting client selected on the
// thread channel and on the run's done channel at once: two locks that
// every client shares, taken and contended on each operation (a third of
// the CPU of the no-op benchmark at 4 clients on 2 threads). Here a waiter
// parks on its own channel, which only its waker touches, and the run's
// end reaches waiters through stop rather than through a shared select.
type admission struct {
	mu      sync.Mutex
	free    []int // free thread numbers, the last released on top
	waiting queue
	stopped bool
}

func newAdmission(threads int) *admission {
	a := &admission{free: make([]int, threads)}
	// Thread 0 on top, so a run with more threads than work uses the
	// lowest numbers.
	for i := range threads {
		a.free[i] = threads - 1 - i
	}
	return a
}

// admit returns a free thread for t, waiting its turn for one; false once
// the run is stopped. The most recently released thread is handed out
// first: its connection and buffers are the ones most likely warm.
func (a *admission) admit(t *terminal) (int, bool) {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return 0, false
	}
	if n := len(a.free); n > 0 {
		thread := a.free[n-1]
		a.free = a.free[:n-1]
		a.mu.Unlock()
		return thread, true
	}
	a.waiting.push(t)
	a.mu.Unlock()
	thread := <-t.wake
	return thread, thread >= 0
}

// release gives thread to the longest waiting client, or back to the pool.
func (a *admission) release(thread int) {
	a.mu.Lock()
	if w := a.waiting.pop(); w != nil {
		a.mu.Unlock()
		w.wake <- thread // cap 1 and one wake per wait: never blocks
		return
	}
	a.free = append(a.free, thread)
	a.mu.Unlock()
}

// stop turns away every waiting client and every later one. Threads
// released afterwards return to the pool unused.
func (a *admission) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	for w := a.waiting.pop(); w != nil; w = a.waiting.pop() {
		w.wake <- -1
	}
}

// queue is a FIFO of waiting terminals on a ring that grows to the most
// that ever waited at once, so waiting allocates nothing in steady state.
type queue struct {
	ring       []*terminal
	head, size int
}

func (q *queue) push(t *terminal) {
	if q.size == len(q.ring) {
		grown := make([]*terminal, max(2*len(q.ring), 8))
		for i := range q.size {
			grown[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = grown, 0
	}
	q.ring[(q.head+q.size)%len(q.ring)] = t
	q.size++
}

func (q *queue) pop() *terminal {
	if q.size == 0 {
		return nil
	}
	t := q.ring[q.head]
	q.ring[q.head] = nil
	q.head = (q.head + 1) % len(q.ring)
	q.size--
	return t
}
