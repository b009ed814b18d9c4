package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every file a command reads is a regular file of a bounded size, checked
// before it is read: /dev/zero, a named pipe or a huge file used to be
// read until the kernel killed the process (23 GB), or to block.
func TestInputFilesAreBoundedBeforeTheyAreRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Sparse: 2 GiB on no disk.
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(2 << 30)
		f.Close()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "/dev/zero", "--clients", "1..1000"}, "/dev/zero is not a regular file (a device): give a result file"},
		{[]string{"model", huge}, "huge.json is 2 GiB, more than a result file may be (at most 1 GiB)"},
		{[]string{"report", "/dev/zero"}, "/dev/zero is not a regular file (a device): give a result file"},
		{[]string{"report", fifo}, "fifo is not a regular file (a named pipe): give a result file"},
		{[]string{"report", huge}, "huge.json is 2 GiB, more than a result file may be (at most 1 GiB)"},
		{[]string{"run", "stockonline", "-f", "/dev/zero"}, "-f /dev/zero: /dev/zero is not a regular file (a device): give a configuration file"},
		{[]string{"run", "stockonline", "-f", fifo}, "is not a regular file (a named pipe): give a configuration file"},
		{[]string{"run", "stockonline", "-f", huge}, "huge.json is 2 GiB, more than a configuration file may be (at most 1 MiB)"},
		{[]string{"sweep", "/dev/zero"}, "/dev/zero is not a regular file (a device): give a sweep file"},
	} {
		began := time.Now()
		code, _, stderr := runCLI(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want 2 saying %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("%s took %v to refuse", strings.Join(tc.args, " "), d)
		}
	}
}
