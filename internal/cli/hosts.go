package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/hosts"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/runner"
)

// --placement hosts (decision 0027). The driver runs in this process, and
// a Go process cannot move into a network namespace whole (setns moves
// one thread), so the run is executed again, whole, on the driver's host:
// this process makes the hosts, starts `ip netns exec DRIVER tierbench
// ARGS…` with their plan in the environment (hosts.EnvPlan), passes its
// interrupts on, waits, removes the hosts on every path and exits as the
// run did. The run inside finds the plan (hostsPlan) and starts the
// database and the tiers on their hosts.

// hostsPlan is the plan a parent run passed to this one; nil when this
// is not a run re-executed on a driver's host.
func hostsPlan(cfg config.Run) (*hosts.Plan, error) {
	if placement.Mode(cfg.Placement) != placement.Hosts {
		return nil, nil
	}
	return hosts.FromEnv()
}

// superviseHosts makes cfg's hosts, runs the command again on the
// driver's host and removes the hosts when it ends.
func superviseHosts(ctx context.Context, env *Env, r *runner.Runner, cfg config.Run) error {
	return onHosts(ctx, env, r, cfg, env.Args)
}

// onHosts makes cfg's hosts, runs this executable with args on the
// driver's host with their plan, passes each interrupt on, waits, and
// removes the hosts on every path: when it returns, none is left (or the
// error says which could not be removed). The error carries the exit code
// of the command on the driver's host.
func onHosts(ctx context.Context, env *Env, r *runner.Runner, cfg config.Run, args []string) (err error) {
	roles, err := r.HostRoles(cfg)
	if err != nil {
		return err
	}
	var link hosts.Link
	if cfg.Link != "" {
		if link, err = hosts.ParseLink(cfg.Link); err != nil {
			return config.Usage(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return infra(err)
	}
	plan, err := hosts.Up(ctx, os.Getpid(), roles, link)
	if err != nil {
		return infra(err)
	}
	defer func() {
		if derr := plan.Down(); derr != nil {
			if err != nil {
				fmt.Fprintf(env.Stderr, "tierbench: --placement hosts: removing the hosts: %v\n", derr)
				return
			}
			err = infra(fmt.Errorf("--placement hosts: removing the hosts: %w", derr))
		}
	}()
	fmt.Fprintf(env.Stderr, "placement hosts: %d hosts on %s (network namespaces %s…), the driver's host runs this command again\n",
		len(plan.Hosts), plan.Subnet, plan.Switch[:len(plan.Switch)-len("switch")])
	argv := plan.Exec(hosts.Driver, append([]string{exe}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), plan.Env())
	cmd.Stdout, cmd.Stderr = env.Stdout, env.Stderr
	// Its own process group: the terminal's interrupt reaches this
	// process alone, which passes each one on (a second one aborts the
	// run, as it would have). It dies with this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return infra(fmt.Errorf("--placement hosts: start the run on the driver's host: %w", err))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	aborted := env.Abort.take()
	interrupted := ctx.Done()
	for {
		select {
		case err := <-done:
			return exited(err)
		case <-interrupted:
			interrupted = nil
			cmd.Process.Signal(os.Interrupt)
		case <-aborted:
			aborted = nil
			cmd.Process.Signal(os.Interrupt)
		}
	}
}

// exited is the run's end as this command's: its exit code, its messages
// already written.
func exited(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return infra(err)
	}
	code := ee.ExitCode()
	if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		code = 128 + int(st.Signal())
	}
	return &exitError{code: code}
}
