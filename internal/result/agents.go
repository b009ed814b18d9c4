package result

import (
	"fmt"
	"io"
	"strings"
)

// Agent is one driver agent of a drive spread over several
// (tierbench drive --agents): who it was, its share, its clock, and how
// its part ended.
type Agent struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Part (from 1) of Parts of the terminals; Terminals is how many.
	Part      int `json:"part"`
	Parts     int `json:"parts"`
	Terminals int `json:"terminals"`
	// ClockOffsetMs is the agent's clock minus the coordinator's, measured
	// within ClockRTTMs/2; StartLagMs how late after the common start its
	// driver started (its own clock, corrected by the offset).
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	ClockRTTMs    float64 `json:"clock_rtt_ms"`
	StartLagMs    float64 `json:"start_lag_ms"`
	// Operations it completed in the steady state.
	Operations int64 `json:"operations"`
	// Reported are the operations it had completed (ramps included) by
	// its last progress report: of a lost agent, what the database checks
	// count it for.
	Reported int64 `json:"reported,omitempty"`
	// Status: ok, lost (it fell silent: its part is missing from the
	// figures) or failed (it reported an error instead of a result).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Agent statuses.
const (
	AgentOK     = "ok"
	AgentLost   = "lost"
	AgentFailed = "failed"
)

// writeAgents prints the agents of a spread drive, one line each.
func writeAgents(w io.Writer, agents []Agent) {
	if len(agents) == 0 {
		return
	}
	missing := 0
	for _, a := range agents {
		if a.Status != AgentOK {
			missing++
		}
	}
	head := fmt.Sprintf("agents: %d", len(agents))
	if missing > 0 {
		head += fmt.Sprintf(", %d of them missing from the figures", missing)
	}
	fmt.Fprintln(w, head)
	for _, a := range agents {
		line := fmt.Sprintf("  %-8s %s (%s, pid %d): part %d of %d, %d terminals, %d operations, clock %+.3f ms (±%.3f), start %+.1f ms",
			a.Status, a.ID, a.Host, a.PID, a.Part, a.Parts, a.Terminals, a.Operations, a.ClockOffsetMs, a.ClockRTTMs/2, a.StartLagMs)
		if a.Error != "" {
			line += ": " + strings.TrimSpace(a.Error)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}
