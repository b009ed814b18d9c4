package testsvc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumFlags are the browser's flags, besides the fresh profile
// directory and the DevTools pipe that chromedp adds: headless, and
// nothing that reaches the network on its own (updates, sync, the
// first-run pages), so that what a page requests is all a test sees.
var chromiumFlags = []string{"headless", "no-sandbox", "disable-gpu", "no-first-run",
	"disable-background-networking", "disable-component-update", "disable-sync"}

// Chromium starts Debian's chromium (or a Chrome on PATH) headless with a
// fresh profile and returns a tab's context for chromedp, alive for
// timeout or until the test ends, when the browser is killed and its
// profile removed. Its output is logged if the test fails. Without a
// browser the test skips (fails with TIERBENCH_REQUIRE_SERVICES=1).
func Chromium(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome"}
	path := lookPath(names...)
	if path == "" {
		unavailable(t, "none of %v on PATH (apt-get install -y chromium)", names)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir())}
	for _, f := range chromiumFlags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	output := &lockedOutput{}
	opts = append(opts, chromedp.CombinedOutput(output))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	// Cleanups run last in first out: the tab, then the browser (which
	// waits for its exit), then its output if the test failed.
	t.Cleanup(func() {
		if t.Failed() {
			out := output.String()
			t.Logf("chromium's output (its end):\n%s", out[max(len(out)-8<<10, 0):])
		}
	})
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancelTab)
	return tabCtx
}

// lockedOutput collects the browser's output, written from its own
// goroutine.
type lockedOutput struct {
	mu  sync.Mutex
	buf []byte
}

func (o *lockedOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	return len(p), nil
}

func (o *lockedOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf)
}
