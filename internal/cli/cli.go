// Package cli is tierbench's command line: commands and flags into a
// config, the runner called, output printed, exit codes chosen.
//
// Exit codes (DESIGN.md): 0 success; 1 the run ran but a consistency check
// or validity rule failed; 2 bad usage or configuration; 3 an
// infrastructure failure. cli is the only package that prints to the user.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
	ExitInfra  = 3
)

// Env is everything the CLI takes from the process; main builds it.
type Env struct {
	Args           []string
	Stdout, Stderr io.Writer
	// StdoutIsTerminal enables the progress line.
	StdoutIsTerminal bool
	Backends         *store.Backends
	Workloads        *workload.Registry
	Version          string
	// Abort is the process's second interrupt; nil: none comes.
	Abort *Abort
}

// Abort is a second interrupt. A command that can stop at once and still
// keep what it measured (run, drive) takes it; for the others the second
// interrupt kills the process.
type Abort struct {
	once  sync.Once
	ch    chan struct{}
	taken atomic.Bool
}

// NewAbort is an abort not yet fired.
func NewAbort() *Abort { return &Abort{ch: make(chan struct{})} }

// Fire aborts, reporting whether a command takes the abort (otherwise the
// caller ends the process).
func (a *Abort) Fire() bool {
	a.once.Do(func() { close(a.ch) })
	return a.taken.Load()
}

// take says the command handles the abort, and returns the channel that
// the abort closes (nil, never closed, for no Abort).
func (a *Abort) take() <-chan struct{} {
	if a == nil {
		return nil
	}
	a.taken.Store(true)
	return a.ch
}

// exitError carries an exit code other than 2 out of a command.
type exitError struct {
	code int
	err  error // nil when the command already said everything
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// infra marks err as an infrastructure failure (exit 3), unless it is the
// user's mistake.
func infra(err error) error {
	var ue *config.UsageError
	if err == nil || errors.As(err, &ue) {
		return err
	}
	return &exitError{code: ExitInfra, err: err}
}

// Main runs the command line and returns the process's exit code.
func Main(ctx context.Context, env Env) int {
	root := newRoot(&env)
	root.SetArgs(env.Args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitUsage // cobra's own errors (unknown command, bad flag) are usage errors
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(env.Stderr, "tierbench: %s\n", line)
		}
		if code == ExitUsage {
			help := "tierbench --help"
			if cmd != nil && cmd != root {
				help = cmd.CommandPath() + " --help"
			}
			fmt.Fprintf(env.Stderr, "tierbench: see '%s'\n", help)
		}
	}
	return code
}

func newRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "tierbench",
		Short: "A testbed for the performance of transactional middle tiers",
		Long: `tierbench runs the classic enterprise benchmark applications (Stock-Online, ECperf,
RUBiS and TPC-App) over SQLite, PostgreSQL or MariaDB/MySQL, measures them correctly
and writes versioned JSON results.`,
		Version:       env.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if other := otherWorkloadsFlag(env, cmd, err); other != nil {
			return config.Usage(other)
		}
		return config.Usage(flagProblem(err))
	})
	r := &runner.Runner{Backends: env.Backends, Workloads: env.Workloads, Version: env.Version, TierLog: env.Stderr, Notes: env.Stderr}
	root.AddCommand(newWorkloadsCmd(env), newLoadCmd(env, r), newRunCmd(env, r), newSweepCmd(env, r), newServeCmd(env, r), newDriveCmd(env, r), newEmulatorCmd(), newModelCmd(env), newReportCmd(env), newAgentCmd(env, r))
	root.AddCommand(newDocsCmd(root, env))
	return root
}

// workloadArg validates the WORKLOAD argument with a message that lists
// the choices.
func workloadArg(env *Env) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		names := strings.Join(env.Workloads.Names(), ", ")
		switch {
		case len(args) == 0:
			return fmt.Errorf("name a WORKLOAD: one of %s", names)
		case len(args) > 1:
			return fmt.Errorf("one WORKLOAD, got %d arguments (%s); available: %s", len(args), strings.Join(args, " "), names)
		}
		w, err := env.Workloads.Get(args[0])
		if err != nil {
			return err
		}
		// The command reads the same slice: it gets the name as
		// registered, whatever its case.
		args[0] = w.Info().Name
		return nil
	}
}

// flagProblem says what is wrong with a flag's value in the words the
// configuration file's refusals use: the flag, the value, what is allowed.
func flagProblem(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	name, value := iv.GetFlag().Name, iv.GetValue()
	// pflag's own values fail with strconv's words; ours say what is
	// allowed already.
	if reflect.TypeOf(iv.GetFlag().Value).Elem().PkgPath() != reflect.TypeOf(pflag.FlagSet{}).PkgPath() {
		return errors.New(config.Keyed(name, value, errors.Unwrap(iv)))
	}
	switch iv.GetFlag().Value.Type() {
	case "int":
		return fmt.Errorf("--%s %q: want a whole number", name, value)
	case "uint64":
		return fmt.Errorf("--%s %q: want a whole number, 0 or more", name, value)
	case "float64":
		return fmt.Errorf("--%s %q: want a number", name, value)
	case "duration":
		return fmt.Errorf("--%s %q: want a duration (examples: 500ms, 30s, 5m)", name, value)
	case "bool":
		return fmt.Errorf("--%s %q: want true or false", name, value)
	}
	return errors.New(config.Keyed(name, value, errors.Unwrap(iv)))
}

// run RUBiS is run rubis, as the workloads' names are taken in any case
// (Registry.Get). cobra keeps the switch in a package variable, so it is
// set once here rather than in newRoot, which concurrent tests call while
// other roots read it.
func init() { cobra.EnableCaseInsensitive = true }
