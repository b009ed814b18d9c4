package inputfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte("0123456789"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if b, err := Read(ctx, small, "a result file", 10); err != nil || string(b) != "0123456789" {
		t.Errorf("a file of exactly the limit: %q, %v", b, err)
	}
	for _, tc := range []struct {
		path string
		max  int64
		want error
		says string
	}{
		{"/dev/zero", 1 << 30, ErrNotRegular, "/dev/zero is not a regular file (a device): give a result file"},
		// Opening a named pipe would block until a writer came.
		{fifo, 1 << 30, ErrNotRegular, "is not a regular file (a named pipe)"},
		{dir, 1 << 30, ErrNotRegular, "is a directory"},
		{small, 9, ErrTooLarge, "small.json is 10 B, more than a result file may be (at most 9 B)"},
	} {
		_, err := Read(ctx, tc.path, "a result file", tc.max)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %v saying %q", tc.path, err, tc.want, tc.says)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Read(cancelled, small, "a result file", 10); !errors.Is(err, context.Canceled) {
		t.Errorf("after the context ended: %v", err)
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 256 << 20: "256 MiB", 5 << 40: "5 TiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
