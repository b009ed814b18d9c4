package stockonline

import (
	"os"
	"testing"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// The tests that load a database and drive it call t.Parallel(); they wait
// on the databases far more than they compute, so more than two run at once.
func TestMain(m *testing.M) { os.Exit(testsvc.MainWaiting(m)) }
