package store_test

import (
	"errors"
	"io"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
)

func TestInDoubtIsItsOwnClass(t *testing.T) {
	err := store.Classified(store.ErrInDoubt, io.ErrUnexpectedEOF)
	if !errors.Is(err, store.ErrInDoubt) || errors.Is(err, store.ErrConnectionLost) {
		t.Errorf("%v: want ErrInDoubt and not ErrConnectionLost", err)
	}
	if store.Retryable(err) {
		t.Error("a commit in doubt must not be retryable: it may have committed")
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the cause must stay reachable")
	}
	if got := (store.Stats{InDoubt: 3}).Sub(store.Stats{InDoubt: 1}).InDoubt; got != 2 {
		t.Errorf("Stats.Sub: InDoubt = %d, want 2", got)
	}
}
