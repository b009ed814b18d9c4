package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// emulatorStatsEvery is how often `tierbench emulator` prints its counters
// while they change (unless --quiet).
const emulatorStatsEvery = 10 * time.Second

func newEmulatorCmd() *cobra.Command {
	listen := "127.0.0.1:8099"
	unit := positiveDuration(emulator.DefaultLeadTimeUnit)
	maxInFlight := positiveInt(emulator.DefaultMaxInFlight)
	var quiet bool
	cmd := &cobra.Command{
		Use:   "emulator",
		Short: "Run ECperf's Supplier Emulator alone, e.g. on another host",
		Long: `Run ECperf's Supplier Emulator: it accepts purchase orders over HTTP
(POST /v1/purchase-orders) and, after each PO's lead time × --lead-time-unit, delivers
the parts by POSTing to the PO's deliver_to URL, retrying until it answers 2xx.
Point 'tierbench run ecperf --emulator http://HOST:PORT' at it. Interrupt to stop;
deliveries still pending then are dropped and counted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return config.Usage(fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8099, or :8099 for every interface", listen))
			}
			srv, err := emulator.New(emulator.Config{LeadTimeUnit: time.Duration(unit), MaxInFlight: int(maxInFlight)})
			if err != nil {
				return config.Usage(err)
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return infra(fmt.Errorf("--listen %s: %w", listen, err))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "supplier emulator listening on http://%s (lead time unit %v)\n", ln.Addr(), time.Duration(unit))

			stopStats := func() {}
			if !quiet {
				stopStats = printEmulatorStats(out, srv, emulatorStatsEvery)
			}
			err = srv.Serve(cmd.Context(), ln)
			srv.Close()
			stopStats()
			fmt.Fprintf(out, "supplier emulator stopped: %s\n", emulatorStatsLine(srv.Stats()))
			if err != nil {
				return infra(err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", listen, "HOST:PORT to listen on (:PORT for every interface)")
	fs.Var(&unit, "lead-time-unit", "how long one unit of a PO line's lead time lasts (the kit's 5s; smaller for short runs)")
	fs.Var(&maxInFlight, "max-in-flight", "delivery requests in progress at once")
	fs.BoolVar(&quiet, "quiet", false, "print only the first and last lines, not the counters every 10s")
	return cmd
}

// printEmulatorStats prints srv's counters every interval while they
// change, until the returned stop is called.
func printEmulatorStats(out io.Writer, srv *emulator.Server, every time.Duration) (stop func()) {
	done, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		tick := time.NewTicker(every)
		defer tick.Stop()
		var last emulator.Stats
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if st := srv.Stats(); st != last {
				fmt.Fprintf(out, "  %s\n", emulatorStatsLine(st))
				last = st
			}
		}
	}()
	return func() { close(done); <-over }
}

func emulatorStatsLine(st emulator.Stats) string {
	return fmt.Sprintf("received %d (accepted %d, duplicates %d, rejected %d), delivered %d, delivery attempts %d (%d failed), pending %d, cancelled %d",
		st.Received, st.Accepted, st.Duplicates, st.Rejected, st.Delivered, st.DeliveryAttempts, st.DeliveryFailures, st.Pending, st.Cancelled)
}

// positiveDuration is a flag value that must be a duration > 0.
type positiveDuration time.Duration

func (d *positiveDuration) String() string { return time.Duration(*d).String() }
func (d *positiveDuration) Type() string   { return "duration" }
func (d *positiveDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return errors.New("want a positive duration such as 5s, 250ms or 1m")
	}
	*d = positiveDuration(v)
	return nil
}

// positiveInt is a flag value that must be a whole number >= 1.
type positiveInt int

func (n *positiveInt) String() string { return strconv.Itoa(int(*n)) }
func (n *positiveInt) Type() string   { return "int" }
func (n *positiveInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return errors.New("want a whole number of at least 1")
	}
	*n = positiveInt(v)
	return nil
}
