package rubis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/workload"
)

// Options are RUBiS's own settings (decision 0019): keys of -f files and
// flags of `run rubis`. The client's behaviours' zero values are the
// original client's.
type Options struct {
	Mix        string  `yaml:"mix" json:"mix,omitempty" help:"the original client's transition table: bidding (default_transitions, with writes) or browsing (read only), or the path of a table file in the original's format"`
	ThinkScale float64 `yaml:"think-scale" json:"think-scale,omitempty" help:"multiply the browsers' think time, negative exponential of mean 7 s (0.01 for short runs, 0 for none)"`
	// ItemsPerCategory: empty means original.
	ItemsPerCategory string `yaml:"items-per-category" json:"items-per-category,omitempty" help:"how the load deals the active items to the categories: original (the counts of the kit's ebay_simple_categories.txt, scaled: Collectibles 23%, Photo 0.5%) or even (default original)"`
	SkipImages       bool   `yaml:"skip-images" json:"skip-images,omitempty" help:"the browsers fetch none of the pages' <IMG SRC> (default: every one, after its page, counted apart from the interactions, as the original client)"`
	OneBasedIDs      bool   `yaml:"one-based-ids" json:"one-based-ids,omitempty" help:"send category, region and user ids as the database numbers them (default: the original client's 0-based draw, so category 0 finds nothing)"`
	PageTries        int    `yaml:"page-tries" json:"page-tries,omitempty" help:"tries of a page that fails (no response, or HTTP 400 and above) before it counts as an error, 1 s apart (0: 5, the original client's)"`
	NoRampSlowdown   bool   `yaml:"no-ramp-slowdown" json:"no-ramp-slowdown,omitempty" help:"the same think time in the ramps (default: ×2 in the up-ramp and ×3 in the down-ramp, the original client's slow-down factors)"`
	// Style is how the middle tier is built; empty: by --persistence,
	// direct = servlets, the container = local.
	Style string `yaml:"style" json:"style,omitempty" help:"how the middle tier is built: servlets (SQL in the web tier), session (session beans on a business tier, SQL), entity (the web tier calls entity beans on a business tier field by field), facade (session facade over entity beans on a business tier), facade-remote (the same facade calling its entity beans through the --protocol, as on containers without optimized local calls), local (facade and entity beans in the web tier's process) (default: servlets under --persistence direct, local under cmp or bmp)"`
	// Tiering: --tiers 2 puts the site in a child process, 3 the web
	// and the business tier each in one.
	workload.Tiering
	// warm reads the warmed types into the container before the run. Not
	// a key (--warmup is Stock-Online's): the tests of the warm path set it.
	warm bool
}

// DefaultOptions are the original client's.
var DefaultOptions = Options{Mix: "bidding", ThinkScale: 1, Tiering: workload.DefaultTiering}

// Styles are the values of --style: the implementation styles of Cecchet
// et al. (OOPSLA 2002).
var Styles = []string{"servlets", "session", "facade", FacadeRemote, "local", "entity"}

// RemoteStyles are the styles with a remote boundary between the web and
// the business tier.
var RemoteStyles = []string{"session", "facade", FacadeRemote, "entity"}

var _ workload.Tiered = Options{}

// directStyle: the style's business logic is SQL written by hand, not
// the entity container.
func directStyle(style string) bool { return style == "servlets" || style == "session" }

// Resolve: a style on the container without a persistence of the
// user's runs on CMP, the seed's entity beans.
func (o Options) Resolve(c *config.Run) {
	if o.Style != "" && !directStyle(o.Style) && !c.Given("persistence") && !c.Persistence.Container() {
		c.Persistence = container.CMP
	}
}

func (o Options) Validate(c config.Run) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := transitions(o.Mix); err != nil {
		errs = append(errs, err)
	}
	if err := workload.CheckScale("scale", c.Scale, maxScale, footprintAt); err != nil {
		errs = append(errs, err)
	}
	if o.ItemsPerCategory != "" && o.ItemsPerCategory != "original" && o.ItemsPerCategory != "even" {
		bad("--items-per-category %q: want original (the kit's ebay_simple_categories.txt counts, scaled) or even", o.ItemsPerCategory)
	}
	if o.PageTries < 0 || o.PageTries > 100 {
		bad("--page-tries %d: must be from 1 to 100 (0: the original's 5)", o.PageTries)
	}
	if !(o.ThinkScale >= 0 && o.ThinkScale <= 100) {
		bad("--think-scale %v: must be from 0 to 100 (1 = the original's 7 s mean, 0 = no think time)", o.ThinkScale)
	}
	if err := o.validateStyle(c.Persistence); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.Tiering.Validate(c.Workload, 3)...)
	if o.Tiers == 3 && !slices.Contains(RemoteStyles, o.StyleOf(c)) {
		bad("--tiers 3 puts the web and the business tier in processes of their own, but --style %s has no business tier apart from the web tier; use --style %s, or --tiers 2", o.StyleOf(c), strings.Join(RemoteStyles, ", "))
	}
	return errs
}

// validateStyle: a style names where the business logic runs and over
// what, so it fixes the persistence's kind: SQL written by hand (servlets,
// session) or the entity container (facade, local, entity).
func (o Options) validateStyle(p container.Persistence) error {
	if o.Style == "" {
		return nil
	}
	if !slices.Contains(Styles, o.Style) {
		return fmt.Errorf("--style %q: allowed: %s", o.Style, strings.Join(Styles, ", "))
	}
	direct := directStyle(o.Style)
	if direct == p.Container() {
		want := "direct"
		if !direct {
			want = "cmp or bmp"
		}
		return fmt.Errorf("--style %s runs on --persistence %s, not %s", o.Style, want, p)
	}
	return nil
}

// StyleOf is the run's style: --style, or the one --persistence implies.
func (o Options) StyleOf(c config.Run) string {
	switch {
	case o.Style != "":
		return o.Style
	case c.Persistence.Container():
		return "local"
	}
	return "servlets"
}

func (Options) Setup(config.Run) string { return "" }

func (Options) Footprint(c config.Run) workload.Footprint { return footprintAt(c.Scale) }

func (Options) MixOf() (*workload.Mix, error) { return nil, nil }

func (Options) AgentThreads() int { return 0 }

func (o Options) WithProtocol(p string) workload.Options { o.Protocol = p; return o }

// TierArgs: a child tier is built in the run's style.
func (o Options) TierArgs(c config.Run) []string { return []string{"--style", o.StyleOf(c)} }

// Apart: a tier apart has a business tier; without --style, its style is
// the one of the persistence that has one (the session beans' SQL, or
// the facade over the container's beans).
func (o Options) Apart(c config.Run) workload.Options {
	if o.Style == "" {
		o.Style = "session"
		if c.Persistence.Container() {
			o.Style = "facade"
		}
	}
	return o
}

// optionsOf are a run's options: the defaults when the caller gave none.
func optionsOf(o workload.Options) Options { return workload.OptionsAs(o, DefaultOptions) }
