// Package result is the record of a run: the versioned JSON file
// (tierbench/result/v1, fixed by DESIGN.md) and the text summary printed at
// the end of a run.
//
// result depends on config, store (for its counters), workload (checks),
// threshold (the --threshold it judges) and metrics; nothing depends on it
// but the runner, the CLI and reports.
package result
