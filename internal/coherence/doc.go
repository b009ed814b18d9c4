// Package coherence keeps the entity caches of several app servers right
// when they share one database: each server's container publishes what
// its commits write over NATS, and applies what the others publish
// (container.Peers, container.Invalidate). It implements the coherence
// modes invalidate (a commit returns once every live peer has applied its
// writes, announced before the database commit, settled after) and
// invalidate-async (published without waiting, its staleness measured).
//
// The protocol, on subjects under tierbench.coherence.RUN so that two
// runs on one broker never mix:
//
//   - Each server publishes everything, invalidations and heartbeats, on
//     its own subject (…peer.NAME), numbered: NATS keeps one publisher's
//     messages to one subject in order, so a receiver that sees a number
//     skip knows it missed one. It then clears its caches of the
//     coherent types (it fences itself) before it serves from them
//     again.
//   - A synchronous publication carries a reply subject (…ack.NAME); the
//     receiver applies the writes before it replies. The committer sends
//     its announcement before the database commit and waits for the
//     replies after it (Bus.Await): the round trip overlaps the commit,
//     and the receiver's marks keep out what it reads of the identities
//     meanwhile (decision 0034). Announcements are
//     group-committed: one message is in flight at a time, and the
//     commits that come while it waits for its replies go out together
//     in the next, each commit's writes under a number of its own that
//     its settle names. Created identities are not announced (no peer
//     can hold a row that does not exist yet; decision 0044): the settle
//     names them apart, to be dropped and never unmarked, so that it
//     lifts only the marks its announcement made. A type is published
//     only once another server has claimed it, before it first serves it
//     from memory (claims.go). A peer that does not
//     reply within the deadline is fenced: the publisher stops waiting
//     for it and publishes a fence notice naming it, and takes it back
//     once the peer's heartbeat shows it has applied that notice.
//   - Membership is heard, not declared: a server that hears a peer's
//     heartbeat waits for it from then on, and lists it in its own
//     heartbeats. A server serves cached data of a coherent type only
//     under a lease: every peer it has heard (and, when the run says how
//     many servers it has, every one of them) listed it in an in-order
//     message sent less than the lease ago. The lease is the deadline
//     less a heartbeat, so by the time a publisher gives up on a silent
//     peer, that peer has stopped serving from memory whatever it missed.
//     The lease compares the sender's clock with the receiver's: exact on
//     one machine, NTP's error across machines (give the deadline room).
//   - A peer silent for longer than the expiry is taken as gone: nobody
//     waits for it or requires its lease, and the marks of its announced
//     writes are settled.
//
// Messages are encoded in a compact binary form (codec.go), not JSON: a
// message is handled on every writing commit, several times.
//
// It depends on container and nats.go (and nats-server for an embedded
// broker), never on the runner or the workloads.
package coherence
