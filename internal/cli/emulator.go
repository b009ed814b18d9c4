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
	"github.com/tierbench/tierbench/internal/server"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp/partner"
)

// emulatorStatsEvery is how often `tierbench emulator` prints its counters
// while they change (unless --quiet).
const emulatorStatsEvery = 10 * time.Second

func newEmulatorCmd() *cobra.Command {
	cmd := newSupplierCmd("emulator")
	cmd.Short = "Run an external partner service alone, e.g. on another host: ECperf's Supplier Emulator (the default), or TPC-App's pov, pge, ice, sne"
	cmd.Long += `

'tierbench emulator supplier' is the same. TPC-App's partners are subcommands:
'tierbench emulator pov|pge|ice|sne' (see their help).`
	sup := newSupplierCmd("supplier")
	cmd.AddCommand(sup)
	for _, k := range partner.Kinds {
		cmd.AddCommand(newPartnerCmd(k))
	}
	return cmd
}

// newSupplierCmd is ECperf's Supplier Emulator, as the command use.
func newSupplierCmd(use string) *cobra.Command {
	listen := "127.0.0.1:8099"
	unit := positiveDuration(emulator.DefaultLeadTimeUnit)
	maxInFlight := positiveInt(emulator.DefaultMaxInFlight)
	var quiet, insecure bool
	cmd := &cobra.Command{
		Use:   use,
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
			// It delivers to any URL a PO names: open to the network, it
			// would post wherever anyone asks.
			if err := server.Guard(cmd.Context(), "--listen", listen, "the supplier emulator", "listen on loopback (127.0.0.1)", insecure, cmd.ErrOrStderr()); err != nil {
				return config.Usage(err)
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
			fmt.Fprintf(out, "supplier emulator listening on http://%s (lead time unit %v for POs that carry none; a run's POs carry its own)\n", ln.Addr(), time.Duration(unit))

			stopStats := func() {}
			if !quiet {
				stopStats = printStats(out, emulatorStatsEvery, srv.Stats, emulatorStatsLine)
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
	fs.Var(&unit, "lead-time-unit", "how long one unit of a PO line's lead time lasts (the kit's 5s), for POs that carry no unit of their own (a run's POs carry its unit)")
	fs.Var(&maxInFlight, "max-in-flight", "delivery requests in progress at once")
	fs.BoolVar(&quiet, "quiet", false, "print only the first and last lines, not the counters every 10s")
	fs.BoolVar(&insecure, "insecure", false, "listen at an address other hosts reach (the emulator authenticates no one), with a warning")
	return cmd
}

// printStats prints a line of the counters snapshot returns every
// interval while they change, until the returned stop is called.
func printStats[T comparable](out io.Writer, every time.Duration, snapshot func() T, line func(T) string) (stop func()) {
	done, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		tick := time.NewTicker(every)
		defer tick.Stop()
		var last T
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if st := snapshot(); st != last {
				fmt.Fprintf(out, "  %s\n", line(st))
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

// partnerPorts are the partners' default ports, one apart so that all
// four can run on one host.
var partnerPorts = map[partner.Kind]int{partner.POV: 8201, partner.PGE: 8202, partner.ICE: 8203, partner.SNE: 8204}

// newPartnerCmd serves one of TPC-App's external partners.
func newPartnerCmd(k partner.Kind) *cobra.Command {
	listen := fmt.Sprintf("127.0.0.1:%d", partnerPorts[k])
	delay := partner.DefaultDelay
	approve := partner.DefaultApprove
	var failRate float64
	var quiet, insecure bool
	what := map[partner.Kind]string{
		partner.POV: "It answers POST " + partner.PathVerify + ` {"po_id": …, "customer": …} with {"approved": …}:
NewCustomer and ChangePaymentMethod ask it when a business pays by purchase order.`,
		partner.PGE: "It answers POST " + partner.PathAuthorize + ` {"card_number": …, "reference": …, …} with {"approved": …, "auth_code": …}:
CreateOrder asks it when the customer pays by credit card.`,
		partner.ICE: "It answers POST " + partner.PathReorder + ` {"run": …, "reorder_id": …, "item_id": …, "quantity": …} with {"accepted": true, "duplicate": …}:
the inventory agents ask it to replenish an item's stock, and a reorder sent again is answered as a duplicate.`,
		partner.SNE: "It answers POST " + partner.PathNotice + ` {"run": …, "order_id": …, "ship_type": …, "lines": …, "label": PNG in base64} with
{"accepted": true, "duplicate": …}: the shipping agents tell it of every order shipped, with its shipping
label; a notice sent again is answered as a duplicate, and a label that is not a PNG image refused (422).`,
	}[k]
	cmd := &cobra.Command{
		Use:   string(k),
		Short: "Run TPC-App's " + k.Title() + " alone, e.g. on another host",
		Long: "Run TPC-App's " + k.Title() + ". " + what + `
Each answer waits --delay first (the partner's network and processing). Approval is decided
by a hash of the request's key against --approve, so the same request always gets the same
answer. --fail-rate answers that share of requests 503, before any effect. GET ` + partner.PathStats + `
gives the counters. Point 'tierbench run tpcapp --` + string(k) + ` http://HOST:PORT' at it. Interrupt to stop.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return config.Usage(fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:%d, or :%d for every interface", listen, partnerPorts[k], partnerPorts[k]))
			}
			if err := server.Guard(cmd.Context(), "--listen", listen, "the "+k.Title(), "listen on loopback (127.0.0.1)", insecure, cmd.ErrOrStderr()); err != nil {
				return config.Usage(err)
			}
			srv, err := partner.New(partner.Config{Kind: k, Delay: delay, Approve: &approve, FailRate: failRate})
			if err != nil {
				return config.Usage(err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return infra(fmt.Errorf("--listen %s: %w", listen, err))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s listening on http://%s (delay %s, approve %g, fail rate %g)\n", k.Title(), ln.Addr(), delay, approve, failRate)
			stopStats := func() {}
			if !quiet {
				stopStats = printStats(out, emulatorStatsEvery, srv.Stats, partnerStatsLine)
			}
			err = srv.Serve(cmd.Context(), ln)
			stopStats()
			fmt.Fprintf(out, "%s stopped: %s\n", k, partnerStatsLine(srv.Stats()))
			if err != nil {
				return infra(err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", listen, "HOST:PORT to listen on (:PORT for every interface)")
	fs.Var(&delay, "delay", "response time: none, fixed:D, uniform:MIN-MAX, negexp:MEAN (truncated at 5× the mean)")
	if k == partner.POV || k == partner.PGE {
		fs.Float64Var(&approve, "approve", approve, "share of requests approved, in [0, 1]")
	}
	fs.Float64Var(&failRate, "fail-rate", 0, "share of requests answered 503 before any effect, in [0, 1]")
	fs.BoolVar(&quiet, "quiet", false, "print only the first and last lines, not the counters every 10s")
	fs.BoolVar(&insecure, "insecure", false, "listen at an address other hosts reach (the partner authenticates no one), with a warning")
	return cmd
}

func partnerStatsLine(st partner.Stats) string {
	line := fmt.Sprintf("requests %d (approved %d, declined %d, duplicates %d), failed on purpose %d, rejected %d",
		st.Requests, st.Approved, st.Declined, st.Duplicates, st.Failed, st.Rejected)
	if st.Kind == partner.SNE {
		line += fmt.Sprintf(", labels %d bytes", st.LabelBytes)
	}
	return line
}
