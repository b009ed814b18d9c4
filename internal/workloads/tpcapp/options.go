package tpcapp

import (
	"fmt"
	"slices"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp/partner"
)

// Options are TPC-App's own settings (decision 0019): keys of -f files
// and flags of `run tpcapp`.
type Options struct {
	Mix    string `yaml:"mix" json:"mix,omitempty" help:"spec (the reference's mix) or weights OP=N,… (methods not named get none)"`
	Broker string `yaml:"broker" json:"broker,omitempty" help:"NATS URL of the shipping and inventory queues, e.g. nats://127.0.0.1:4222, or a cluster's URLs comma-separated (default: an embedded NATS server with JetStream)"`
	// StreamReplicas: how many of the cluster's servers keep the queues;
	// 0 is 1, so that results of runs without it stay as they were.
	StreamReplicas int `yaml:"stream-replicas" json:"stream-replicas,omitempty" help:"servers of the --broker cluster keeping the shipping and inventory queues' streams and consumers (0 or 1: one; 3 survives a server's loss); at most the cluster's size"`
	// ItemImages is where item images live: in-row (in the item row, the
	// seed's first runs), file (a file the row names, under ImageDir),
	// none; ImageKB each one's size.
	ItemImages string `yaml:"item-images" json:"item-images,omitempty" help:"where item images live: in-row (in the item row), file (a file the row names, read only by ProductDetail), none"`
	ImageKB    int    `yaml:"image-kb" json:"image-kb,omitempty" help:"size of each item's image in KiB (the seed's: 100)"`
	ImageDir   string `yaml:"image-dir" json:"image-dir,omitempty" help:"directory of the image files under --item-images file (default: one per database under the system's temporary directory)"`
	Indexes    string `yaml:"indexes" json:"indexes,omitempty" help:"spec (primary keys and the address lookup) or tuned (also the seed's four: item(subject, pub_date), orders(customer), order_line(order), order_line(item))"`
	// POV, PGE, ICE and SNE are the external partners' URLs; empty: one
	// in-process each, answering after PartnerDelay, failing
	// PartnerFailRate of their calls.
	POV             string  `yaml:"pov" json:"pov,omitempty" help:"URL of a purchase order verification service started with 'tierbench emulator pov' (default: one in-process)"`
	PGE             string  `yaml:"pge" json:"pge,omitempty" help:"URL of a payment gateway started with 'tierbench emulator pge' (default: one in-process)"`
	ICE             string  `yaml:"ice" json:"ice,omitempty" help:"URL of an inventory control service started with 'tierbench emulator ice' (default: one in-process)"`
	SNE             string  `yaml:"sne" json:"sne,omitempty" help:"URL of a shipping notification service started with 'tierbench emulator sne' (default: one in-process)"`
	PartnerDelay    string  `yaml:"partner-delay" json:"partner-delay,omitempty" help:"response time of the in-process partners: none, fixed:D, uniform:MIN-MAX, negexp:MEAN (the seed's: fixed:500ms)"`
	SNEDelay        string  `yaml:"sne-delay" json:"sne-delay,omitempty" help:"response time of the in-process shipping notification emulator, as --partner-delay (default none: a shipping agent waits for each order's notice, and the seed's 500 ms would cap shipping at 2 orders a second per agent)"`
	PartnerFailRate float64 `yaml:"partner-fail-rate" json:"partner-fail-rate,omitempty" help:"share of calls the in-process partners answer 503, in [0, 1]"`
	SessionLength   string  `yaml:"session-length" json:"session-length,omitempty" help:"requests per business session: negexp:MEAN (truncated to 1..120), uniform:MIN-MAX, fixed:N, or a file of the cumulative distribution (length and cumulative probability per line)"`
	Front           string  `yaml:"front" json:"front,omitempty" help:"how the businesses call the web service: soap (SOAP 1.1, the specification's) or json"`
	ShippingAgents  int     `yaml:"shipping-agents" json:"shipping-agents,omitempty" help:"agents shipping orders off the shipping queue at once, each a database session"`
}

// DefaultOptions are the specification's and the seed's.
var DefaultOptions = Options{Mix: MixSpec, ItemImages: ImagesInRow, ImageKB: 100, Indexes: "spec", PartnerDelay: "fixed:500ms", SNEDelay: "none",
	SessionLength: "negexp:20", Front: "soap", ShippingAgents: 2}

func (Options) Resolve(*config.Run) {}

func (o Options) Validate(c config.Run) []error {
	var errs []error
	if err := workload.CheckScale("scale", c.Scale, maxScale, func(scale int) workload.Footprint {
		c.Scale = scale
		return o.Footprint(c)
	}); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, messaging.CheckFlags(o.Broker, o.StreamReplicas)...)
	if !slices.Contains(ImageModes, o.ItemImages) {
		errs = append(errs, fmt.Errorf("--item-images %q: allowed: in-row, file, none", o.ItemImages))
	}
	if o.ImageKB < 0 || o.ImageKB > 16<<10 {
		errs = append(errs, fmt.Errorf("--image-kb %d: want 0..16384", o.ImageKB))
	}
	if !slices.Contains(IndexModes, o.Indexes) {
		errs = append(errs, fmt.Errorf("--indexes %q: allowed: spec, tuned", o.Indexes))
	}
	if _, err := partner.ParseDelay(o.PartnerDelay); err != nil {
		errs = append(errs, fmt.Errorf("--partner-delay: %w", err))
	}
	if _, err := partner.ParseDelay(o.SNEDelay); err != nil {
		errs = append(errs, fmt.Errorf("--sne-delay: %w", err))
	}
	if !(o.PartnerFailRate >= 0 && o.PartnerFailRate <= 1) {
		errs = append(errs, fmt.Errorf("--partner-fail-rate %g: want a share in [0, 1]", o.PartnerFailRate))
	}
	if _, err := ParseSessionLength(o.SessionLength); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseMix(o.Mix); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(Fronts, o.Front) {
		errs = append(errs, fmt.Errorf("--front %q: allowed: soap, json", o.Front))
	}
	if o.ShippingAgents < 1 {
		errs = append(errs, fmt.Errorf("--shipping-agents %d: must be at least 1", o.ShippingAgents))
	}
	for _, u := range []struct{ flag, v string }{{"pov", o.POV}, {"pge", o.PGE}, {"ice", o.ICE}, {"sne", o.SNE}} {
		if u.v != "" {
			if _, err := partner.NewClient(partner.Kind(u.flag), u.v, nil); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", u.flag, err))
			}
		}
	}
	return errs
}

func (o Options) Setup(config.Run) string {
	return fmt.Sprintf("front %s, images %s (%d KiB), indexes %s, partners %s, sessions %s, mix %s", o.Front, o.ItemImages, o.ImageKB, o.Indexes,
		o.partnerSetup(), o.SessionLength, o.Mix)
}

func (o Options) partnerSetup() string {
	if o.POV != "" || o.PGE != "" || o.ICE != "" || o.SNE != "" {
		return "remote"
	}
	s := "in-process, " + o.PartnerDelay
	if o.PartnerFailRate > 0 {
		s += fmt.Sprintf(", failing %g", o.PartnerFailRate)
	}
	return s
}

// Footprint: the rows, and each item's image, in its row or in a file.
func (o Options) Footprint(c config.Run) workload.Footprint {
	per := float64(bytesPerScale)
	if o.ItemImages != ImagesNone {
		per += float64(populationAt(1).Items) * float64(o.ImageKB) * 1024
	}
	return workload.Footprint{DBBytes: workload.PerUnit(max(c.Scale, 1), per)}
}

// MixOf is --mix's weights.
func (o Options) MixOf() (*workload.Mix, error) {
	m, err := ParseMix(o.Mix)
	return &m, err
}

// AgentThreads: the shipping agents and as many inventory agents.
func (o Options) AgentThreads() int { return 2 * max(o.ShippingAgents, 1) }

// loadOptions are the load's settings; db names the database, whose
// image directory is its own by default.
func (o Options) loadOptions(db string) LoadOptions {
	l := LoadOptions{Images: o.ItemImages, ImageBytes: o.ImageKB << 10, ImageDir: o.ImageDir, Indexes: o.Indexes}
	if l.Images == ImagesFile && l.ImageDir == "" {
		l.ImageDir = DefaultImageDir(db)
	}
	return l
}

// optionsOf are a run's options: the defaults when the caller gave none.
func optionsOf(o workload.Options) Options { return workload.OptionsAs(o, DefaultOptions) }

// TierArgs are the site's own flags of each app server a run starts
// (--app-servers N): its queues' broker and its partners; the mix and
// the sessions are the businesses', which stay in the run's process.
func (o Options) TierArgs(config.Run) []string {
	args := []string{"--partner-delay", o.PartnerDelay, "--partner-fail-rate", fmt.Sprint(o.PartnerFailRate),
		"--shipping-agents", fmt.Sprint(o.ShippingAgents)}
	for _, kv := range [][2]string{{"broker", o.Broker}, {"pov", o.POV}, {"pge", o.PGE}, {"ice", o.ICE}} {
		if kv[1] != "" {
			args = append(args, "--"+kv[0], kv[1])
		}
	}
	if o.StreamReplicas > 0 {
		args = append(args, "--stream-replicas", fmt.Sprint(o.StreamReplicas))
	}
	return args
}

// QueueBroker is --broker: the app servers' shipping and inventory
// agents share its queues.
func (o Options) QueueBroker() string { return o.Broker }

// WithQueueBroker are the options with the broker the run started.
func (o Options) WithQueueBroker(url string) workload.Options {
	o.Broker = url
	return o
}

var (
	_ workload.ServerArgs = Options{}
	_ workload.Queued     = Options{}
)
