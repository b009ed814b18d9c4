package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
)

// Subjects. An agent answers discover while idle, and its own clock and
// start subjects always; a run's progress, results and abort are under
// the run's subject.
const (
	subjectDiscover = "tierbench.agents.discover"
	subjectPrefix   = "tierbench.agent."
	runPrefix       = "tierbench.run."
)

func clockSubject(agent string) string            { return subjectPrefix + agent + ".clock" }
func startSubject(agent string) string            { return subjectPrefix + agent + ".start" }
func progressSubject(run string) string           { return runPrefix + run + ".progress" }
func resultSubject(run string) string             { return runPrefix + run + ".result" }
func abortSubject(run string) string              { return runPrefix + run + ".abort" }
func resultAgentSubject(run, agent string) string { return resultSubject(run) + "." + agent }

// ProgressInterval is how often an agent reports; LostAfter how long the
// coordinator waits without a report before it counts the agent lost.
// An agent whose reports the broker has not acknowledged for CutOffAfter
// stops driving: a lost agent, dead or cut off, then commits nothing
// after the coordinator gave up on it but the operations its terminals
// had under way, which bounds what the checks must reconcile.
const (
	ProgressInterval = time.Second
	LostAfter        = 5 * time.Second
	CutOffAfter      = LostAfter - 2*ProgressInterval
)

// chunkSize bounds a result message: NATS servers refuse messages above
// their max_payload, 1 MB by default, and an hour-long result is several.
const chunkSize = 512 << 10

// Hello is an idle agent's answer to discover.
type Hello struct {
	ID      string `json:"id"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	CPUs    int    `json:"cpus"`
	Version string `json:"version"`
}

// Task is what an agent runs: the drive's configuration, its share of the
// terminals and when to start, in the agent's clock.
type Task struct {
	RunID    string          `json:"run_id"`
	Workload string          `json:"workload"`
	Config   json.RawMessage `json:"config"`
	Target   string          `json:"target"`
	// TokenFile is the token a business tier requires, as a path on the
	// agent's host.
	TokenFile string `json:"token_file,omitempty"`
	// Part (from 0) of Parts is the agent's share of the terminals
	// (driver.Share).
	Part  int `json:"part"`
	Parts int `json:"parts"`
	// StartAt is in Unix nanoseconds of the agent's clock.
	StartAt int64 `json:"start_at"`
}

// reply answers a request: an empty Error is acceptance.
type reply struct {
	Error string `json:"error,omitempty"`
}

// clockReply is an agent's clock when it answered.
type clockReply struct {
	UnixNano int64 `json:"unix_nano"`
}

// Progress is an agent's per-second report: its counts so far, and the
// seconds its recorder sealed since the last report, histograms included.
type Progress struct {
	Agent   string           `json:"agent"`
	Ops     int64            `json:"ops"`
	Errors  int64            `json:"errors"`
	Seconds []metrics.Second `json:"seconds,omitempty"`
	// At is when the counts were taken, in Unix nanoseconds of the
	// agent's clock. Succeeded and InDoubt are its successes and commits
	// of unknown outcome so far by operation, ramps included: should the
	// agent be lost, the database checks count what it reported.
	At        int64   `json:"at,omitempty"`
	Succeeded []int64 `json:"succeeded,omitempty"`
	InDoubt   []int64 `json:"in_doubt,omitempty"`
}

// Outcome is an agent's final message: its result file's content, or why
// it has none.
type Outcome struct {
	Agent  string          `json:"agent"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// chunk header names: a result travels as numbered parts.
const (
	headerChunk  = "Tierbench-Chunk"
	headerChunks = "Tierbench-Chunks"
)

func chunks(b []byte) [][]byte {
	var out [][]byte
	for len(b) > chunkSize {
		out = append(out, b[:chunkSize])
		b = b[chunkSize:]
	}
	return append(out, b)
}

// assembly collects one agent's chunks.
type assembly struct {
	parts [][]byte
	got   int
}

func (a *assembly) add(i, n int, data []byte) (done bool, err error) {
	if n < 1 || i < 0 || i >= n || (a.parts != nil && len(a.parts) != n) {
		return false, fmt.Errorf("chunk %d of %d out of place", i, n)
	}
	if a.parts == nil {
		a.parts = make([][]byte, n)
	}
	if a.parts[i] == nil {
		a.parts[i] = append([]byte(nil), data...)
		a.got++
	}
	return a.got == n, nil
}

func (a *assembly) bytes() []byte {
	var out []byte
	for _, p := range a.parts {
		out = append(out, p...)
	}
	return out
}
