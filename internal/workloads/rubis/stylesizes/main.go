// Command stylesizes counts the code of each RUBiS implementation style
// (--style), as Cecchet et al. tabulated theirs (classes and lines of code
// per style, presentation logic apart from business logic): Go types and
// functions (methods included) and lines of code (neither blank nor
// comment) of the files each style runs on, and the lines of the .proto
// declarations and page templates. It prints a Markdown table.
//
//	go run ./internal/workloads/rubis/stylesizes   (make style-sizes)
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// presentation is the web tier's code, the same under every style: the
// pages, their parameters, the interface they call, and the templates.
var presentation = []string{"web.go", "params.go", "auction.go", "web/*.html"}

// styles are the business logic each style runs on, beyond the
// presentation: hand-written files of package rubis and the .proto
// declarations of its remote interfaces. The entity container
// (internal/container) and the communication layer (internal/remote) are
// every container style's and every remote style's alike, as JBoss's and
// JOnAS's were in the seed's count: not counted; nor is the generated
// code (rubispb/*.pb.go), the loader, the checks or the run's wiring.
var styles = []struct {
	name, seed string
	files      []string
}{
	{"servlets", "Servlets only", []string{"servlets.go"}},
	{"session", "Session Beans", []string{"servlets.go", "session.go", "rubispb/auction.proto"}},
	{"entity (cmp, bmp)", "EB CMP, EB BMP", []string{"facade.go", "entityaccess.go", "entities.go", "entitytier.go", "rubispb/entity.proto"}},
	{"facade", "Session façade", []string{"facade.go", "entityaccess.go", "entities.go", "session.go", "rubispb/auction.proto"}},
	{"facade-remote", "Session façade (RMI between façade and beans)", []string{"facade.go", "entityaccess.go", "entities.go", "session.go", "entitytier.go", "rubispb/auction.proto", "rubispb/entity.proto"}},
	{"local", "EJB 2.0 local", []string{"facade.go", "entityaccess.go", "entities.go"}},
}

// Size is what a set of files holds.
type Size struct {
	Types, Funcs, Lines int // Lines: of code, neither blank nor comment
	ProtoLines          int // of .proto declarations
	TemplateLines       int // of page templates, non-blank
}

func (s Size) add(t Size) Size {
	return Size{s.Types + t.Types, s.Funcs + t.Funcs, s.Lines + t.Lines, s.ProtoLines + t.ProtoLines, s.TemplateLines + t.TemplateLines}
}

// count sizes the files matching patterns under dir.
func count(dir string, patterns []string) (Size, error) {
	var total Size
	for _, p := range patterns {
		files, err := filepath.Glob(filepath.Join(dir, p))
		if err != nil {
			return Size{}, err
		}
		if len(files) == 0 {
			return Size{}, fmt.Errorf("%s: no file matches %s", dir, p)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				return Size{}, err
			}
			var s Size
			switch filepath.Ext(f) {
			case ".go":
				if s, err = goSize(f, src); err != nil {
					return Size{}, err
				}
			case ".proto":
				s.ProtoLines = codeLines(string(src))
			default:
				s.TemplateLines = nonBlank(string(src))
			}
			total = total.add(s)
		}
	}
	return total, nil
}

// goSize counts a Go file's type declarations, functions and methods,
// and lines of code.
func goSize(name string, src []byte) (Size, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return Size{}, err
	}
	var s Size
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			s.Funcs++
		case *ast.GenDecl:
			if d.Tok == token.TYPE {
				s.Types += len(d.Specs)
			}
		}
	}
	s.Lines = codeLines(string(src))
	return s, nil
}

// codeLines counts the lines that hold code: not blank, not a // comment,
// not inside a /* */ comment (Go's and protobuf's comment syntax).
func codeLines(src string) int {
	n, inBlock := 0, false
	for _, line := range strings.Split(src, "\n") {
		l := strings.TrimSpace(line)
		if inBlock {
			end := strings.Index(l, "*/")
			if end < 0 {
				continue
			}
			inBlock, l = false, strings.TrimSpace(l[end+2:])
		}
		if strings.HasPrefix(l, "/*") && !strings.Contains(l, "*/") {
			inBlock = true
			continue
		}
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		n++
	}
	return n
}

func nonBlank(src string) int {
	n := 0
	for _, line := range strings.Split(src, "\n") {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n
}

// seedSizes are the seed's table (slides of Cecchet et al., "Implementations
// summary"): classes and lines, presentation logic then business logic.
var seedSizes = []struct {
	style                   string
	presClasses, presLines  int
	busClasses, busLines    int
	totalClasses, totalLine int
}{
	{"Servlets only", 25, 4590, 0, 0, 25, 4590},
	{"Session Beans", 22, 2730, 51, 5270, 73, 8000},
	{"EB CMP", 23, 3980, 40, 6780, 63, 10760},
	{"EB BMP", 23, 3980, 40, 9850, 63, 13830},
	{"Session façade", 22, 2660, 85, 10780, 107, 13440},
	{"EJB 2.0 local", 22, 2725, 91, 11070, 113, 13795},
}

func write(w io.Writer, dir string) error {
	pres, err := count(dir, presentation)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "The seed's (Java, EJB; classes and lines of code):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| style | presentation: classes, lines | business: classes, lines | total: classes, lines |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range seedSizes {
		bus := "–"
		if s.busClasses > 0 {
			bus = fmt.Sprintf("%d, %d", s.busClasses, s.busLines)
		}
		fmt.Fprintf(w, "| %s | %d, %d | %s | %d, %d |\n", s.style, s.presClasses, s.presLines, bus, s.totalClasses, s.totalLine)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "tierbench's (Go; types, functions and methods, lines of code; .proto lines apart; counted by stylesizes):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| style (seed's) | presentation: types, funcs, lines (+ template lines) | business: types, funcs, lines (+ .proto lines) | total: types, funcs, lines |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, st := range styles {
		bus, err := count(dir, st.files)
		if err != nil {
			return err
		}
		t := pres.add(bus)
		fmt.Fprintf(w, "| %s (%s) | %d, %d, %d (+ %d) | %d, %d, %d (+ %d) | %d, %d, %d |\n", st.name, st.seed,
			pres.Types, pres.Funcs, pres.Lines, pres.TemplateLines, bus.Types, bus.Funcs, bus.Lines, bus.ProtoLines,
			t.Types, t.Funcs, t.Lines+t.ProtoLines+t.TemplateLines)
	}
	return nil
}

func main() {
	dir := "internal/workloads/rubis"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := write(os.Stdout, dir); err != nil {
		fmt.Fprintln(os.Stderr, "stylesizes:", err)
		os.Exit(3)
	}
}
