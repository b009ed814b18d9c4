// Command longtests prints the go test arguments of what make test leaves
// out: the packages and the top-level tests whose bodies call
// testsvc.SkipUnlessLong or storetest.ShareCell, as
// "-run ^(TestA|TestB)$ ./pkg ./pkg2". make test-all runs them with
// TIERBENCH_LONG=rest, so that make test then make test-all run each test
// and each matrix cell once.
//
// A call outside a test's own body (in a helper) would hide its tests
// from the scan, so it is refused: the gate belongs in the test.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

var gates = []string{"SkipUnlessLong", "ShareCell", "KeepOne"}

func main() {
	tests, pkgs, err := scan(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "longtests:", err)
		os.Exit(1)
	}
	if len(tests) == 0 {
		fmt.Fprintln(os.Stderr, "longtests: no test calls", strings.Join(gates, " or "))
		os.Exit(1)
	}
	fmt.Printf("-run ^(%s)$ %s\n", strings.Join(tests, "|"), strings.Join(pkgs, " "))
}

// scan walks the module at root and returns the gated tests' names and
// their packages, each sorted and unique.
func scan(root string) (tests, pkgs []string, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !callsGate(fn.Body) {
				continue
			}
			if fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				return fmt.Errorf("%s: %s calls %s but is not a test: call it in the test's own body, where this scan finds it",
					fset.Position(fn.Pos()), fn.Name.Name, strings.Join(gates, " or "))
			}
			tests = append(tests, fn.Name.Name)
			pkgs = append(pkgs, "./"+filepath.ToSlash(filepath.Dir(path)))
		}
		return nil
	})
	slices.Sort(tests)
	slices.Sort(pkgs)
	return slices.Compact(tests), slices.Compact(pkgs), err
}

// callsGate: the body calls a gate, in closures and subtests included.
func callsGate(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		var name string
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			name = fun.Sel.Name
		case *ast.Ident:
			name = fun.Name
		}
		if slices.Contains(gates, name) {
			found = true
		}
		return !found
	})
	return found
}
