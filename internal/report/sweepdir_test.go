package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sweep directory's points come from its sweep file, in the file's
// order; without the file (older sweeps) from the settings that differ
// between its results, the numeric one with the most values along x.
func TestSweepPointsWithAndWithoutItsFile(t *testing.T) {
	t.Parallel()
	dir, _ := sweepDir(t)
	for _, tc := range []struct {
		name     string
		inferred bool
		labels   []string
	}{
		{"from the file", false, []string{"persistence=cmp clients=1", "persistence=cmp clients=4", "persistence=bmp clients=1", "persistence=bmp clients=4"}},
		{"inferred", true, []string{"persistence=bmp clients=1", "persistence=bmp clients=4", "persistence=cmp clients=1", "persistence=cmp clients=4"}},
	} {
		if tc.inferred {
			os.Remove(filepath.Join(dir, SweepFile))
		}
		s, err := ReadSweep(dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.Inferred != tc.inferred || len(s.Experiments) != 1 {
			t.Fatalf("%s: %+v", tc.name, s)
		}
		x := s.Experiments[0]
		var labels []string
		for _, p := range x.Points {
			labels = append(labels, strings.Join(p.Values, " "))
			if len(p.Runs) != 2 || !strings.HasSuffix(p.Runs[0].Path, "-1.json") || !strings.HasSuffix(p.Runs[1].Path, "-2.json") {
				t.Errorf("%s: point %v has runs %v", tc.name, p.Values, p.Runs)
			}
		}
		if x.XKey != "clients" || strings.Join(labels, "|") != strings.Join(tc.labels, "|") {
			t.Errorf("%s: x %q, points %q; want clients, %q", tc.name, x.XKey, labels, tc.labels)
		}
	}
}
