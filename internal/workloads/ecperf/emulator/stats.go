package emulator

import "sync/atomic"

// Stats is a snapshot of an emulator's counters since it started
// (GET /v1/stats). Once the server is quiet they satisfy
// Received = Accepted + Duplicates + Rejected,
// Accepted = Delivered + Pending + Cancelled and
// DeliveryAttempts = Delivered + DeliveryFailures.
type Stats struct {
	// Received counts POSTed purchase orders, well-formed or not (except
	// those answered 503 while closing or abandoned during ResponseDelay).
	Received int64 `json:"received"`
	// Accepted counts POs scheduled for delivery (answered 202).
	Accepted int64 `json:"accepted"`
	// Duplicates counts POs already received in the same run (answered 200).
	Duplicates int64 `json:"duplicates"`
	// Rejected counts POs answered 4xx: malformed, invalid or too big.
	Rejected int64 `json:"rejected"`
	// Delivered counts POs whose delivery was answered 2xx.
	Delivered int64 `json:"delivered"`
	// DeliveryAttempts counts delivery requests started, retries included.
	DeliveryAttempts int64 `json:"delivery_attempts"`
	// DeliveryFailures counts attempts that did not end in a 2xx answer
	// (including attempts cut short by Forget or Close).
	DeliveryFailures int64 `json:"delivery_failures"`
	// Pending counts accepted POs not delivered yet: waiting for their lead
	// time, for a retry or for an attempt under way.
	Pending int64 `json:"pending"`
	// Cancelled counts pending POs dropped by forgetting their run.
	Cancelled int64 `json:"cancelled"`
}

// counters are the live, atomic form of Stats.
type counters struct {
	received, accepted, duplicates, rejected atomic.Int64
	delivered, attempts, failures, pending   atomic.Int64
	cancelled                                atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Received:         c.received.Load(),
		Accepted:         c.accepted.Load(),
		Duplicates:       c.duplicates.Load(),
		Rejected:         c.rejected.Load(),
		Delivered:        c.delivered.Load(),
		DeliveryAttempts: c.attempts.Load(),
		DeliveryFailures: c.failures.Load(),
		Pending:          c.pending.Load(),
		Cancelled:        c.cancelled.Load(),
	}
}
