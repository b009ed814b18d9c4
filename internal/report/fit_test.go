package report

import (
	"os"
	"path/filepath"
	"slices"
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
		// Every line stays inside its chart's frame (a spectrum's maximum
		// too, drawn at the right edge).
		outside := value[[]string](b, `Array.from(document.querySelectorAll('figure.chart')).flatMap(f => {
			const frame = f.querySelector('rect.axis').getBBox();
			return Array.from(f.querySelectorAll('path.series')).filter(p => {
				const r = p.getBBox();
				return r.y < frame.y - 1 || r.y + r.height > frame.y + frame.height + 1 || r.x < frame.x - 1 || r.x + r.width > frame.x + frame.width + 1;
			}).map(p => f.id + ': ' + p.textContent);
		})`)
		if len(outside) > 0 {
			t.Errorf("%s: lines leave their chart: %s", tc.name, strings.Join(outside, "; "))
		}
		if dir := os.Getenv("TIERBENCH_SCREENSHOTS"); dir != "" {
			// For people: each section as the window shows it.
			for _, id := range value[[]string](b, `Array.from(document.querySelectorAll('section')).map(s => s.id)`) {
				png, err := chromedp.Run(b.ctx, chromedp.Screenshot(chromedp.CSS("section#"+id)))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, strings.TrimSuffix(filepath.Base(page), ".html")+"-"+id+".png"), png, 0o644)
			}
		}
	}
}

// A sweep of which one experiment of two ran, along pool sizes "0",
// "20%" and "100%", two repetitions each, with the paper's figures: the
// title says which experiment ran, the axis is one of percentages, the
// paper's figures are drawn beside the measured ones (and their shapes
// compared), and every interval bar has its caps inside the plot.
func TestSweepPageOfRealRuns(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	in, err := Read([]string{filepath.Join("testdata", "runs", "sweep")})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "sweep.html")
	writeHTML(t, in, page)
	b.open(page)

	if h1 := value[string](b, `document.querySelector('h1').textContent`); !strings.Contains(h1, "experiment-1 only (1 of the 2 experiments") {
		t.Errorf("title %q does not say that one experiment of two ran", h1)
	}
	const metric = "#chart-sweep-0-metric"
	ticks := value[[]string](b, `Array.from(document.querySelectorAll('`+metric+` svg > text[text-anchor=middle]')).map(e => e.textContent)`)
	if got := strings.Join(ticks, ","); !strings.HasPrefix(got, "0%,20%,100%,pool (%)") {
		t.Errorf("x axis %q, want 0%%,20%%,100%% and pool (%%)", got)
	}
	legend := value[[]string](b, `Array.from(document.querySelectorAll('`+metric+` ul.legend li')).map(e => e.textContent.trim())`)
	if strings.Join(legend, ",") != "TPS,paper" {
		t.Errorf("legend %q, want the measured TPS and the paper's", legend)
	}
	// The paper's points are the sweep file's: 300, 304, 300 TPS.
	paper := value[[]string](b, `Array.from(document.querySelectorAll('`+metric+` circle title')).map(e => e.textContent).filter(s => s.startsWith('paper'))`)
	if strings.Join(paper, ",") != "paper: 300,paper: 304,paper: 300" {
		t.Errorf("paper points %q", paper)
	}
	if n := value[int](b, `document.querySelectorAll('#chart-sweep-0-shape path.series').length`); n != 2 {
		t.Errorf("the shape chart draws %d lines, want measured and paper", n)
	}
	// Caps: each bar is a group of its line and two ends; none leaves the
	// plot's frame.
	bad := value[[]string](b, `(() => {
		const frame = document.querySelector('`+metric+` rect.axis').getBBox();
		return Array.from(document.querySelectorAll('`+metric+` g.interval')).filter(g => {
			const r = g.getBBox();
			return g.children.length !== 3 || r.y < frame.y - 0.5 || r.y + r.height > frame.y + frame.height + 0.5;
		}).map(g => g.outerHTML);
	})()`)
	if n := value[int](b, `document.querySelectorAll('`+metric+` g.interval').length`); n != 3 || len(bad) > 0 {
		t.Errorf("%d interval bars, want 3; without caps or outside the plot: %q", n, bad)
	}
}

// RUBiS's 27 operations: one chart draws the 8 most frequent, each in a
// colour of its own; every other operation has its own chart behind its
// name, beside all operations together. No operation is left out.
func TestManyOperationsSpectrumStaysReadable(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	run, err := ReadRun(filepath.Join("testdata", "runs", "rubis-sqlite.json"))
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "rubis.html")
	writeHTML(t, &Input{Runs: []*Run{run}}, page)
	b.open(page)

	colours := value[[]string](b, `Array.from(document.querySelectorAll('#chart-spectrum path.series')).map(p => p.getAttribute('stroke'))`)
	drawn := value[[]string](b, `Array.from(document.querySelectorAll('#chart-spectrum path.series title')).map(e => e.textContent)`)
	if len(drawn) != spectrumLines || len(slices.Compact(slices.Sorted(slices.Values(colours)))) != len(colours) {
		t.Errorf("the spectrum draws %d lines in colours %v, want %d in as many colours", len(drawn), colours, spectrumLines)
	}
	for _, op := range drawn[1:] {
		if r := run.Result.Operations; r[op].Count > r[drawn[0]].Count {
			t.Errorf("%s (%d) drawn after %s (%d)", op, r[op].Count, drawn[0], r[drawn[0]].Count)
		}
	}
	others := value[[]string](b, `Array.from(document.querySelectorAll('#spectrum details.picked')).map(d => d.dataset.name + ':' + Array.from(d.querySelectorAll('path.series title')).map(e => e.textContent).join('+'))`)
	seen := map[string]bool{}
	for _, op := range drawn {
		seen[op] = true
	}
	for _, o := range others {
		op, lines, _ := strings.Cut(o, ":")
		if seen[op] || lines != op+"+all operations" {
			t.Errorf("other operation %q: drawn twice, or not beside all operations", o)
		}
		seen[op] = true
	}
	for _, op := range run.Result.OperationOrder {
		if run.Result.Operations[op].Completed > 0 && !seen[op] {
			t.Errorf("%s has no spectrum", op)
		}
	}
}

// A comparison of two real runs (Stock-Online on SQLite: 10 clients under
// commit option C, 20 under B) lists the settings that differ, and only
// those: not the result file, not the seed.
func TestComparisonNamesTheSettingsThatDiffer(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	runs := filepath.Join("testdata", "runs")
	in, err := Read([]string{filepath.Join(runs, "stockonline-sqlite.json"), filepath.Join(runs, "stockonline-sqlite-b.json")})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "compare.html")
	writeHTML(t, in, page)
	b.open(page)
	rows := value[[]string](b, `Array.from(document.querySelectorAll('table.settings tbody tr')).map(tr => Array.from(tr.cells).map(td => td.textContent).join(' '))`)
	want := map[string]bool{}
	for _, r := range in.Runs {
		for k, v := range flatConfig(r.Result) {
			if other := flatConfig(in.Runs[0].Result)[k]; other != v {
				want[k+" "+other+" "+v] = true
			}
		}
	}
	if len(rows) == 0 || len(rows) != len(want) {
		t.Errorf("settings that differ: %q, want %d rows", rows, len(want))
	}
	for _, r := range rows {
		if !want[r] {
			t.Errorf("settings that differ: row %q does not differ, or has the wrong values", r)
		}
	}
	for _, key := range []string{"clients 10 20", "commit-option C B"} {
		if !slices.Contains(rows, key) {
			t.Errorf("settings that differ lack %q: %q", key, rows)
		}
	}
}
