package cli

import (
	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
)

func newDriveCmd(env *Env, r *runner.Runner) *cobra.Command {
	f := &runFlags{}
	var target string
	cmd := &cobra.Command{
		Use:   "drive WORKLOAD --target URL",
		Short: "Drive a web workload's site served elsewhere (tierbench serve, or any implementation of its pages)",
		Long: `Run the workload's emulated clients against the site at --target, print a summary and
write the result file, as tierbench run does. The driver reaches only the site: it loads
nothing and checks no database (the result says so). --scale and --seed must be the
site's population's, so that the clients ask for users and items that exist.`,
		Args: workloadArg(env),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(r, args[0])
			if err != nil {
				return err
			}
			return measure(env, cmd.OutOrStdout(), r, cfg, func(run *runner.Runner) (*result.Result, error) {
				return run.Drive(cmd.Context(), cfg, target)
			})
		},
	}
	fs := cmd.Flags()
	addFileFlag(fs, f)
	addPopulationFlags(fs, f)
	addLoadGenFlags(fs, f)
	fs.StringVar(&target, "target", "", "the site's base URL, e.g. http://127.0.0.1:8080 (required)")
	return cmd
}
