package report

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// Reports are read in a real browser: headless Chromium, over the
// DevTools protocol, loads the page from its file, and the test reads the
// plotted numbers back from the page's DOM.

// browserTimeout bounds a test's browser, its start included.
const browserTimeout = 90 * time.Second

// browser is a tab that records the requests the page makes and anything
// it reports as an error.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	requests []string
	problems []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	b := &browser{t: t, ctx: testsvc.Chromium(t, browserTimeout)}
	if err := chromedp.Listen(b.ctx, b.record); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func (b *browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	case *runtime.EventExceptionThrown:
		b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			b.problems = append(b.problems, fmt.Sprintf("console.%s", ev.Type))
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			b.problems = append(b.problems, fmt.Sprintf("%s: %s", ev.Entry.Source, ev.Entry.Text))
		}
	}
}

// open loads the file and returns how long the browser took to load it,
// as the page's own navigation timing says (from the start of navigation
// to the end of the load event), and the wall time of the navigation.
func (b *browser) open(path string) (loadMs float64, wall time.Duration) {
	b.t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		b.t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	b.mu.Lock()
	b.requests, b.problems = nil, nil
	b.mu.Unlock()
	start := time.Now()
	if _, err := chromedp.Run(b.ctx, chromedp.Navigate(u)); err != nil {
		b.t.Fatalf("open %s: %v", u, err)
	}
	wall = time.Since(start)
	loadMs = value[float64](b, `(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; })()`)
	// Nothing may leave the file: no script, style, font or image from
	// anywhere.
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.requests {
		if r != u {
			b.t.Errorf("the page requested %s; a report must be self-contained", r)
		}
	}
	if len(b.problems) > 0 {
		b.t.Errorf("the browser reported: %s", strings.Join(b.problems, "; "))
	}
	return loadMs, wall
}

func value[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// dataRows are the plotted numbers of the chart with the given id, as
// the page holds them.
func (b *browser) dataRows(chartID string) [][]string {
	b.t.Helper()
	return value[[][]string](b, fmt.Sprintf(`Array.from(document.querySelectorAll('figure#%s table.data tbody tr')).map(tr => Array.from(tr.cells).map(td => td.textContent))`, chartID))
}

// dataHeader is the chart's numbers' column names.
func (b *browser) dataHeader(chartID string) []string {
	b.t.Helper()
	return value[[]string](b, fmt.Sprintf(`Array.from(document.querySelectorAll('figure#%s table.data thead th')).map(th => th.textContent)`, chartID))
}
