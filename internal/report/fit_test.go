package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Every kind of page fits a 1280 px wide window: the page does not scroll
// sideways, and no table or chart needs its own scroll bar to show its
// last columns. The pages are made from result files of real runs
// (testdata/runs: RUBiS's 26 operations, Stock-Online's entity
// container, and a sweep of two repetitions per point; see
// testdata/runs/README).
func TestEveryPageKindFitsTheScreen(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	if _, err := chromedp.Run(b.ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join("testdata", "runs")
	out := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"single run (RUBiS)", []string{filepath.Join(runs, "rubis-sqlite.json")}},
		{"single run (Stock-Online, container)", []string{filepath.Join(runs, "stockonline-sqlite.json")}},
		{"comparison A B", []string{filepath.Join(runs, "stockonline-sqlite.json"), filepath.Join(runs, "stockonline-sqlite-b.json")}},
		{"sweep", []string{filepath.Join(runs, "sweep")}},
	} {
		in, err := Read(tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		page := filepath.Join(out, strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(tc.name)+".html")
		writeHTML(t, in, page)
		b.open(page)
		width := value[int](b, `window.innerWidth`)
		if width != 1280 {
			t.Fatalf("the window is %d px wide, want 1280", width)
		}
		if w := value[int](b, `document.documentElement.scrollWidth`); w > value[int](b, `document.documentElement.clientWidth`) {
			t.Errorf("%s: the page is %d px wide in a %d px window", tc.name, w, width)
		}
		// Each table's box, each chart: content wider than the box scrolls
		// or is cut.
		over := value[[]string](b, `Array.from(document.querySelectorAll('div.wide, figure, svg')).filter(e => e.closest('details:not([open])') === null).filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > document.documentElement.clientWidth).map(e => (e.querySelector('table') ? e.querySelector('table').className : e.id || e.tagName) + ' ' + e.scrollWidth + '>' + e.clientWidth)`)
		if len(over) > 0 {
			t.Errorf("%s: wider than their box: %s", tc.name, strings.Join(over, "; "))
		}
		if os.Getenv("TIERBENCH_SCREENSHOTS") != "" {
			png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(90))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(os.Getenv("TIERBENCH_SCREENSHOTS"), filepath.Base(page)+".png"), png, 0o644)
		}
	}
}
