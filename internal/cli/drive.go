package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/store"
)

func newDriveCmd(env *Env, r *runner.Runner) *cobra.Command {
	return workloadCommands(env, func() (*cobra.Command, *runFlags) { return newDriveCmdFor(env, r) })
}

func newDriveCmdFor(env *Env, r *runner.Runner) (*cobra.Command, *runFlags) {
	f := &runFlags{own: []string{"broker"}}
	var target string
	var o runner.DriveOptions
	var checkDB store.DSN
	var mf metricsFlags
	var ao runner.AgentOptions
	cmd := &cobra.Command{
		Use:   "drive WORKLOAD --target URL",
		Short: "Drive a workload served elsewhere (tierbench serve): RUBiS's site, Stock-Online's session bean, TPC-App's web service",
		Long: `Run the workload's clients against the tier at --target, print a summary and write the
result file, as tierbench run does. --scale and --seed must be the served population's,
so that the clients ask for what exists.

RUBiS: the emulated browsers against the site at --target (http://HOST:PORT, or the
pages' directory, http://HOST:PORT/PHP, as the original client's php_html_path; any
implementation of its pages). A target whose home page does not answer 200 is refused
at once. The driver reaches only the site: it checks no database (the result says so).
Any drive whose every operation fails for 10 s while its tier answers ends with exit 3,
its error naming the first failures (for RUBiS, the page and the HTTP status).
Stock-Online: the terminals call the session bean served at --target (http://HOST:PORT
or grpc://HOST:PORT, as tierbench serve stockonline prints it; the scheme is the
protocol), with the token of --token-file if it requires one. With --db naming the
database behind it, the driver reads that database before and after the run and runs
the workload's checks.
TPC-App: the emulated businesses call the web service at --target (http://HOST:PORT)
in --front's protocol (soap, the default, or json); the site's shipping runs where it
is served, so the drive checks no database.
Several servers: --target URL1,URL2,… spreads the clients over them round-robin (a
RUBiS session stays on one); the result has each server apart (servers) and their
container counters summed, read from each at the drive's start and end.`,
		Args: workloadArg(env),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(r, args[0])
			if err != nil {
				return err
			}
			f.printNotes(env.Stderr)
			return measure(cmd.Context(), env, cmd.OutOrStdout(), r, cfg, &mf, func(run *runner.Runner) (*result.Result, error) {
				if cmd.Flags().Changed("db") {
					o.CheckDB = &checkDB
				}
				if !cmd.Flags().Changed("agents") {
					for _, fl := range []string{"broker", "agents-wait", "tolerate-agent-loss"} {
						if cmd.Flags().Changed(fl) {
							return nil, config.Usage(fmt.Errorf("--%s goes with --agents N", fl))
						}
					}
				} else {
					return run.DriveAgents(cmd.Context(), cfg, target, o, ao)
				}
				return run.Drive(cmd.Context(), cfg, target, o)
			})
		},
	}
	fs := cmd.Flags()
	addFileFlag(fs, f)
	addPopulationFlags(fs, f)
	addLoadGenFlags(fs, f)
	fs.StringVar(&target, "target", "", "the served tier's URL, e.g. http://127.0.0.1:8080 (RUBiS: or its pages' directory, http://127.0.0.1:8080/PHP); several, comma-separated, spread the clients over them round-robin (required)")
	fs.StringVar(&o.TokenFile, "token-file", "", "file holding the token the served tiers require (Stock-Online's business tier; a site's container counters)")
	fs.Var(&checkDB, "db", "Stock-Online: the database behind the business tier, to check after the run: "+store.DSNForms)
	addMetricsFlags(fs, &mf, true)
	addAgentFlags(fs, &ao)
	return cmd, f
}
