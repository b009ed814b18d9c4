package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/workload"
)

func newWorkloadsCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "workloads",
		Short: "List workloads, their operations and mixes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			for i, name := range env.Workloads.Names() {
				wl, _ := env.Workloads.Get(name)
				info := wl.Info()
				if i > 0 {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "%s — %s\n", info.Name, info.Title)
				fmt.Fprintf(w, "  reference:   %s\n", info.Reference)
				fmt.Fprintf(w, "  operations:  %s\n", strings.Join(info.Operations, ", "))
				fmt.Fprintf(w, "  mix:         %s\n", describeMix(info))
				fmt.Fprintf(w, "  metric:      %s\n", info.Metric.Name)
				d := info.Defaults
				terminals := fmt.Sprintf("%d clients", d.Clients)
				if info.Grouped {
					terminals = "terminals from --ir (see docs/ecperf.md)"
				}
				length := fmt.Sprintf("%d iterations", d.Iterations)
				if d.Duration > 0 {
					length = fmt.Sprintf("duration %v, ramp-up %v, ramp-down %v", d.Duration, d.RampUp, d.RampDown)
				}
				fmt.Fprintf(w, "  defaults:    %s, %d server threads, %s\n", terminals, d.ServerThreads, length)
				fmt.Fprintf(w, "  persistence: %s (default %s)\n", container.JoinPersistence(info.Persistence), config.New(info.Name, d).Persistence)
			}
			return nil
		},
	}
}

func describeMix(info workload.Info) string {
	m := info.Mix
	second := make(map[int]int)
	for _, p := range m.Pairs {
		second[p.Second] = p.First
	}
	var parts []string
	for _, c := range m.Cards {
		s := fmt.Sprintf("%d %s", c.Count, info.Operations[c.Op])
		if first, ok := second[c.Op]; ok {
			s += fmt.Sprintf(" (each after its paired %s)", info.Operations[first])
		}
		parts = append(parts, s)
	}
	if m.Kind == workload.Chosen {
		return m.Description
	}
	if m.Kind == workload.Deck {
		return fmt.Sprintf("deck of %d per iteration, shuffled: %s", m.Size(), strings.Join(parts, ", "))
	}
	return "weighted: " + strings.Join(parts, ", ")
}
