package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// The reference in docs/ that is generated from the code is what the code
// generates now: docs/cli/*.md from the commands (a flag added, a help
// text changed, a command removed) and docs/result.schema.json from the
// result types. make docs regenerates both with the same command.
func TestDocsAreWhatTheCodeGenerates(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	dir := t.TempDir()
	if out, err := exec.Command(bin, "docs", dir, "--source", "../..").CombinedOutput(); err != nil {
		t.Fatalf("tierbench docs %s: %v\n%s", dir, err, out)
	}
	generated := docFiles(t, dir)
	committed := docFiles(t, "../../docs")
	if len(generated) < 10 || !slices.Contains(generated, "cli/tierbench_run.md") || !slices.Contains(generated, "result.schema.json") {
		t.Fatalf("tierbench docs wrote %v; want a page per command and the schema", generated)
	}
	for _, name := range generated {
		want, err := os.ReadFile(filepath.Join("../../docs", name))
		if err != nil {
			t.Errorf("docs/%s is missing: run make docs", name)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s differs from what the code generates: run make docs", name)
		}
	}
	for _, name := range committed {
		if !slices.Contains(generated, name) {
			t.Errorf("docs/%s is no longer generated (its command is gone): run make docs", name)
		}
	}
}

// docFiles lists the generated files under a docs directory, relative to it.
func docFiles(t *testing.T, dir string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(dir, "cli", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pages {
		out = append(out, "cli/"+filepath.Base(p))
	}
	if _, err := os.Stat(filepath.Join(dir, "result.schema.json")); err == nil {
		out = append(out, "result.schema.json")
	}
	return out
}
