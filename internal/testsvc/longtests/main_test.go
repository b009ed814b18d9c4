package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestScanFindsTheGatedTestsAndTheirPackages(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a/a_test.go", `package a
func TestLong(t *testing.T) { testsvc.SkipUnlessLong(t, "slow") }
func TestShared(t *testing.T) { each(t, func(t *testing.T, dsn string) { t.Run("x", func(t *testing.T) { storetest.ShareCell(t, dsn, 0) }) }) }
func TestQuick(t *testing.T) {}
`)
	write(t, dir, "b/b_test.go", `package b
func TestQuickToo(t *testing.T) {}
`)
	write(t, dir, "a/testdata/c_test.go", `package c
func TestInTestdata(t *testing.T) { testsvc.SkipUnlessLong(t, "not a package") }
`)
	tests, pkgs, err := scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"TestLong", "TestShared"}; !slices.Equal(tests, want) {
		t.Errorf("tests %v, want %v", tests, want)
	}
	if len(pkgs) != 1 || !strings.HasSuffix(pkgs[0], "/a") {
		t.Errorf("packages %v, want the one of a", pkgs)
	}
}

func TestScanRefusesAGateInAHelper(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a/a_test.go", `package a
func slowSetup(t *testing.T) { testsvc.SkipUnlessLong(t, "hidden") }
func TestUsesIt(t *testing.T) { slowSetup(t) }
`)
	if _, _, err := scan(dir); err == nil || !strings.Contains(err.Error(), "slowSetup") {
		t.Fatalf("a gate in a helper hides its tests from make test-all; want an error naming slowSetup, got %v", err)
	}
}

// TestTheModulesGatesAreAllInTests: the scan of this module succeeds, so
// make test-all runs every test make test left out.
func TestTheModulesGatesAreAllInTests(t *testing.T) {
	tests, pkgs, err := scan(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 || len(pkgs) == 0 {
		t.Fatalf("no gated tests found in the module (tests %v, packages %v)", tests, pkgs)
	}
	if !slices.Contains(tests, "TestREADMEExamplesRunAsWritten") {
		t.Errorf("the README examples' test is gated but was not found: %v", tests)
	}
}
