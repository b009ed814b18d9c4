package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/agent"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/runner"
)

func newAgentCmd(env *Env, r *runner.Runner) *cobra.Command {
	var broker, name string
	cmd := &cobra.Command{
		Use:   "agent --broker nats://HOST:PORT",
		Short: "Wait for drives to run a part of (tierbench drive --agents N on another host)",
		Long: `Run as a driver agent: register with the NATS server at --broker and run the part of
the terminals a coordinator (tierbench drive WORKLOAD --target URL --agents N --broker URL)
gives this agent, starting when it says, then send it the result. One drive at a time,
until interrupted. The agent reaches the target itself: it needs the route the coordinator's
--target names.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if broker == "" {
				return config.Usage(errors.New("--broker is required: the NATS server the coordinator uses, e.g. nats://127.0.0.1:4222"))
			}
			nc, err := runner.ConnectBroker(broker, "tierbench agent")
			if err != nil {
				return infra(err)
			}
			defer nc.Close()
			hello := runner.AgentHello(name, env.Version)
			fmt.Fprintf(cmd.OutOrStdout(), "agent %s on %s, waiting for drives on %s; interrupt to stop\n", hello.ID, hello.Host, broker)
			quiet := *r
			quiet.TierLog, quiet.Notes = nil, nil
			if err := agent.Serve(cmd.Context(), nc, hello, quiet.AgentExec, cmd.OutOrStdout()); err != nil {
				return infra(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "agent %s stopped\n", hello.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&broker, "broker", "", "NATS server URL the coordinator and the agents share, e.g. nats://10.0.0.5:4222 (required)")
	cmd.Flags().StringVar(&name, "name", "", "this agent's name in results (letters, digits, - and _) (default HOST-PID)")
	return cmd
}

// agentFlags are drive's --agents, --broker, --agents-wait and
// --tolerate-agent-loss.
func addAgentFlags(fs *pflag.FlagSet, o *runner.AgentOptions) {
	fs.IntVar(&o.Agents, "agents", 0, "spread the terminals over this many driver agents (tierbench agent --broker URL, on any hosts) and merge their results (default: drive from this process)")
	fs.StringVar(&o.Broker, "broker", "", "with --agents: the NATS server the agents listen on, e.g. nats://10.0.0.5:4222")
	fs.DurationVar(&o.Wait, "agents-wait", 30*time.Second, "with --agents: how long to wait for that many idle agents")
	fs.BoolVar(&o.Tolerate, "tolerate-agent-loss", false, "with --agents: an agent lost mid-drive is named in the result, which holds the others' terminals, and the drive does not fail (exit 0 rather than 3); with --db, the checks count its commits up to its last report and allow for those after")
}

var _ agent.Exec = (&runner.Runner{}).AgentExec
