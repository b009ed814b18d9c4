//go:build !linux

package testsvc

import "testing"

// SmallFS skips: a tmpfs of a given size is Linux's.
func SmallFS(t testing.TB, size int) string {
	t.Helper()
	unavailable(t, "a small filesystem needs Linux's tmpfs")
	return ""
}

// Fill is SmallFS's companion; unused where SmallFS skips.
func Fill(t testing.TB, dir string) {}

// SmallFSFor skips, as SmallFS does.
func SmallFSFor(t testing.TB, size int, owner string) string { return SmallFS(t, size) }
