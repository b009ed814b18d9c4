package sweep_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/sweep"
)

// FuzzSweepFile feeds sweep files to Parse and Points: no panic; a refusal
// in one line naming the file; an accepted file has a name, experiments
// with unique names and at least one repetition, and expands to exactly
// the product of each experiment's axis lengths (at most MaxPoints), every
// point labelled by its axes' values in order, no two alike; an axis given
// twice, or a value given twice on an axis, is refused.
func FuzzSweepFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"name: x\nexperiments: [{name: a}]\n",
		"name: x\nexperiments: [{name: a}]\ncolour: red\n",
		"experiments: [{name: a}]\n",
		"name: x\nexperiments: [{name: a}, {name: a}]\n",
		"name: x\nrepetitions: -2\nexperiments: [{name: a}]\n",
		"name: x\nexperiments: [{name: a, axes: {pool: 20%}}]\nbase: {workload: stockonline}\n",
		"name: x\nexperiments: [{name: a, axes: [pool]}]\n",
		"name: x\nexperiments: [{name: a, axes: {pool: []}}]\n",
		"name: x\nexperiments: [{name: a, axes: {pool: [\"10\", \"20\"], pool: [\"30\"]}}]\n",
		"name: x\nexperiments: [{name: a, axes: {colour: [red]}}]\n",
		"name: x\nexperiments: [{name: a, axes: {pool: [\"10\", \"20\", \"10\"]}}]\n",
		"name: x\nexperiments: [{name: a, axes: {entity: [[Item.cache=1], [Item.cache=2, Account.cache=2]]}}]\n",
		"name: x\nexperiments: [{name: a, axes: {entity: [[Item.cache=1], [Item.cache=1]]}}]\n",
		"name: x\nexperiments: [{name: a, set: {clients: 1, clients: 2}}]\n",
		"name: x\nexperiments: [{name: a, set: &s {clients: 2}}]\nbase: *s\n",
		"name: x\nbase: [1]\nexperiments: [{name: a}]\n",
		"name: x\nexperiments: [{name: a, variants: [{name: p, clients: 2}, {name: q, clients: 3, scale: 2}], axes: {seed: [1, 2]}}]\n",
		"name: x\nexperiments: [{name: a, variants: [{name: p}, {name: p}]}]\n",
		"name: x\nexperiments: [{name: a, variants: [{clients: 2}]}]\n",
		"name: x\nexperiments: [{name: a, variants: [[1]]}]\n",
		"name: x\nexperiments: [{name: a, variants: [{name: ../p}]}]\n",
		"name: x\nexperiments: [{name: a, variants: [{name: p, colour: red}]}]\n",
		"name: x\nexperiments: [{name: a}]\n---\ncolour: red\n",
		"name: x\nexperiments: [{name: a, axes: {\"a\\nb\": [1]}}]\n",
		"name: x\nexperiments: [{name: \"a\\nb\"}, {name: \"a\\nb\"}]\n",
		"name: x\nexperiments:\n - name: a\n   axes: {clients: &v [1, 2, 3], scale: *v, seed: *v}\n",
		"name: x\nexperiments: [{name: ../../escape}]\n",
		"name: ../x\nexperiments: [{name: a}]\n",
		"name: x\nexperiments: [{name: a, axes: {clients: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], scale: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], retries: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}]\n",
		`
name: grid
base: {workload: stockonline, clients: 7, cache: "5", pool: "1"}
repetitions: 3
experiments:
  - name: e
    set: {commit-option: B}
    axes:
      cache: ["0", "50%"]
      pool: ["10", "20", "30"]
    paper: {"0": 300}
  - name: f
    axes: {isolation: [read-committed, serializable]}
`,
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(f.TempDir(), "sweep.yaml")
	defaults := config.New("stockonline", config.Defaults{Clients: 1, ServerThreads: 1, Iterations: 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := sweep.Parse(path)
		if err != nil {
			oneLineNaming(t, data, err, path)
			return
		}
		if file.Name == "" || len(file.Experiments) == 0 || file.Repetitions < 1 {
			t.Fatalf("%q: accepted as %+v: want a name, an experiment and a repetition", data, file)
		}
		// Names become the results' directories and files.
		for _, name := range append([]string{file.Name}, experimentNames(file)...) {
			if name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, "\\/:\x00\n") {
				t.Fatalf("%q: accepted the name %q, which is not one file name", data, name)
			}
		}
		want, refused := 0, false
		for i, e := range file.Experiments {
			for _, other := range file.Experiments[:i] {
				if other.Name == e.Name {
					t.Fatalf("%q: accepted two experiments named %q", data, e.Name)
				}
			}
			n := gridSize(&e)
			want += n
			refused = refused || n > sweep.MaxPoints || repeats(&e)
		}
		points, err := file.Points(defaults, nil)
		if err != nil {
			oneLineNaming(t, data, err, "")
			return
		}
		if refused {
			t.Fatalf("%q: expanded an experiment beyond %d points, or with an axis or value given twice", data, sweep.MaxPoints)
		}
		if len(points) != want {
			t.Fatalf("%q: %d points, want %d (the product of each experiment's axis lengths)", data, len(points), want)
		}
		seen := make(map[string]bool)
		for _, p := range points {
			if keys := axisKeys(p.Experiment); len(p.Values) != len(keys) {
				t.Fatalf("%q: point %s has %d values for axes %v", data, p.Label(), len(p.Values), keys)
			} else {
				for j, v := range p.Values {
					if !strings.HasPrefix(v, keys[j]+"=") {
						t.Fatalf("%q: point %s: value %d is not axis %s's", data, p.Label(), j, keys[j])
					}
				}
			}
			key := p.Experiment.Name + " " + p.Label()
			if seen[key] {
				t.Fatalf("%q: experiment %s has two points %s", data, p.Experiment.Name, p.Label())
			}
			seen[key] = true
		}
	})
}

func oneLineNaming(t *testing.T, data []byte, err error, path string) {
	t.Helper()
	if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, path) {
		t.Fatalf("%q: error %q, want one line naming %s", data, msg, path)
	}
}

// gridSize is how many points an experiment's axes make, counted from the
// YAML: each axis a list of values, the axes multiplying; past MaxPoints,
// MaxPoints+1.
func gridSize(e *sweep.Experiment) int {
	n := max(len(e.Variants), 1)
	for i := 1; i < len(e.Axes.Content); i += 2 {
		n = min(n*len(e.Axes.Content[i].Content), sweep.MaxPoints+1)
	}
	return n
}

// repeats: an axis of e is given twice, or a scalar value twice on one
// axis.
func repeats(e *sweep.Experiment) bool {
	keys := axisKeys(e)
	for i, k := range keys {
		if slices.Contains(keys[:i], k) {
			return true
		}
	}
	for i := 1; i < len(e.Axes.Content); i += 2 {
		var values []string
		for _, v := range e.Axes.Content[i].Content {
			if v.Kind != yaml.ScalarNode {
				continue
			}
			if slices.Contains(values, v.Value) {
				return true
			}
			values = append(values, v.Value)
		}
	}
	return false
}

func experimentNames(f *sweep.File) []string {
	var names []string
	for _, e := range f.Experiments {
		names = append(names, e.Name)
	}
	return names
}

func axisKeys(e *sweep.Experiment) []string {
	var keys []string
	if len(e.Variants) > 0 {
		keys = append(keys, sweep.VariantAxis)
	}
	for i := 0; i < len(e.Axes.Content); i += 2 {
		keys = append(keys, e.Axes.Content[i].Value)
	}
	return keys
}
