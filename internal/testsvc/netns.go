package testsvc

import (
	"os"
	"os/exec"
	"testing"
)

// Namespaces skips the test unless it may make network namespaces (root,
// and iproute2's ip, tc and bridge on PATH); under
// TIERBENCH_REQUIRE_SERVICES=1 it fails instead.
func Namespaces(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "network namespaces need root")
	}
	for _, prog := range []string{"ip", "tc", "bridge"} {
		if _, err := exec.LookPath(prog); err != nil {
			unavailable(t, "network namespaces need iproute2's %s: %v", prog, err)
		}
	}
}
