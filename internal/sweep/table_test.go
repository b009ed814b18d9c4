package sweep_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/sweep"
)

// A point of one run prints its mean alone: "± 0.0" would claim a spread
// nobody measured. Two runs print theirs. The runs are real (the
// report's fixtures: a short SQLite sweep of Stock-Online).
func TestTableShowsASpreadOnlyWhereThereAreRepetitions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "report", "testdata", "runs", "sweep", "experiment-1")
	var runs []*result.Result
	for _, name := range []string{"pool=0-1.json", "pool=0-2.json"} {
		r, err := result.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	e := &sweep.Experiment{Name: "experiment-1"}
	for _, tc := range []struct {
		runs   []*result.Result
		spread bool
	}{{runs[:1], false}, {runs, true}} {
		var b bytes.Buffer
		sweep.WriteTable(&b, []sweep.Outcome{{Point: sweep.Point{Experiment: e, Values: []string{"pool=0"}}, Runs: tc.runs}})
		_, row, _ := strings.Cut(b.String(), "\n  pool=0")
		if got := strings.Contains(row, "±"); got != tc.spread {
			t.Errorf("%d runs: the table shows a spread: %v, want %v:\n%s", len(tc.runs), got, tc.spread, b.String())
		}
	}
}
