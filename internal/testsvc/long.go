package testsvc

import (
	"os"
	"testing"
)

// LongEnv names the environment variable that runs the long tests:
// fault injection (servers and tiers killed or restarted mid-run), soaks
// (hour-long results, the README's timed examples) and every cell of a
// matrix. make test-all and CI set it; make test leaves it unset so that
// it finishes in minutes while still running every package against every
// real service.
//
// It is not -short: make test-race's -short means "SQLite alone", a
// different axis (which database answers, not how long a test runs).
const LongEnv = "TIERBENCH_LONG"

// Long reports whether the long tests run: TIERBENCH_LONG=1 (every test,
// whole) or TIERBENCH_LONG=rest (make test-all: only what make test left
// out, the tests named by cmd/longtests).
func Long() bool { v := os.Getenv(LongEnv); return v == "1" || v == "rest" }

// rest: TIERBENCH_LONG=rest, the second half of a make test, make
// test-all run: a matrix runs only the cells make test skipped.
func rest() bool { return os.Getenv(LongEnv) == "rest" }

// SkipUnlessLong skips a long test unless TIERBENCH_LONG is set; why says
// what makes it long and is printed with the skip, so that go test -v
// shows what make test left to make test-all.
func SkipUnlessLong(t testing.TB, why string) {
	t.Helper()
	if !Long() {
		t.Skipf("long test (%s): make test-all runs it (%s=rest, or 1 for every test)", why, LongEnv)
	}
}

// Share reports whether cell i of a matrix that runs in each of n slices
// (the three backends, say) runs in slice s. Under TIERBENCH_LONG=1 every
// cell runs in every slice. Otherwise the slices share the cells out, each
// running every n-th one from its own offset, so that each cell still runs
// once and each slice 1/n of them: make test keeps every cell and every
// slice, make test-all runs the whole product.
// Under TIERBENCH_LONG=rest only the cells make test skipped run, so
// make test then make test-all run each cell once on each slice.
func Share(s, n, i int) bool {
	if n <= 1 {
		return !rest()
	}
	mine := i%n == s%n
	switch os.Getenv(LongEnv) {
	case "1":
		return true
	case "rest":
		return !mine
	}
	return mine
}

// KeepOne shares the cases of a long test between make test and make
// test-all: make test runs case 0 (one of a kind stays in the quick run),
// make test-all (TIERBENCH_LONG=rest) the others, TIERBENCH_LONG=1 all.
// why says what makes the cases long.
func KeepOne(t testing.TB, i int, why string) {
	t.Helper()
	switch os.Getenv(LongEnv) {
	case "1":
	case "rest":
		if i == 0 {
			t.Skip("make test runs this case")
		}
	default:
		if i != 0 {
			t.Skipf("long test (%s): make test runs its first case, make test-all the others (%s=rest)", why, LongEnv)
		}
	}
}
