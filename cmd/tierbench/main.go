// Command tierbench is a testbed for the performance of transactional
// middle tiers. main only wires: the backends, the workloads and the
// process's signals go to the CLI.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/tierbench/tierbench/internal/cli"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/mysql"
	"github.com/tierbench/tierbench/internal/store/postgres"
	"github.com/tierbench/tierbench/internal/store/sqlite"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp"
)

// version is set by the Makefile (-ldflags "-X main.version=…"); a plain go
// build or go run falls back to the module's version.
var version = ""

func main() {
	os.Exit(run())
}

func run() int {
	backends := &store.Backends{}
	for _, b := range []struct {
		d    store.Dialect
		open store.OpenFunc
	}{
		{store.SQLite, sqlite.Open},
		{store.Postgres, postgres.Open},
		{store.MySQL, mysql.Open},
	} {
		if err := backends.Add(b.d, b.open); err != nil {
			fmt.Fprintln(os.Stderr, "tierbench:", err)
			return cli.ExitInfra
		}
	}
	workloads, err := workload.NewRegistry(stockonline.New(), ecperf.New(), rubis.New(), tpcapp.New())
	if err != nil {
		fmt.Fprintln(os.Stderr, "tierbench:", err)
		return cli.ExitInfra
	}

	// The first interrupt stops the command gracefully (a run lets the
	// operations under way finish and checks the database; the emulator
	// finishes its requests); a second one kills the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	unwatch := context.AfterFunc(ctx, func() {
		stop()
		fmt.Fprintln(os.Stderr, "\ntierbench: interrupted: finishing the work under way, then stopping (interrupt again to abort)")
	})
	defer func() {
		unwatch() // before stop, whose cancellation is not an interrupt
		stop()
	}()

	return cli.Main(ctx, cli.Env{
		Args:             os.Args[1:],
		Stdout:           os.Stdout,
		Stderr:           os.Stderr,
		StdoutIsTerminal: isTerminal(os.Stdout),
		Backends:         backends,
		Workloads:        workloads,
		Version:          buildVersion(),
	})
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
