package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The counts of a file whose contents are known: its types, functions and
// methods, and the lines that hold code (not blank, not comments, not
// inside a block comment); a .proto's code lines; a template's non-blank
// lines.
func TestCount(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.go": `// Package a is counted.
package a

/* A block
comment. */

type (
	T struct{ x int }
	U int
)

type V string

// F is a function.
func F() {}

func (T) M() int {
	return 1 // a trailing comment counts as code
}
`,
		"a.proto": "// comment\nsyntax = \"proto3\";\n\nmessage M {\n  int64 a = 1;\n}\n",
		"t.html":  "<p>\n\n{{.X}}</p>\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := count(dir, []string{"*.go", "*.proto", "*.html"})
	if err != nil {
		t.Fatal(err)
	}
	// Code lines of a.go: package, type (, T, U, ), type V, func F, func
	// (T) M, return, }: 10.
	want := Size{Types: 3, Funcs: 2, Lines: 10, ProtoLines: 4, TemplateLines: 2}
	if got != want {
		t.Errorf("count = %+v, want %+v", got, want)
	}
	if _, err := count(dir, []string{"missing.go"}); err == nil {
		t.Error("a pattern that matches nothing: no error")
	}
}

// Every style's files are there: the table is counted from what exists.
func TestStylesFilesExist(t *testing.T) {
	if err := write(new(discard), ".."); err != nil {
		t.Fatal(err)
	}
}

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }
