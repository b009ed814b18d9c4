// Package metrics records what a run measured: one HDR histogram per
// operation for end-to-end, queue and service time, outcome counts, and a
// per-second time series, all mergeable exactly.
//
// Recording is sharded: each terminal records into one shard under a mutex
// that only terminals of the same shard contend for, and shards merge when
// the run ends. metrics must not depend on other tierbench packages.
package metrics
