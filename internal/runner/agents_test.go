package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/agent"
	"github.com/tierbench/tierbench/internal/result"
)

// The agents missing from a drive's figures count for the checks with
// what they reported, and at most their peak rate from their last report
// until they were given up, plus one operation under way per terminal;
// one that reported nothing, at the highest per-terminal rate of the
// others.
func TestLostOutcomesBoundTheUnreported(t *testing.T) {
	start := time.Unix(1000, 0)
	reports := []agent.Report{
		{Peak: []float64{10, 100}},
		{Lost: true, LostAt: start.Add(7 * time.Second), Peak: []float64{4, 50},
			Last: &agent.Progress{At: start.Add(2 * time.Second).UnixNano(), Succeeded: []int64{3, 30}, InDoubt: []int64{0, 1}}},
		{Lost: true, LostAt: start.Add(5 * time.Second)},
	}
	agents := []result.Agent{{Status: result.AgentOK, Terminals: 5}, {Status: result.AgentLost, Terminals: 5}, {Status: result.AgentLost, Terminals: 10}}
	got := lostOutcomes(reports, agents, start)
	// Agent 2: 5 s at 4 and 50/s; agent 3: 5 s at 10 terminals × 2 and
	// 20/s per terminal (agent 1's rates).
	if !slices.Equal(got.Unreported, []int64{20 + 100, 250 + 1000}) || got.LostTerminals != 15 ||
		!slices.Equal(got.Succeeded, []int64{3, 30}) || !slices.Equal(got.InDoubt, []int64{0, 1}) {
		t.Errorf("lost outcomes %+v; want unreported [120 1250] over 15 terminals, 3 and 30 succeeded, 0 and 1 in doubt", got)
	}
}
