package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/livemetrics"
	"github.com/tierbench/tierbench/internal/runner"
	"github.com/tierbench/tierbench/internal/server"
)

func newServeCmd(env *Env, r *runner.Runner) *cobra.Command {
	return workloadCommands(env, func() (*cobra.Command, *runFlags) { return newServeCmdFor(env, r) })
}

func newServeCmdFor(env *Env, r *runner.Runner) (*cobra.Command, *runFlags) {
	f := &runFlags{}
	o := runner.ServeOptions{Listen: "127.0.0.1:8080"}
	var mf metricsFlags
	cmd := &cobra.Command{
		Use:   "serve WORKLOAD",
		Short: "Serve a workload's middle tier, or one of its tiers, alone until interrupted",
		Long: `Serve the workload's middle tier on a loaded database (tierbench load first;
it serves the population as loaded, at whatever scale), at --listen (loopback by
default; :PORT for every interface). SIGINT or SIGTERM stops it after the requests
under way finish.

RUBiS: the auction site over HTTP, with ` + server.HealthPath + ` beside it; drive it with
tierbench drive rubis --target URL, or use it in a browser. Its tiers apart:
  --tier business   the business tier of --style session, facade or entity (default:
                    session, or facade under --persistence cmp or bmp), over
                    --protocol http, grpc or lean; it prints its URL (http://,
                    grpc:// or lean://)
  --tier web        the pages alone, over the business tier at --business URL
                    (no database: the business tier has it)
Stock-Online: its session bean (the business tier) over --protocol; drive it with
tierbench drive stockonline --target URL.
TPC-App: its web service, SOAP 1.1 at /tpcapp/soap (WSDL at /tpcapp/soap?wsdl) and
JSON at /tpcapp/v1/METHOD, with its partners (in-process unless --pov, --pge, --ice),
its shipping and inventory agents and their queues; drive it with
tierbench drive tpcapp --target URL [--front json].
--token-file FILE: the business tier answers only callers that send the token the
file holds, and a web tier sends it: give it to a tier other hosts can reach. An address
other hosts reach (:PORT, 0.0.0.0, [::], another host's name) is refused without it, or,
for pages and web services, which take no token, without --insecure (which warns).`,
		Args: workloadArg(env),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(r, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			live, err := mf.start(env.Stderr, cfg.Workload)
			if err != nil {
				return err
			}
			defer mf.finish(cmd.Context(), live)
			o.Insecure = mf.insecure
			o.Metrics = live
			err = r.Serve(cmd.Context(), cfg, o, func(s runner.Serving) {
				if live != nil {
					live.SetStage(livemetrics.StageServing)
					if s.Entities != nil { // a business tier gave its own (ServedEntities)
						live.Entities(s.Entities)
					}
				}
				printServing(out, cfg, s, o.TokenFile)
			})
			if err != nil {
				return infra(err)
			}
			fmt.Fprintf(out, "%s stopped\n", cfg.Workload)
			return nil
		},
	}
	addServeFlags(cmd.Flags(), f, &o)
	addMetricsFlags(cmd.Flags(), &mf, false)
	return cmd, f
}

// addServeFlags binds serve's flags: the database, the middle tier's,
// and which tier to serve where.
func addServeFlags(fs *pflag.FlagSet, f *runFlags, o *runner.ServeOptions) {
	addFileFlag(fs, f)
	addDatabaseFlags(fs, f)
	addTierFlags(fs, f)
	fs.StringVar(&o.Listen, "listen", o.Listen, "HOST:PORT to serve on (:PORT for every interface, port 0 for any free one), or unix:/PATH for a business tier over --protocol lean (a Unix-domain socket)")
	fs.StringVar(&o.Tier, "tier", "", "serve one tier alone: business, or web (RUBiS) (default: the whole middle tier; Stock-Online's is its business tier)")
	fs.StringVar(&o.Business, "business", "", "--tier web: the business tier's URL, http://HOST:PORT, grpc://HOST:PORT or lean://HOST:PORT (its scheme is the protocol)")
	fs.StringVar(&o.TokenFile, "token-file", "", "file holding the token the business tier requires and the web tier sends")
	v := &f.values
	fs.IntVar(&v.AppServers, "app-servers", 0, "how many app servers share the database, this one included (as run --app-servers starts them; see --app-server)")
	fs.IntVar(&v.AppServer, "app-server", 0, "which of the --app-servers this one is, from 0: on SQLite and MySQL each draws its own entity keys, so that servers started on one database never collide")
}

// printServing says what serves where, and how to use it: the first line
// is the one `run --tiers` reads the URL from ("serving … on URL"). A
// tier that requires a token is driven or called with it.
func printServing(out io.Writer, cfg config.Run, s runner.Serving, tokenFile string) {
	token := ""
	if tokenFile != "" {
		token = " --token-file " + tokenFile
	}
	switch {
	case s.Tier == runner.TierWeb:
		fmt.Fprintf(out, "serving %s (style %s, calling its business tier over %s) on %s; interrupt to stop\n", s.What, s.Style, s.Protocol, s.URL)
		fmt.Fprintf(out, "drive it with: tierbench drive %s --target %s --scale N (the business tier's scale)\n", cfg.Workload, s.URL)
	case s.Tier == runner.TierBusiness && cfg.Workload != "rubis": // a session bean
		fmt.Fprintf(out, "serving %s (persistence %s, protocol %s, scale %d) on %s; interrupt to stop\n", s.What, cfg.Persistence, s.Protocol, s.Scale, s.URL)
		fmt.Fprintf(out, "drive it with: tierbench drive %s --target %s --scale %d%s\n", cfg.Workload, s.URL, s.Scale, token)
	case s.Tier == runner.TierBusiness:
		fmt.Fprintf(out, "serving %s (style %s, protocol %s, scale %d) on %s; interrupt to stop\n", s.What, s.Style, s.Protocol, s.Scale, s.URL)
		if cfg.Workload == "rubis" {
			fmt.Fprintf(out, "serve its pages with: tierbench serve rubis --tier web --business %s --style %s --listen HOST:PORT%s\n", s.URL, s.Style, token)
		} else {
			fmt.Fprintf(out, "drive it with: tierbench drive %s --target %s --scale %d\n", cfg.Workload, s.URL, s.Scale)
		}
	default:
		fmt.Fprintf(out, "serving %s (scale %d) on %s (health: %s%s); interrupt to stop\n", s.What, s.Scale, s.URL, s.URL, server.HealthPath)
		fmt.Fprintf(out, "drive it with: tierbench drive %s --target %s --scale %d\n", cfg.Workload, s.URL, s.Scale)
	}
}
