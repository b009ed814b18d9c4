// Package messaging gives tierbench durable queues on NATS JetStream, and
// the transactional outbox that feeds them, for ECperf's transaction
// chopping: a purchase order commits with an outbox row, and a
// message-driven bean sends it later.
//
// The guarantee sought is "effectively once", built from two weaker ones.
// JetStream delivers at least once: a message stays on a durable consumer
// until its handler acknowledges it, so a failed handler, a stopped
// consumer or a restarted server leads to redelivery, never loss. The
// receiver is idempotent, so the copies redelivery can produce change
// nothing. What neither covers is the gap between a database commit and a
// publish: a process killed between the two loses the message, and one
// that publishes first may announce a transaction that then rolls back.
// The Outbox closes that gap: the message is a row written in the
// business transaction, relayed after the commit, and deleted only once
// the stream has acknowledged it; a relay that fails between publish and
// delete republishes, and the stream drops the copy because the message id
// (a prefix and the row's id) falls inside its de-duplication window. A
// process that restarts relays under a prefix of its own, so that rows
// whose ids come round again are never dropped as copies; what it
// republishes, the idempotent receiver absorbs.
//
// The broker is an embedded in-process nats-server by default, so a fresh
// machine needs nothing installed, or an external server or cluster by URL.
//
// messaging depends on store (for the outbox's table) and on nothing else
// of tierbench; workloads and the container depend on it, not the reverse.
package messaging
