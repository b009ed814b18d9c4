package ecperf

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// slowEmulator is an emulator whose lead time unit is an hour, whatever
// the POs carry: it accepts POs and delivers none within any test.
func slowEmulator(t *testing.T) string {
	t.Helper()
	srv, err := emulator.New(emulator.Config{LeadTimeUnit: time.Hour, OwnUnit: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(served) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-served })
	return "http://" + ln.Addr().String()
}

// leftUnsent writes n POs left unsent by an earlier run (as a killed one
// leaves them), each with one line of lead time 2 units; Start sends them
// (sync) or queues them (queue).
func leftUnsent(t *testing.T, db *store.DB, unit time.Duration, n int) {
	t.Helper()
	q := storetest.Querier{T: t, DB: db}
	now := time.Now().UTC()
	for i := range int64(n) {
		q.Exec("INSERT INTO s_purchase_order (po_number, po_supp_id, po_site_id, po_status, po_created) VALUES (?, 1, 1, ?, ?)", 910001+i, int64(poUnsent), now)
		q.Exec("INSERT INTO s_purchase_orderline (pol_po_id, pol_number, pol_p_id, pol_qty, pol_balance, pol_deldate, pol_message) VALUES (?, 1, 150, 40, 40, ?, '')", 910001+i, now.Add(2*unit))
	}
	q.Exec("UPDATE m_inventory SET in_ordered = in_ordered + ? WHERE in_p_id = 150", int64(40*n))
}

// A drain cut short by its context (the run interrupted by SIGINT or
// SIGTERM) ends Stop promptly, not after the drain's budget; the status
// says what was left, and the checks say the drain was interrupted and how
// many POs it left, rather than calling them lost. Whether ctx ends before
// Stop or during the drain, on every backend, under sync and queue.
func TestStopReturnsPromptlyWhenInterrupted(t *testing.T) {
	t.Parallel()
	none := make([]int64, numOps)
	storetest.Each(t, func(t *testing.T, dsn string) {
		cell := 0
		for _, mode := range []string{dispatchSync, dispatchQueue} {
			for _, when := range []string{"before", "during"} {
				ci := cell
				cell++
				t.Run(mode+"/"+when, func(t *testing.T) {
					storetest.ShareCell(t, dsn, ci)
					cfg := testConfig()
					workload.SetOptions(&cfg, func(o *Options) { o.PODispatch, o.Emulator = mode, slowEmulator(t) })
					workload.SetOptions(&cfg, func(o *Options) { o.LeadTimeUnit = config.Duration(time.Hour) })
					// A database of the cell's own: make test-all runs every
					// cell on every backend, each on a copy of the population.
					db := loadedDB(t, storetest.Fresh(t, dsn), cfg)
					leftUnsent(t, db, time.Hour, 3)
					a := startApp(t, db, cfg)

					ctx, cancel := context.WithCancel(context.Background())
					if when == "before" {
						cancel()
					} else {
						// Nothing is delivered for hours: the drain is still
						// waiting whenever this fires.
						ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
					}
					defer cancel()
					began := time.Now()
					if err := a.Stop(ctx); err != nil {
						t.Errorf("Stop: %v", err)
					}
					// A bound, not a speed: the alternative is the drain's
					// budget of minutes.
					if took := time.Since(began); took > 5*time.Second {
						t.Errorf("Stop took %v after its context ended", took)
					}
					if got := a.drain.end.Load(); got != drainInterrupted {
						t.Errorf("drain ended %d, want interrupted (%d)", got, drainInterrupted)
					}
					status := a.StopStatus()
					if !strings.HasPrefix(status, "drain interrupted after ") || a.DrainIncomplete() != status {
						t.Errorf("status %q, incomplete %q", status, a.DrainIncomplete())
					}
					unsent, awaiting := a.drain.unsent.Load(), a.drain.awaiting.Load()
					if unsent+awaiting != 3 || (mode == dispatchSync && awaiting != 3) {
						t.Errorf("%d unsent and %d awaiting delivery after the stop, want the 3 POs (all sent under sync)", unsent, awaiting)
					}
					checks, err := a.Check(context.Background(), workload.Outcomes{Succeeded: none})
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range checks {
						switch c.Name {
						case "deliveries-applied-once":
							if c.Passed || !strings.Contains(c.Detail, "(the drain was interrupted after ") || !strings.Contains(c.Detail, " awaiting delivery were never waited for") {
								t.Errorf("%s passed %v: %s", c.Name, c.Passed, c.Detail)
							}
						case "po-sent-exactly-once":
							// Under queue a PO may be at the emulator with its
							// mark as sent cut off by the stop: sent all the
							// same. One the emulator lacks fails the check,
							// which says the drain was cut short.
							if c.Passed && !strings.Contains(c.Detail, "; 0 committed but never sent []") ||
								!c.Passed && !strings.Contains(c.Detail, "(the drain was interrupted after ") ||
								mode == dispatchSync && !c.Passed {
								t.Errorf("%s passed %v with %d POs unsent by the database: %s", c.Name, c.Passed, unsent, c.Detail)
							}
						default:
							if !c.Passed {
								t.Errorf("%s: %s", c.Name, c.Detail)
							}
						}
					}
				})
			}
		}
	})
}
