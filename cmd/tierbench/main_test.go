package main

import (
	"os"
	"testing"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// The parallel tests run tierbench as child processes and wait for them
// (runs of fixed length, loads into the databases), so more than two run at
// once.
func TestMain(m *testing.M) { os.Exit(testsvc.MainWaiting(m)) }

// skipWhatMakeTestRan skips a case that make test runs when make test-all
// (TIERBENCH_LONG=rest) runs its test again for the long cases beside it:
// the gated test is run whole, and each case is to run once in CI.
func skipWhatMakeTestRan(t *testing.T) {
	t.Helper()
	if os.Getenv(testsvc.LongEnv) == "rest" {
		t.Skip("make test runs this case")
	}
}
