package rubis

import (
	"os"
	"testing"

	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// The tests that load a database and drive it call t.Parallel(); they wait
// on the databases far more than they compute, so more than two run at once.
// storetest.Main drops the populations the tests copy (storetest.Populate)
// once they have all run.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m, testsvc.MainWaiting)) }
