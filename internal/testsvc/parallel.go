package testsvc

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// WaitingParallel is how many of a waiting package's parallel tests run at
// once under MainWaiting.
const WaitingParallel = 4

// MainWaiting runs a package's tests from its TestMain, letting
// WaitingParallel of its parallel tests run at once instead of go test's
// default of one per CPU. It is for packages whose tests spend their time
// waiting rather than computing: for a database's commits and queries, a
// run's cycle times, an emulator's lead times. On the 2-core machine two at
// a time left both cores mostly idle (ECperf's make test set used 18 s of
// CPU in 89 s), while the other package go test runs beside it competes
// for them anyway.
//
// An explicit -parallel wins, and -short (make test-race) keeps the
// default: under the race detector the same tests are CPU-bound.
func MainWaiting(m *testing.M) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && !testing.Short() {
		flag.Set("test.parallel", strconv.Itoa(max(WaitingParallel, runtime.GOMAXPROCS(0))))
	}
	return m.Run()
}
