package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/server"
)

func newServeCmd(env *Env, r *runner.Runner) *cobra.Command {
	f := &runFlags{}
	listen := "127.0.0.1:8080"
	cmd := &cobra.Command{
		Use:   "serve WORKLOAD",
		Short: "Serve a web workload's middle tier alone (RUBiS's auction site) until interrupted",
		Long: `Serve the workload's middle tier over HTTP on a loaded database (tierbench load first;
the site serves the population as loaded, at whatever scale),
at --listen (loopback by default; :PORT for every interface), with ` + server.HealthPath + ` beside it.
SIGINT or SIGTERM stops it after the requests under way finish. Drive it with
tierbench drive WORKLOAD --target URL, or use it in a browser.`,
		Args: workloadArg(env),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(r, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			err = r.Serve(cmd.Context(), cfg, listen, func(url string, scale int) {
				fmt.Fprintf(out, "serving %s (scale %d) on %s (health: %s%s); interrupt to stop\n", cfg.Workload, scale, url, url, server.HealthPath)
				fmt.Fprintf(out, "drive it with: tierbench drive %s --target %s --scale %d\n", cfg.Workload, url, scale)
			})
			if err != nil {
				return infra(err)
			}
			fmt.Fprintf(out, "%s stopped\n", cfg.Workload)
			return nil
		},
	}
	fs := cmd.Flags()
	addFileFlag(fs, f)
	addDatabaseFlags(fs, f)
	addTierFlags(fs, f)
	fs.StringVar(&listen, "listen", listen, "HOST:PORT to serve on (:PORT for every interface, port 0 for any free one)")
	return cmd
}
