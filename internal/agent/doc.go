// Package agent spreads a drive over driver agents on several hosts: the
// protocol between `tierbench agent` processes and the coordinator that
// `tierbench drive --agents N` runs, over NATS core request/reply.
//
// The coordinator discovers idle agents, measures each one's clock offset
// (the reply with the shortest round trip of several), gives each a share
// of the terminals and one common start time in the agent's own clock,
// follows their per-second progress, and collects each agent's result,
// whose histograms merge exactly. An agent silent for LostAfter is lost.
package agent
