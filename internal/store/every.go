package store

import (
	"context"
	"time"
)

// Every calls fn every interval, in a goroutine of its own, until stop is
// called; stop returns once fn has returned for the last time. fn's ctx
// ends with stop. The store's background probes (a lost replica, a lost
// Galera node) run on it: bookkeeping beside the run, stopped with the
// database.
func Every(interval time.Duration, fn func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fn(ctx)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
