package ecperf

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/workload"
)

// Options are ECperf's own settings (decision 0019): keys of -f files and
// flags of `run ecperf`.
type Options struct {
	// IR is the injection rate, ECperf's name for the scale: when set it
	// is the scale.
	IR         int    `yaml:"ir" json:"ir,omitempty" help:"the injection rate: the scale (5·Ir order-entry and 3·Ir planned-line terminals, population by the kit's rules); 0: --scale"`
	PODispatch string `yaml:"po-dispatch" json:"po-dispatch,omitempty" help:"how purchase orders reach the Supplier Emulator: sync (inside ScheduleWorkOrder's transaction, the kit's), poller (an agent sends unsent POs), queue (outbox + NATS JetStream + message-driven sender)"`
	Broker     string `yaml:"broker" json:"broker,omitempty" help:"NATS URL of --po-dispatch queue, e.g. nats://127.0.0.1:4222, or a cluster's URLs comma-separated (default: an embedded NATS server with JetStream)"`
	// StreamReplicas: how many of the cluster's servers keep the PO
	// queue; 0 is 1, so that results of runs without it stay as they were.
	StreamReplicas int    `yaml:"stream-replicas" json:"stream-replicas,omitempty" help:"servers of the --broker cluster keeping the PO queue's stream and consumer (0 or 1: one; 3 survives a server's loss); at most the cluster's size"`
	Emulator       string `yaml:"emulator" json:"emulator,omitempty" help:"URL of a Supplier Emulator started with 'tierbench emulator' (default: one in-process)"`
	// EmulatorDelay is the partner's network and processing, which sync
	// holds locks across.
	EmulatorDelay config.Duration `yaml:"emulator-delay" json:"emulator-delay,omitempty" help:"how long the in-process emulator takes to answer a PO, the partner's network and processing"`
	Receiver      string          `yaml:"receiver" json:"receiver,omitempty" help:"HOST:PORT the emulator delivers parts back to (port 0: any free port)"`
	CycleScale    float64         `yaml:"cycle-scale" json:"cycle-scale,omitempty" help:"multiply the kit's cycle times, station delays and polling intervals (0.1 for short runs)"`
	LeadTimeUnit  config.Duration `yaml:"lead-time-unit" json:"lead-time-unit,omitempty" help:"one unit of a supplier's lead time (0: 5s × --cycle-scale); each PO carries it, so an emulator started alone (--emulator) uses the run's"`
	// UnsortedAccess: the deadlocks of the paper, instead of key order.
	UnsortedAccess bool `yaml:"unsorted-access" json:"unsorted-access,omitempty" help:"touch order lines and inventory in the original unsorted order, which deadlocks, instead of key order"`
	// POSenders are the message-driven beans: at most this many sends
	// are under way at once, each a database session.
	POSenders int `yaml:"po-senders" json:"po-senders,omitempty" help:"agents sending POs at once under poller and queue dispatch, each a database session"`
	// PriceChangeEvery: the occasional updates of the read-mostly
	// pattern, which the kit has none of (docs/ecperf.md).
	PriceChangeEvery int `yaml:"price-change-every" json:"price-change-every,omitempty" help:"one NewOrder in N also changes the price of its first item, through the read-write type ItemRW (0: never, the kit's); with --entity Item.read-mostly=ItemRW those commits invalidate the read-only Item's cached prices"`
}

// PODispatchModes are the values of --po-dispatch.
var PODispatchModes = []string{"sync", "poller", "queue"}

// DefaultOptions are the kit's.
var DefaultOptions = Options{PODispatch: "sync", Receiver: "127.0.0.1:0", CycleScale: 1, POSenders: 16}

// Resolve: --ir is the scale.
func (o Options) Resolve(c *config.Run) {
	if o.IR > 0 {
		c.Scale = o.IR
	}
}

func (o Options) Validate(c config.Run) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.IR < 0 || (o.IR == 0 && c.Given("ir")) {
		bad("--ir %d: must be at least 1 (the injection rate)", o.IR)
	}
	if err := workload.CheckScale(o.scaleFlag(), c.Scale, maxIR, footprintAt); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		flag  string
		value config.Duration
	}{{"lead-time-unit", o.LeadTimeUnit}, {"emulator-delay", o.EmulatorDelay}} {
		if d.value < 0 {
			bad("--%s %v: must not be negative", d.flag, d.value)
		}
	}
	if !slices.Contains(PODispatchModes, o.PODispatch) {
		bad("--po-dispatch %q: allowed: %s", o.PODispatch, strings.Join(PODispatchModes, ", "))
	}
	errs = append(errs, messaging.CheckFlags(o.Broker, o.StreamReplicas)...)
	if o.Emulator != "" && !strings.HasPrefix(o.Emulator, "http://") && !strings.HasPrefix(o.Emulator, "https://") {
		bad("--emulator %q: want http://HOST:PORT (or empty for the in-process emulator)", o.Emulator)
	}
	if o.PriceChangeEvery < 0 {
		bad("--price-change-every %d: must be 0 (no price changes, the kit's) or at least 1", o.PriceChangeEvery)
	}
	if err := o.checkPriceChanges(c); err != nil {
		errs = append(errs, err)
	}
	if o.POSenders < 1 {
		bad("--po-senders %d: must be at least 1", o.POSenders)
	}
	if err := o.validateReceiver(); err != nil {
		errs = append(errs, err)
	}
	if !(o.CycleScale > 0 && o.CycleScale <= 100) {
		bad("--cycle-scale %v: must be in (0, 100] (1 = the kit's cycle times)", o.CycleScale)
	}
	return errs
}

// checkPriceChanges refuses price changes that Item's cache would never
// see: Item kept under option A (no refresh) and not declared read-mostly
// of ItemRW, whose commits would then invalidate it.
func (o Options) checkPriceChanges(c config.Run) error {
	if o.PriceChangeEvery <= 0 || !c.Persistence.Container() {
		return nil
	}
	opt, readMostly := c.CommitOption, false
	for _, e := range c.Entity {
		if e.Type != itemType.Name {
			continue
		}
		switch k, v, _ := strings.Cut(strings.TrimPrefix(e.String(), e.Type+"."), "="); k {
		case "commit-option":
			opt = container.CommitOption(v[0])
		case "read-mostly":
			readMostly = v == itemRWType.Name
		}
	}
	if opt == container.OptionA && !readMostly {
		return fmt.Errorf("--price-change-every %d: Item is cached under option A, which would serve the old prices for ever; declare --entity Item.read-mostly=ItemRW (its commits then invalidate Item), or cache Item under B, C or D", o.PriceChangeEvery)
	}
	return nil
}

// scaleFlag is the flag that set the scale: --ir, or --scale.
func (o Options) scaleFlag() string {
	if o.IR > 0 {
		return "ir"
	}
	return "scale"
}

// validateReceiver checks that the emulator can reach the receiver: the
// receiver's address is given to the emulator in every PO, so it must name
// one interface of this host (not a wildcard), and one the emulator's host
// can reach (not loopback, when the emulator is elsewhere).
func (o Options) validateReceiver() error {
	if o.Receiver == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(o.Receiver)
	if err != nil || port == "" {
		return fmt.Errorf("--receiver %q: want HOST:PORT (PORT 0: any free port)", o.Receiver)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("--receiver %q: the emulator is sent this address to deliver to, so it must name this host as the emulator sees it (e.g. 10.0.0.5:8100 or driver-host:8100), not every interface", o.Receiver)
	}
	if o.Emulator == "" || !loopback(host) {
		return nil
	}
	u, err := url.Parse(o.Emulator)
	if err == nil && !loopback(u.Hostname()) {
		return fmt.Errorf("--receiver %q is reachable only from this host, but --emulator %s is on another: give --receiver an address of this host that %s can reach (e.g. driver-host:8100)", o.Receiver, o.Emulator, u.Hostname())
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (o Options) Setup(c config.Run) string {
	s := fmt.Sprintf("Ir %d, PO dispatch %s, cycle scale %g", max(c.Scale, 1), o.PODispatch, o.CycleScale)
	if o.PriceChangeEvery > 0 {
		s += fmt.Sprintf(", a price change in 1 of %d NewOrders", o.PriceChangeEvery)
	}
	return s
}

func (o Options) Footprint(c config.Run) workload.Footprint {
	f := footprintAt(c.Scale)
	f.ScaleFlag = o.scaleFlag()
	return f
}

func (Options) MixOf() (*workload.Mix, error) { return nil, nil }

// AgentThreads: the delivery receiver and the PO senders.
func (o Options) AgentThreads() int { return 1 + o.POSenders }

// optionsOf are a run's options: the defaults when the caller gave none.
func optionsOf(o workload.Options) Options { return workload.OptionsAs(o, DefaultOptions) }
