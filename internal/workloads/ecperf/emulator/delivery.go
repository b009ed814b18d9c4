package emulator

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// order is one accepted PO of a run and the state of its delivery. Its
// fields are guarded by Server.mu.
type order struct {
	po       PO
	received int // 1 + duplicates
	due      time.Time
	seq      uint64 // acceptance order: breaks ties between equal due times
	index    int    // position in the queue; -1 when not queued
	failures int    // failed attempts so far, for the backoff
	// cancel stops the attempt under way; nil when none is.
	cancel    context.CancelFunc
	delivered bool
	forgotten bool
}

func (o *order) pending() bool { return !o.delivered && !o.forgotten }

// queue is a min-heap of orders by due time (container/heap).
type queue []*order

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *queue) Push(x any) {
	o := x.(*order)
	o.index = len(*q)
	*q = append(*q, o)
}
func (q *queue) Pop() any {
	old := *q
	o := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	o.index = -1
	return o
}

// enqueue schedules o at due and wakes the scheduler. s.mu must be held.
func (s *Server) enqueue(o *order, due time.Time) {
	o.due = due
	heap.Push(&s.queue, o)
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already waiting
	}
}

// schedule is the one scheduler goroutine: it sleeps until the earliest
// order is due, takes an in-flight slot and starts its attempt.
func (s *Server) schedule() {
	defer close(s.scheduled)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		wait := time.Duration(-1) // nothing queued: wait for a wake-up
		if len(s.queue) > 0 {
			wait = max(time.Until(s.queue[0].due), 0)
		}
		s.mu.Unlock()

		if wait != 0 {
			var tick <-chan time.Time
			if wait > 0 {
				timer.Reset(wait)
				tick = timer.C
			}
			select {
			case <-s.ctx.Done():
				return
			case <-s.wake:
			case <-tick:
			}
			continue
		}

		select { // an order is due: wait for an in-flight slot
		case <-s.ctx.Done():
			return
		case s.slots <- struct{}{}:
		}
		s.mu.Lock()
		if len(s.queue) == 0 || s.queue[0].due.After(time.Now()) {
			s.mu.Unlock() // forgotten meanwhile
			<-s.slots
			continue
		}
		o := heap.Pop(&s.queue).(*order)
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.AttemptTimeout)
		o.cancel = cancel
		d := o.po.delivery()
		to := o.po.DeliverTo
		s.mu.Unlock()

		s.stats.attempts.Add(1)
		s.attempts.Add(1)
		go func() {
			defer s.attempts.Done()
			defer func() { <-s.slots }()
			err := s.deliver(ctx, to, &d)
			cancel()
			s.settle(o, err)
		}()
	}
}

// settle records the outcome of o's attempt: delivered, or scheduled again
// after the backoff unless the order was forgotten or the server closed.
func (s *Server) settle(o *order, err error) {
	s.mu.Lock()
	o.cancel = nil
	switch {
	case err == nil && o.forgotten:
		// Forget cancelled the attempt too late; it already counted it.
		s.stats.failures.Add(1)
	case err == nil:
		o.delivered = true
		s.stats.delivered.Add(1)
		s.stats.pending.Add(-1)
	default:
		s.stats.failures.Add(1)
		o.failures++
		if !o.forgotten && s.ctx.Err() == nil {
			s.enqueue(o, time.Now().Add(s.backoff(o.failures)))
		}
	}
	s.mu.Unlock()
	if s.attempted != nil {
		s.attempted(o.po.Run, o.po.PONumber, err)
	}
	if err != nil {
		s.log.Debug("delivery failed", "run", o.po.Run, "po", o.po.PONumber, "failures", o.failures, "err", err)
	} else {
		s.log.Debug("delivered", "run", o.po.Run, "po", o.po.PONumber)
	}
}

// backoff is the delay after the n-th consecutive failure: 50 ms doubling
// up to RetryMax.
func (s *Server) backoff(n int) time.Duration {
	d := retryStart
	for i := 1; i < n && d < s.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, s.cfg.RetryMax)
}

// deliver POSTs d to url; only a 2xx answer is a success.
func (s *Server) deliver(ctx context.Context, url string, d *Delivery) error {
	body, err := json.Marshal(d)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("delivery to %s answered %s", url, resp.Status)
	}
	return nil
}
