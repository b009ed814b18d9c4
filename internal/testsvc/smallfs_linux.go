package testsvc

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes on a fresh directory and returns
// it, for tests of a full disk; it is unmounted when the test ends. Where
// mounting is not permitted (not root, no CAP_SYS_ADMIN) the test skips,
// unless TIERBENCH_REQUIRE_SERVICES=1.
func SmallFS(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	mountSmall(t, dir, fmt.Sprintf("size=%d,mode=0755", size))
	return dir
}

// SmallFSFor is SmallFS owned by OS user owner (a private server's: a
// tablespace there fills up), mounted where that user can reach it.
func SmallFSFor(t testing.TB, size int, owner string) string {
	t.Helper()
	cred := runAs(t, owner)
	if cred == nil {
		unavailable(t, "a filesystem of OS user %s needs root", owner)
	}
	dir := serverDir(t, "tierbench-smallfs-", nil)
	mountSmall(t, dir, fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", size, cred.Uid, cred.Gid))
	return dir
}

func mountSmall(t testing.TB, dir, opts string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		unavailable(t, "a full filesystem needs a tmpfs mount: %v", err)
	}
	t.Cleanup(func() {
		// Lazily: a child still holding a file must not fail the test.
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("testsvc: unmount %s: %v", dir, err)
		}
	})
}

// Fill writes to a file in dir until the filesystem is full.
func Fill(t testing.TB, dir string) {
	t.Helper()
	f, err := os.CreateTemp(dir, "fill-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}
