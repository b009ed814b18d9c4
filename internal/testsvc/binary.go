package testsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// built is the tierbench binary of this test process, built once.
var built struct {
	once sync.Once
	path string
	err  error
}

// binPrefix names the directories the binaries are built into, with the
// building process's PID, so that a later build can remove those of test
// processes that have ended.
const binPrefix = "tierbench-testsvc-bin-"

// Binary builds ./cmd/tierbench of the module the test runs in, once per
// test process, and returns the executable's path. The binary stays in a
// temporary directory until a later test process finds its builder gone
// and removes it.
func Binary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.path, built.err = build() })
	if built.err != nil {
		t.Fatalf("testsvc: build tierbench: %v", built.err)
	}
	return built.path
}

func build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	goBin := lookPath("go", filepath.Join(runtime.GOROOT(), "bin", "go"))
	if goBin == "" {
		return "", errors.New("no go command on PATH")
	}
	removeStaleBuilds()
	dir, err := os.MkdirTemp("", binPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "tierbench")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/tierbench")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/tierbench in %s: %v\n%s", root, err, msg)
	}
	return out, nil
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// removeStaleBuilds removes the build directories of test processes that
// no longer run.
func removeStaleBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binPrefix+"*"))
	for _, d := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), binPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}
