package atomicfile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tierbench/tierbench/internal/atomicfile"
	"github.com/tierbench/tierbench/internal/testsvc"
)

func TestWriteReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	st, _ := os.Stat(path)
	if err != nil || string(b) != "new content" || st.Mode().Perm() != 0o644 {
		t.Errorf("after Write: %q, mode %v, %v; want the new content, 0644", b, st.Mode().Perm(), err)
	}
}

// On a full filesystem the write fails with ENOSPC, the file that was
// there stays as it was and nothing else is left in the directory.
func TestWriteOnAFullFilesystemLeavesNothingPartial(t *testing.T) {
	dir := testsvc.SmallFS(t, 64<<10)
	path := filepath.Join(dir, "r.json")
	if err := os.WriteFile(path, []byte("the old result"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := atomicfile.Write(path, bytes.Repeat([]byte("x"), 256<<10), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write of 256 KiB into 64 KiB: %v, want ENOSPC", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "the old result" {
		t.Errorf("the file holds %d bytes, want the old result untouched", len(b))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the directory, want only r.json: %v", len(entries), entries)
	}
}
