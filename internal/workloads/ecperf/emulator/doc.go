// Package emulator is ECperf's Supplier Emulator: the external web
// application that receives purchase orders (POs) from the supplier domain
// over HTTP and, after the PO's lead time, delivers the parts by calling the
// system under test back over HTTP.
//
// A Server runs in-process (started by `tierbench run ecperf`) or alone on
// another host (`tierbench emulator`). It is the idempotent receiver of an
// at-least-once sender: a PO sent again in the same run is answered
// "duplicate", counted and not delivered twice. Deliveries are retried with
// capped exponential backoff until the callback answers 2xx or the server
// stops. Per-run listings let the ECperf consistency check prove that every
// committed PO was sent and no aborted one was.
//
// The wire documents (PO, Delivery, …) and a Client live here too, so the
// ECperf workload imports this package rather than redefining them.
//
// Pending deliveries wait in one time-ordered heap served by a single
// scheduler goroutine; a goroutine exists only while an HTTP attempt is in
// flight, and at most Config.MaxInFlight of those at once.
//
// emulator uses the standard library only and must not depend on other
// tierbench packages: it has to run where only the emulator runs.
package emulator
