package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
)

func TestRetryRunsAgainOnlyWhatMaySucceed(t *testing.T) {
	deadlock := store.Classified(store.ErrDeadlock, errors.New("victim"))
	other := errors.New("syntax error")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name     string
		ctx      context.Context
		fails    []error // fn's results, then nil
		wantRuns int
		wantErr  error
	}{
		{"success at once", context.Background(), nil, 1, nil},
		{"a victim, then success", context.Background(), []error{deadlock}, 2, nil},
		{"victims up to the attempts", context.Background(), []error{deadlock, deadlock, deadlock, deadlock}, 3, store.ErrDeadlock},
		{"not retryable", context.Background(), []error{other}, 1, other},
		{"in doubt is never retried", context.Background(), []error{store.ErrInDoubt}, 1, store.ErrInDoubt},
		{"ctx done ends the pauses", cancelled, []error{deadlock, deadlock}, 1, store.ErrDeadlock},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs := 0
			err := store.Retry(tt.ctx, 3, func() error {
				runs++
				if runs <= len(tt.fails) {
					return tt.fails[runs-1]
				}
				return nil
			})
			if runs != tt.wantRuns || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("%d runs, error %v; want %d runs, error %v", runs, err, tt.wantRuns, tt.wantErr)
			}
		})
	}
}
