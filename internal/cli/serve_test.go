package cli

import (
	"fmt"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
)

// A run with --tiers starts each tier with `serve` and runner.TierArgs:
// parsed by serve's own flags, they must give the tier the middle-tier
// configuration the run resolved, switch for switch.
func TestTierArgsGiveTheTierTheRunsConfiguration(t *testing.T) {
	w, err := workload.NewRegistry(stockonline.New(), rubis.New())
	if err != nil {
		t.Fatal(err)
	}
	r := &runner.Runner{Backends: storetest.Backends(), Workloads: w}
	parse := func(workload string, add func(*pflag.FlagSet, *runFlags), args []string) config.Run {
		t.Helper()
		f := &runFlags{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		add(fs, f)
		wl, err := w.Get(workload)
		if err != nil {
			t.Fatal(err)
		}
		f.options = config.BindOptions(fs, wl.Info().Options)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		cfg, err := f.config(r, workload)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return cfg
	}
	// The keys a tier reads.
	tierOf := func(c config.Run) string {
		return fmt.Sprint(c.ServerThreads, c.Isolation, c.Persistence, c.CommitOption, c.Cache, c.Pool,
			c.Concurrency, c.RefreshInterval, c.LockTimeout, c.Entity, c.Dispatch, c.ReplicaReads, c.Options)
	}
	for _, tc := range []struct {
		workload string
		args     []string
	}{
		{"stockonline", nil},
		{"stockonline", []string{"--persistence", "direct", "--server-threads", "7", "--isolation", "repeatable-read", "--protocol", "grpc"}},
		{"stockonline", []string{"--commit-option", "A", "--cache", "50%", "--pool", "10", "--concurrency", "optimistic",
			"--lock-timeout", "2s", "--entity", "Item.concurrency=readonly", "--warmup"}},
		{"stockonline", []string{"--commit-option", "D", "--refresh-interval", "3s", "--persistence", "bmp"}},
		{"rubis", []string{"--style", "entity", "--protocol", "grpc", "--commit-option", "A", "--cache", "100%"}},
		{"rubis", []string{"--style", "session"}},
		{"rubis", []string{"--style", "facade", "--dispatch", "reflect"}},
		{"stockonline", []string{"--persistence", "direct", "--dispatch", "reflect"}},
		{"stockonline", []string{"--replica-reads", "eventual"}},
	} {
		run := parse(tc.workload, func(fs *pflag.FlagSet, f *runFlags) { addRunFlags(fs, f) }, tc.args)
		args := runner.TierArgs(run)
		served := parse(tc.workload, func(fs *pflag.FlagSet, f *runFlags) { addServeFlags(fs, f, &runner.ServeOptions{}) }, args)
		if got, want := tierOf(served), tierOf(run); got != want {
			t.Errorf("%s %v: serve %v gives the tier\n%s, want\n%s", tc.workload, tc.args, args, got, want)
		}
	}
}
