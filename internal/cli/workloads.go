package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

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
				if d := info.Defaults; info.Grouped {
					fmt.Fprintf(w, "  defaults:    terminals from --ir (see the README), %d server threads, duration %v, ramp-up %v, ramp-down %v\n", d.ServerThreads, d.Duration, d.RampUp, d.RampDown)
				} else {
					fmt.Fprintf(w, "  defaults:    %d clients, %d server threads, %d iterations\n", d.Clients, d.ServerThreads, d.Iterations)
				}
				fmt.Fprintf(w, "  persistence: %s\n", strings.Join(info.Persistence, ", "))
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
	if m.Kind == workload.Deck {
		return fmt.Sprintf("deck of %d per iteration, shuffled: %s", m.Size(), strings.Join(parts, ", "))
	}
	return "weighted: " + strings.Join(parts, ", ")
}
