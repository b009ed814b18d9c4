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
	"time"

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
	// finishes its requests). A second one stops a run or drive at once,
	// keeping what it measured, and kills any other command; a third
	// kills the process.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort := cli.NewAbort()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\ntierbench: interrupted: finishing the work under way, then stopping (interrupt again to abort)")
		cancel()
		sig := <-sigs
		if abort.Fire() {
			fmt.Fprintln(os.Stderr, "tierbench: interrupted again: stopping now, keeping what was measured (interrupt once more to kill)")
			sig = <-sigs
		}
		// As the default handler would have: the signal kills. Reset
		// restores the disposition tierbench started with, which is
		// "ignore" for a background job of a script: exit all the same.
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			self.Signal(sig)
		}
		time.Sleep(100 * time.Millisecond)
		code := 128 + 2 // SIGINT's, as a shell reports it
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()

	return cli.Main(ctx, cli.Env{
		Args:             os.Args[1:],
		Stdout:           os.Stdout,
		Stderr:           os.Stderr,
		StdoutIsTerminal: isTerminal(os.Stdout),
		Backends:         backends,
		Workloads:        workloads,
		Version:          buildVersion(),
		Abort:            abort,
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
