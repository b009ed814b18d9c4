package stockonline

import (
	"errors"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/workload"
)

// Options are Stock-Online's own settings (decision 0019): keys of -f
// files and flags of `run stockonline`.
type Options struct {
	Mix string `yaml:"mix" json:"mix,omitempty" help:"table-2 (the paper's deck of 43) or counts OP=N,… of one iteration's deck (BuyStock and SellStock paired, so equal), e.g. UpdateAccount=1 to measure one transaction alone"`
	// Warmup is the paper's routine before a run on the container.
	Warmup bool `yaml:"warmup" json:"warmup" help:"warm the container's caches before the run by reading the warmed types (Account, Item, Holding)"`
	// Tiering: --tiers 2 calls the session bean remotely, as in the paper.
	workload.Tiering
}

// DefaultOptions: Table 2's deck, in one process.
var DefaultOptions = Options{Mix: MixTable2, Tiering: workload.DefaultTiering}

var _ workload.Tiered = Options{}

func (Options) Resolve(*config.Run) {}

func (o Options) Validate(c config.Run) []error {
	var errs []error
	if _, err := ParseMix(o.Mix); err != nil {
		errs = append(errs, err)
	}
	if err := workload.CheckScale("scale", c.Scale, maxScale, footprintAt); err != nil {
		errs = append(errs, err)
	}
	if o.Warmup && !c.Persistence.Container() {
		errs = append(errs, errors.New("--warmup warms the entity container's caches, and --persistence direct has none: use cmp, bmp or bmp-checked, or drop --warmup"))
	}
	return append(errs, o.Tiering.Validate(c.Workload, 2)...)
}

func (Options) Setup(config.Run) string { return "" }

func (Options) Footprint(c config.Run) workload.Footprint { return footprintAt(c.Scale) }

// MixOf is --mix's deck.
func (o Options) MixOf() (*workload.Mix, error) {
	m, err := ParseMix(o.Mix)
	return &m, err
}

func (Options) AgentThreads() int { return 0 }

func (o Options) WithProtocol(p string) workload.Options { o.Protocol = p; return o }

// Style: the session bean is the one way to build the middle tier.
func (Options) StyleOf(config.Run) string { return "" }

// TierArgs: the business tier warms its container.
func (o Options) TierArgs(config.Run) []string {
	if o.Warmup {
		return []string{"--warmup"}
	}
	return nil
}

// Apart: the business tier is the session bean's, apart or not.
func (o Options) Apart(config.Run) workload.Options { return o }

// optionsOf are a run's options: the defaults when the caller gave none.
func optionsOf(o workload.Options) Options { return workload.OptionsAs(o, DefaultOptions) }
