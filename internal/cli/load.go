package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/runner"
)

func newLoadCmd(env *Env, r *runner.Runner) *cobra.Command {
	return workloadCommands(env, func() (*cobra.Command, *runFlags) { return newLoadCmdFor(env, r) })
}

func newLoadCmdFor(env *Env, r *runner.Runner) (*cobra.Command, *runFlags) {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "load WORKLOAD",
		Short: "Create the workload's schema and populate it",
		Args:  workloadArg(env),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(r, args[0])
			if err != nil {
				return err
			}
			if cfg.DB.Temp {
				return config.Usage(fmt.Errorf("--db sqlite is a temporary file removed when the command ends; to load a database that stays, give --db sqlite:PATH, postgres://… or mysql://…"))
			}
			rep, version, err := r.Load(cmd.Context(), cfg)
			if err != nil {
				return infra(err)
			}
			var tables []string
			for name, n := range rep.Tables {
				tables = append(tables, fmt.Sprintf("%s %d", name, n))
			}
			sort.Strings(tables)
			secs := rep.Duration.Seconds()
			bytes := ""
			if rep.Bytes > 0 {
				// Their own rate: the time of the table that holds them.
				bytes = fmt.Sprintf(" and %.0f MB of large objects (%.1f MB/s over their table's %.2f s)", float64(rep.Bytes)/1e6,
					float64(rep.Bytes)/1e6/max(rep.BytesTime.Seconds(), 1e-9), rep.BytesTime.Seconds())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "loaded %s (scale %d) into %s: %d rows%s in %.2f s (%.0f rows/s): %s\n",
				cfg.Workload, cfg.Scale, version, rep.Rows, bytes, secs, float64(rep.Rows)/max(secs, 1e-9), strings.Join(tables, ", "))
			return nil
		},
	}
	addConnectionFlags(cmd.Flags(), f)
	return cmd, f
}
