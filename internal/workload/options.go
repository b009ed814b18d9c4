package workload

import (
	"fmt"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/remote"
)

// Options are a workload's own settings, declared in its package's
// options.go (decision 0019) as a struct value whose fields are its keys:
//
//	PODispatch string `yaml:"po-dispatch" json:"po-dispatch,omitempty" help:"how purchase orders reach …"`
//
// The yaml tag is the key of -f files and sweeps and the name of the flag
// of the workload's commands (run, load, serve, drive WORKLOAD), the help
// tag its help; the value in Info.Options is the default the flag shows;
// the json tag writes it into a result's config. config reads, overlays
// and writes the fields without knowing them; the methods below are what
// the runner asks of them. Embed NoOptions for the methods a workload has
// nothing to say in.
type Options interface {
	// Resolve applies the options that stand for common settings
	// (ECperf's --ir is the scale; RUBiS's --style implies a persistence).
	Resolve(common *config.Run)
	// Validate returns every problem with the options, each naming the
	// flag, the value and what is allowed; common are the run's other
	// settings.
	Validate(common config.Run) []error
	// Setup describes the options in a few words for the summary (ECperf:
	// "Ir 5, PO dispatch queue"); "" for nothing to say.
	Setup(common config.Run) string
	// Footprint is what the configuration implies before anything runs,
	// for the runner to check against the machine; zero: --clients
	// terminals and an unknown database size.
	Footprint(common config.Run) Footprint
	// MixOf is the mix the options ask for (TPC-App's --mix weights),
	// checked by Validate; nil: Info.Mix.
	MixOf() (*Mix, error)
	// AgentThreads are the database sessions a run needs beyond the
	// server threads for the workload's agents (ECperf's delivery
	// receiver and PO senders), with thread numbers from RunParams.Threads
	// on.
	AgentThreads() int
}

// NoOptions are the options of a workload without any, and the methods
// an Options embeds when it has nothing to say in them.
type NoOptions struct{}

func (NoOptions) Resolve(*config.Run)            {}
func (NoOptions) Validate(config.Run) []error    { return nil }
func (NoOptions) Setup(config.Run) string        { return "" }
func (NoOptions) Footprint(config.Run) Footprint { return Footprint{} }
func (NoOptions) MixOf() (*Mix, error)           { return nil, nil }
func (NoOptions) AgentThreads() int              { return 0 }

// OptionsOf are the run's options, NoOptions when its workload has none.
func OptionsOf(cfg config.Run) Options {
	if o, ok := cfg.Options.(Options); ok {
		return o
	}
	return NoOptions{}
}

// OptionsAs are o as their workload's type T, or defaults when o is nil
// (a caller that gave none, as a test may): what a workload reads its
// options with in Load, Start and the rest.
func OptionsAs[T Options](o Options, defaults T) T {
	if o == nil {
		return defaults
	}
	t, ok := o.(T)
	if !ok {
		// The runner hands a workload the options of its Info; another
		// type is a bug of the caller, not a user's mistake.
		panic(fmt.Sprintf("workload options: got %T, want %T", o, defaults))
	}
	return t
}

// MixOf is the mix of a run of info: its options', or Info.Mix.
func MixOf(info Info, o Options) (Mix, error) {
	m, err := o.MixOf()
	if err != nil || m == nil {
		return info.Mix, err
	}
	return *m, nil
}

// Tiering are the options of a workload whose middle tier can run in
// processes of its own (Stock-Online, RUBiS), embedded in its Options.
type Tiering struct {
	Protocol string `yaml:"protocol" json:"protocol,omitempty" help:"how a tier calls the next one over a process boundary: http (HTTP/1.1, JSON), grpc (HTTP/2, protobuf) or lean (protobuf frames on persistent TCP connections, the seed's optimized calls)"`
	Tiers    int    `yaml:"tiers" json:"tiers,omitempty" help:"processes the run spans: 1 (everything here), 2 (the middle tier in a child process: RUBiS's site, Stock-Online's session bean), 3 (RUBiS: web and business tier each in a child process; --style session, facade or entity)"`
}

// DefaultTiering: one process; http, should a later run split it.
var DefaultTiering = Tiering{Protocol: "http", Tiers: 1}

// TierOptions are t, for an Options that embeds it.
func (t Tiering) TierOptions() Tiering { return t }

// Tiered is implemented by the Options of a workload whose middle tier
// can run in processes of its own: the runner starts them.
type Tiered interface {
	Options
	// TierOptions are the options' --tiers and --protocol (Tiering's,
	// promoted).
	TierOptions() Tiering
	// WithProtocol are the options with the protocol a run resolved.
	WithProtocol(protocol string) Options
	// Style is the middle tier's style (RUBiS's --style, or the one the
	// persistence implies); "" for a workload with one way to build it.
	StyleOf(common config.Run) string
	// Apart are the options of a tier served apart (serve --tier): RUBiS's
	// style is then one with a business tier.
	Apart(common config.Run) Options
	ServerArgs
}

// ServerArgs is implemented by the Options of a workload whose middle
// tier a run starts as processes (--tiers, --app-servers N).
type ServerArgs interface {
	// TierArgs are the workload's own flags of `serve` that give a child
	// tier the run's options (RUBiS's --style, TPC-App's partners).
	TierArgs(common config.Run) []string
}

// Queued is implemented by the Options of a workload whose app servers'
// agents share queues on a NATS server (TPC-App's shipping and
// inventory): a run over several app servers starts one for them all
// (embedded, in the run's directory) unless the options name one, since
// each server's own embedded one would keep its queues to itself.
type Queued interface {
	Options
	// QueueBroker is the options' broker URL; "": an embedded one.
	QueueBroker() string
	// WithQueueBroker are the options with the broker at url.
	WithQueueBroker(url string) Options
}

// TieringOf is the run's tiering: its options', or one process.
func TieringOf(o Options) Tiering {
	if t, ok := o.(Tiered); ok {
		return t.TierOptions()
	}
	return DefaultTiering
}

// Validate checks --tiers and --protocol for a workload whose run spans
// at most max processes.
func (t Tiering) Validate(workload string, max int) []error {
	var errs []error
	if _, err := remote.ParseProtocol(t.Protocol); err != nil {
		errs = append(errs, fmt.Errorf("--%v", err))
	}
	switch {
	case t.Tiers < 1 || t.Tiers > 3:
		errs = append(errs, fmt.Errorf("--tiers %d: allowed: 1 (everything in this process), 2 (the middle tier in a process of its own), 3 (web and business tier each in its own; RUBiS with --style session, facade or entity)", t.Tiers))
	case t.Tiers > max:
		errs = append(errs, fmt.Errorf("--tiers %d: %s has no web tier; its clients call the business tier, so --tiers 2 puts that in a process of its own", t.Tiers, workload))
	}
	return errs
}

// SetOptions changes cfg's options, of their workload's type T: set
// changes a copy, which is stored back (tests, tools).
func SetOptions[T Options](cfg *config.Run, set func(*T)) {
	o, _ := cfg.Options.(T)
	set(&o)
	cfg.Options = o
}
