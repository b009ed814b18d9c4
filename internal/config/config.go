package config

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/inputfile"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
)

// Run configures one run of a workload.
type Run struct {
	Workload string `yaml:"workload" json:"workload"`
	// DB is the database; see store.DSNForms. Written out, its password
	// is masked.
	DB    store.DSN `yaml:"db" json:"db"`
	Scale int       `yaml:"scale" json:"scale"`
	// Clients, ServerThreads and Iterations default to the workload's
	// reference values.
	Clients       int      `yaml:"clients" json:"clients"`
	ServerThreads int      `yaml:"server-threads" json:"server-threads"`
	Iterations    int      `yaml:"iterations" json:"iterations"`
	Duration      Duration `yaml:"duration" json:"duration"`
	RampUp        Duration `yaml:"ramp-up" json:"ramp-up"`
	RampDown      Duration `yaml:"ramp-down" json:"ramp-down"`
	ThinkTime     Duration `yaml:"think-time" json:"think-time"`
	Seed          uint64   `yaml:"seed" json:"seed"`
	Retries       int      `yaml:"retries" json:"retries"`
	// MaxErrorRate is the share of failed operations (errors and commits
	// in doubt) above which a run does not pass.
	MaxErrorRate Percent               `yaml:"max-error-rate" json:"max-error-rate"`
	Persistence  container.Persistence `yaml:"persistence" json:"persistence"`
	Isolation    store.Isolation       `yaml:"isolation" json:"isolation"`
	// The entity container's settings for every type; Entity overrides
	// them per type as NAME.key=value.
	CommitOption container.CommitOption `yaml:"commit-option" json:"commit-option"`
	Cache        container.Size         `yaml:"cache" json:"cache"`
	Pool         container.Size         `yaml:"pool" json:"pool"`
	// Concurrency empty: each entity type's follows its commit option
	// (exclusive under A and D, database under B and C).
	Concurrency     container.Concurrency `yaml:"concurrency" json:"concurrency"`
	RefreshInterval Duration              `yaml:"refresh-interval" json:"refresh-interval"`
	LockTimeout     Duration              `yaml:"lock-timeout" json:"lock-timeout"`
	Entity          []container.Setting   `yaml:"entity" json:"entity"`
	Warmup          bool                  `yaml:"warmup" json:"warmup"`
	NoLoad          bool                  `yaml:"no-load" json:"no-load"`
	Out             string                `yaml:"out" json:"out"`
	Quiet           bool                  `yaml:"quiet" json:"quiet"`
	// Placement is where the run's database server and tierbench run
	// (internal/placement): empty, on the database DB names, nothing
	// pinned; mixed, a private PostgreSQL server sharing tierbench's half
	// of the CPUs (one machine); dual, the server on the other half (two
	// machines of the same size).
	Placement string `yaml:"placement" json:"placement,omitempty"`

	// Thresholds are conditions on the steady state's figures
	// (internal/threshold: p99<50ms, tps>1000); one unmet, the run does
	// not pass. The runner validates them against the workload.
	Thresholds []string `yaml:"threshold" json:"threshold,omitempty"`

	// ECperf's settings (the other workloads ignore them).
	// IR is the injection rate, ECperf's name for the scale: when set it
	// is the scale.
	IR int `yaml:"ir" json:"ir,omitempty"`
	// PODispatch is how ScheduleWorkOrder's purchase orders reach the
	// Supplier Emulator: sync, poller or queue.
	PODispatch string `yaml:"po-dispatch" json:"po-dispatch,omitempty"`
	// Broker is the NATS URL for --po-dispatch queue; empty: an embedded
	// server.
	Broker string `yaml:"broker" json:"broker,omitempty"`
	// Emulator is the Supplier Emulator's URL; empty: one in-process.
	Emulator string `yaml:"emulator" json:"emulator,omitempty"`
	// EmulatorDelay is how long the in-process emulator takes to answer a
	// PO: the partner's network and processing, which sync holds locks
	// across.
	EmulatorDelay Duration `yaml:"emulator-delay" json:"emulator-delay,omitempty"`
	// Receiver is the address the deliveries come back to.
	Receiver string `yaml:"receiver" json:"receiver,omitempty"`
	// CycleScale multiplies the kit's cycle times, station delays and
	// polling intervals (1 = the kit's; 0.1 for short runs).
	CycleScale float64 `yaml:"cycle-scale" json:"cycle-scale,omitempty"`
	// LeadTimeUnit is one unit of a supplier's lead time (default 5 s ×
	// cycle-scale).
	LeadTimeUnit Duration `yaml:"lead-time-unit" json:"lead-time-unit,omitempty"`
	// UnsortedAccess touches entities in the original, unsorted order
	// (the deadlocks of the paper) instead of key order.
	UnsortedAccess bool `yaml:"unsorted-access" json:"unsorted-access,omitempty"`
	// Mix is RUBiS's transition table: bidding, browsing, or the path of
	// a table in the original client's format; TPC-App's method mix: spec
	// or weights, OP=N,… (the workload checks it).
	Mix string `yaml:"mix" json:"mix,omitempty"`
	// ThinkScale multiplies RUBiS's think times (mean 7 s): below 1 for
	// short runs, 0 for none.
	ThinkScale float64 `yaml:"think-scale" json:"think-scale,omitempty"`
	// ItemsPerCategory is how RUBiS's load deals the active items to the
	// categories: original (the counts of the kit's
	// ebay_simple_categories.txt, scaled; empty means it) or even.
	ItemsPerCategory string `yaml:"items-per-category" json:"items-per-category,omitempty"`
	// The RUBiS client's behaviours; the zero values are the original's.
	// SkipImages: the browsers fetch no <IMG SRC> (the original fetches
	// every one of each page). OneBasedIDs: category, region and user ids
	// sent as the database numbers them (the original sends its 0-based
	// draw). PageTries: tries of a page before it fails, 1 s apart (0:
	// the original's 5). NoRampSlowdown: the same think time in the ramps
	// (the original's is ×2 in the up-ramp, ×3 in the down-ramp).
	SkipImages     bool `yaml:"skip-images" json:"skip-images,omitempty"`
	OneBasedIDs    bool `yaml:"one-based-ids" json:"one-based-ids,omitempty"`
	PageTries      int  `yaml:"page-tries" json:"page-tries,omitempty"`
	NoRampSlowdown bool `yaml:"no-ramp-slowdown" json:"no-ramp-slowdown,omitempty"`

	// Style is how the middle tier is built (RUBiS: servlets, session,
	// facade, local, entity; see Styles); empty: by --persistence, direct
	// = servlets, the container = local.
	Style string `yaml:"style" json:"style,omitempty"`
	// Protocol carries the calls between the web and the business tier:
	// http or grpc (internal/remote).
	Protocol string `yaml:"protocol" json:"protocol,omitempty"`
	// Tiers is how many processes a run spans: 1, everything in the run's
	// process; 2, the middle tier in a child process apart from the
	// driver; 3, the web and the business tier each in a child of its
	// own (a style with a remote boundary). 0: 1.
	Tiers int `yaml:"tiers" json:"tiers,omitempty"`
	// persistenceGiven: a flag or the -f file set Persistence, so a style
	// on the container does not replace it (Normalize).
	persistenceGiven bool

	// POSenders is the pool of agents that send POs under poller and
	// queue dispatch (the message-driven beans): at most this many sends
	// are under way at once, each a database session.
	POSenders int `yaml:"po-senders" json:"po-senders,omitempty"`

	// TPC-App. ItemImages is where item images live: in-row (in the item
	// row, the seed's first runs), file (a file the row names, under
	// ImageDir), none. ImageKB is each image's size.
	ItemImages string `yaml:"item-images" json:"item-images,omitempty"`
	ImageKB    int    `yaml:"image-kb" json:"image-kb,omitempty"`
	// ImageDir holds the image files of --item-images file (default: a
	// directory per database under the system's temporary directory).
	ImageDir string `yaml:"image-dir" json:"image-dir,omitempty"`
	// Indexes: spec (primary keys and the address lookup) or tuned (the
	// seed's four indexes besides).
	Indexes string `yaml:"indexes" json:"indexes,omitempty"`
	// POV, PGE and ICE are the external partners' URLs; empty: one
	// in-process each, answering after PartnerDelay, failing
	// PartnerFailRate of their calls.
	POV             string  `yaml:"pov" json:"pov,omitempty"`
	PGE             string  `yaml:"pge" json:"pge,omitempty"`
	ICE             string  `yaml:"ice" json:"ice,omitempty"`
	PartnerDelay    string  `yaml:"partner-delay" json:"partner-delay,omitempty"`
	PartnerFailRate float64 `yaml:"partner-fail-rate" json:"partner-fail-rate,omitempty"`
	// SessionLength is the distribution of an emulated business's session
	// length in requests (TPC-App: 1..120).
	SessionLength string `yaml:"session-length" json:"session-length,omitempty"`
	// Front is how TPC-App's businesses speak to its web service: soap
	// (SOAP 1.1, the specification's) or json.
	Front string `yaml:"front" json:"front,omitempty"`
	// ShippingAgents ship orders off the shipping queue at once, each a
	// database session.
	ShippingAgents int `yaml:"shipping-agents" json:"shipping-agents,omitempty"`
}

// Styles are the values of --style: the implementation styles of Cecchet
// et al. (OOPSLA 2002).
var Styles = []string{"servlets", "session", "facade", "local", "entity"}

// RemoteStyles are the styles with a remote boundary between the web and
// the business tier.
var RemoteStyles = []string{"session", "facade", "entity"}

// PODispatchModes are the values of --po-dispatch.
var PODispatchModes = []string{"sync", "poller", "queue"}

// Normalize applies the settings that stand for others: --ir is the scale.
func (r *Run) Normalize() {
	if r.IR > 0 {
		r.Scale = r.IR
	}
	// A style on the container without a persistence of the user's runs
	// on CMP, the seed's entity beans.
	if r.Style != "" && !directStyle(r.Style) && !r.persistenceGiven && !r.Persistence.Container() {
		r.Persistence = container.CMP
	}
}

// directStyle: the style's business logic is SQL written by hand, not
// the entity container.
func directStyle(style string) bool { return style == "servlets" || style == "session" }

// Defaults a workload brings: its reference's run settings.
type Defaults struct {
	Clients       int
	ServerThreads int
	Iterations    int
	// Duration and RampUp, for workloads measured over time (ECperf).
	Duration, RampUp, RampDown time.Duration
	// Persistence, when set, replaces the container's CMP as the default
	// (RUBiS: the PHP version's direct SQL, the seed's baseline).
	Persistence container.Persistence
	// Mix, when set, replaces RUBiS's bidding as --mix's default (TPC-App:
	// spec, the reference's mix; Stock-Online: table-2).
	Mix string
}

// New is the default configuration of a workload.
func New(workload string, d Defaults) Run {
	return Run{
		Workload:       workload,
		DB:             store.DSN{Dialect: store.SQLite, Temp: true},
		Scale:          1,
		Clients:        d.Clients,
		ServerThreads:  d.ServerThreads,
		Iterations:     d.Iterations,
		Duration:       Duration(d.Duration),
		RampUp:         Duration(d.RampUp),
		RampDown:       Duration(d.RampDown),
		PODispatch:     "sync",
		Mix:            cmp.Or(d.Mix, "bidding"),
		Protocol:       "http",
		Tiers:          1,
		ThinkScale:     1,
		POSenders:      16,
		ItemImages:     "in-row",
		ImageKB:        100,
		Indexes:        "spec",
		PartnerDelay:   "fixed:500ms",
		SessionLength:  "negexp:20",
		ShippingAgents: 2,
		Front:          "soap",
		CycleScale:     1,
		Receiver:       "127.0.0.1:0",
		Seed:           1,
		Retries:        5,
		MaxErrorRate:   1,
		Persistence:    cmp.Or(d.Persistence, container.CMP),
		Isolation:      store.ReadCommitted,
		CommitOption:   container.OptionC,
		Pool:           container.Size{Percent: 20, Relative: true},
		// Concurrency is left empty: each entity type's follows its commit
		// option (container.Resolve).
		RefreshInterval: Duration(10 * time.Second),
		LockTimeout:     Duration(time.Second),
	}
}

// MaxFileBytes bounds a configuration file: a few kilobytes say every key.
const MaxFileBytes = 1 << 20

// LoadFile overlays the keys a YAML file sets. Each value is parsed as
// its flag's is, and a refusal names the key and its line; unknown keys
// are refused.
func (r *Run) LoadFile(path string) error {
	data, err := inputfile.Read(context.Background(), path, "a configuration file", MaxFileBytes)
	if err != nil {
		return fmt.Errorf("-f %s: %w", path, err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("-f %s: %s", path, oneLine.Replace(fmt.Sprintf(format, args...)))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	// A file of comments alone sets nothing (the decoder says EOF).
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil
	} else if err != nil {
		return fail("%s", yamlProblem(err))
	}
	next := *r
	if err := next.setKeys(doc.Content[0], fail); err != nil {
		return err
	}
	// A document after the first would be ignored, its keys unchecked.
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return fail("more than one YAML document (---); a run configuration is one")
	}
	*r = next
	return nil
}

// setKeys sets the keys of a YAML mapping.
func (r *Run) setKeys(root *yaml.Node, fail func(string, ...any) error) error {
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fail("line %d: want keys and their values (clients: 20), one per line", root.Line)
	}
	fields := fieldsByKey(reflect.ValueOf(r).Elem())
	// The keys first: a misspelt one is the likelier mistake, and would
	// explain a refused value.
	seen := make(map[string]int)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if _, ok := fields[k.Value]; k.Kind != yaml.ScalarNode || !ok {
			return fail("line %d: unknown key %s (keys are the flag names: %s)", k.Line, k.Value, strings.Join(Keys(), ", "))
		}
		if line, dup := seen[k.Value]; dup {
			return fail("line %d: %s given again (first on line %d)", k.Line, k.Value, line)
		}
		seen[k.Value] = k.Line
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		// A tag (!x, !!binary) would make the value something else than
		// what is written: yaml.v3 decodes an unknown one as empty.
		n := tagged(k)
		if n == nil {
			n = tagged(v)
		}
		if n != nil {
			return fail("line %d: %s: YAML tag %s refused; write the value alone (%s: VALUE)", n.Line, k.Value, n.Tag, k.Value)
		}
		field := fields[k.Value]
		if k.Value == "persistence" {
			r.persistenceGiven = true
		}
		if n := v; (n.Kind == yaml.ScalarNode && n.Tag == "!!null") || (n.Kind == yaml.AliasNode && n.Alias != nil && n.Alias.Tag == "!!null") {
			return fail("line %d: %s has no value (leave the key out to keep the default)", k.Line, k.Value)
		}
		// Decoded into a fresh value: a list replaces the default's.
		fresh := reflect.New(field.Type())
		if err := v.Decode(fresh.Interface()); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) {
				return fail("line %d: --%s %q: want %s", v.Line, k.Value, v.Value, kindName(field.Type()))
			}
			return fail("line %d: %s", v.Line, Keyed(k.Value, v.Value, errors.New(yamlProblem(err))))
		}
		field.Set(fresh.Elem())
	}
	return nil
}

// tagged is the first node of n's tree written with an explicit tag.
func tagged(n *yaml.Node) *yaml.Node {
	if n.Style&yaml.TaggedStyle != 0 {
		return n
	}
	for _, c := range n.Content {
		if t := tagged(c); t != nil {
			return t
		}
	}
	return nil
}

// fieldsByKey maps the configuration keys to r's fields.
func fieldsByKey(r reflect.Value) map[string]reflect.Value {
	t := r.Type()
	out := make(map[string]reflect.Value, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		out[t.Field(i).Tag.Get("yaml")] = r.Field(i)
	}
	return out
}

// kindName says what a field's values look like.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int:
		return "a whole number"
	case reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a list, as [p99<50ms, tps>1000]"
		}
		return "a list, as [Item.concurrency=readonly, Account.cache=50%]"
	}
	return "a single value"
}

// Keyed puts the key (flag) and value in front of a refusal of the
// value, unless the refusal names them already ("--db …", "\"x\" is not …").
func Keyed(key, value string, err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "--"+key):
		return msg
	case strings.HasPrefix(msg, `"`):
		return "--" + key + " " + msg
	}
	return fmt.Sprintf("--%s %q: %s", key, value, msg)
}

// oneLine escapes the line breaks of keys and values that yaml.v3's
// messages quote as written.
var oneLine = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// yamlProblem is a YAML error without the package's prefix.
func yamlProblem(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// Keys lists the configuration keys.
func Keys() []string {
	t := reflect.TypeOf(Run{})
	keys := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		keys = append(keys, t.Field(i).Tag.Get("yaml"))
	}
	return keys
}

// Overlay copies from src the fields named by keys (flag names, which are
// the YAML keys): the flags a user set override the file and the defaults.
func (r *Run) Overlay(src *Run, keys []string) {
	dst, from := reflect.ValueOf(r).Elem(), reflect.ValueOf(src).Elem()
	t := dst.Type()
	for _, key := range keys {
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).Tag.Get("yaml") == key {
				dst.Field(i).Set(from.Field(i))
			}
		}
		if key == "persistence" {
			r.persistenceGiven = true
		}
	}
}

// Validate returns every problem, each naming the field, the value and
// what is allowed. persistence lists what the workload implements.
func (r *Run) Validate(persistence []container.Persistence) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if r.Scale < 1 {
		bad("--scale %d: must be at least 1 (1 is the paper's population)", r.Scale)
	}
	if r.Clients < 1 {
		bad("--clients %d: must be at least 1", r.Clients)
	}
	if r.ServerThreads < 1 {
		bad("--server-threads %d: must be at least 1", r.ServerThreads)
	}
	d := time.Duration(r.Duration)
	switch {
	case d < 0:
		bad("--duration %v: must be positive", d)
	case d == 0 && r.Iterations < 1:
		bad("--iterations %d: must be at least 1 (or give --duration)", r.Iterations)
	}
	for _, d := range []struct {
		flag  string
		value Duration
	}{{"ramp-up", r.RampUp}, {"ramp-down", r.RampDown}, {"think-time", r.ThinkTime}, {"lead-time-unit", r.LeadTimeUnit}, {"emulator-delay", r.EmulatorDelay}} {
		if d.value < 0 {
			bad("--%s %v: must not be negative", d.flag, d.value)
		}
	}
	if d == 0 && r.RampDown > 0 {
		bad("--ramp-down %v needs --duration: with --iterations the end of the run is not known in advance", time.Duration(r.RampDown))
	}
	if d > 0 && r.RampUp+r.RampDown >= r.Duration {
		bad("--ramp-up %v + --ramp-down %v leave no steady state in --duration %v", time.Duration(r.RampUp), time.Duration(r.RampDown), d)
	}
	if r.Retries < 0 {
		bad("--retries %d: must be 0 or more", r.Retries)
	}
	if r.MaxErrorRate < 0 || r.MaxErrorRate > 100 {
		bad("--max-error-rate %v: must be from 0%% to 100%%", r.MaxErrorRate)
	}
	if !slices.Contains(persistence, r.Persistence) {
		bad("--persistence %s: not available for this workload yet; available: %s", r.Persistence, container.JoinPersistence(persistence))
	}
	if r.RefreshInterval <= 0 {
		bad("--refresh-interval %v: must be positive", r.RefreshInterval)
	}
	if r.LockTimeout <= 0 {
		bad("--lock-timeout %v: must be positive", r.LockTimeout)
	}
	if err := r.validatePlacement(); err != nil {
		errs = append(errs, err)
	}
	if r.Warmup && !r.Persistence.Container() {
		bad("--warmup warms the entity container's caches, and --persistence direct has none: use cmp, bmp or bmp-checked, or drop --warmup")
	}
	if r.IR < 0 {
		bad("--ir %d: must be at least 1 (the injection rate)", r.IR)
	}
	if !slices.Contains(PODispatchModes, r.PODispatch) {
		bad("--po-dispatch %q: allowed: %s", r.PODispatch, strings.Join(PODispatchModes, ", "))
	}
	if r.Broker != "" && !strings.HasPrefix(r.Broker, "nats://") && !strings.HasPrefix(r.Broker, "tls://") {
		bad("--broker %q: want nats://HOST:PORT (or empty for the embedded server)", r.Broker)
	}
	if r.Emulator != "" && !strings.HasPrefix(r.Emulator, "http://") && !strings.HasPrefix(r.Emulator, "https://") {
		bad("--emulator %q: want http://HOST:PORT (or empty for the in-process emulator)", r.Emulator)
	}
	if r.POSenders < 1 {
		bad("--po-senders %d: must be at least 1", r.POSenders)
	}
	if err := r.validateReceiver(); err != nil {
		errs = append(errs, err)
	}
	if r.ItemsPerCategory != "" && r.ItemsPerCategory != "original" && r.ItemsPerCategory != "even" {
		bad("--items-per-category %q: want original (the kit's ebay_simple_categories.txt counts, scaled) or even", r.ItemsPerCategory)
	}
	if r.PageTries < 0 || r.PageTries > 100 {
		bad("--page-tries %d: must be from 1 to 100 (0: the original's 5)", r.PageTries)
	}
	if !(r.ThinkScale >= 0 && r.ThinkScale <= 100) {
		bad("--think-scale %v: must be from 0 to 100 (1 = the original's 7 s mean, 0 = no think time)", r.ThinkScale)
	}
	if err := r.validateStyle(); err != nil {
		errs = append(errs, err)
	}
	if _, err := remote.ParseProtocol(r.Protocol); err != nil {
		bad("--%v", err)
	}
	if err := r.validateTiers(); err != nil {
		errs = append(errs, err)
	}
	if !(r.CycleScale > 0 && r.CycleScale <= 100) {
		bad("--cycle-scale %v: must be in (0, 100] (1 = the kit's cycle times)", r.CycleScale)
	}
	return errs
}

// workloadKeys are the configuration keys only some workloads read; given
// to another workload they would be ignored, so they are refused.
var workloadKeys = map[string][]string{
	"ir": {"ecperf"}, "po-dispatch": {"ecperf"}, "broker": {"ecperf", "tpcapp"}, "emulator": {"ecperf"},
	"emulator-delay": {"ecperf"}, "receiver": {"ecperf"}, "cycle-scale": {"ecperf"},
	"lead-time-unit": {"ecperf"}, "unsorted-access": {"ecperf"}, "po-senders": {"ecperf"},
	"warmup": {"stockonline"}, "mix": {"rubis", "stockonline", "tpcapp"}, "think-scale": {"rubis"}, "items-per-category": {"rubis"},
	"skip-images": {"rubis"}, "one-based-ids": {"rubis"}, "page-tries": {"rubis"}, "no-ramp-slowdown": {"rubis"},
	"style": {"rubis"}, "protocol": {"rubis", "stockonline"}, "tiers": {"rubis", "stockonline"},
	"item-images": {"tpcapp"}, "image-kb": {"tpcapp"}, "image-dir": {"tpcapp"}, "indexes": {"tpcapp"},
	"pov": {"tpcapp"}, "pge": {"tpcapp"}, "ice": {"tpcapp"}, "partner-delay": {"tpcapp"},
	"partner-fail-rate": {"tpcapp"}, "session-length": {"tpcapp"}, "shipping-agents": {"tpcapp"}, "front": {"tpcapp"},
}

// CheckKeys refuses keys (flags given, or keys of the -f file) that the
// workload would ignore, and keys that contradict each other.
func CheckKeys(workload string, keys []string) error {
	for _, k := range keys {
		if only, ok := workloadKeys[k]; ok && !slices.Contains(only, workload) {
			return fmt.Errorf("--%s applies to %s only, not %s", k, strings.Join(only, ", "), workload)
		}
	}
	if slices.Contains(keys, "placement") && slices.Contains(keys, "db") {
		return errPlacementDB
	}
	if slices.Contains(keys, "duration") && slices.Contains(keys, "iterations") {
		return errors.New("--duration and --iterations both given: a run is bounded by one of them")
	}
	return nil
}

// StyleOf is the run's style: --style, or the one --persistence implies.
func (r *Run) StyleOf() string {
	switch {
	case r.Style != "":
		return r.Style
	case r.Persistence.Container():
		return "local"
	}
	return "servlets"
}

// validateStyle: a style names where the business logic runs and over
// what, so it fixes the persistence's kind: SQL written by hand (servlets,
// session) or the entity container (facade, local, entity).
func (r *Run) validateStyle() error {
	if r.Style == "" {
		return nil
	}
	if !slices.Contains(Styles, r.Style) {
		return fmt.Errorf("--style %q: allowed: %s", r.Style, strings.Join(Styles, ", "))
	}
	direct := directStyle(r.Style)
	if direct == r.Persistence.Container() {
		want := "direct"
		if !direct {
			want = "cmp or bmp"
		}
		return fmt.Errorf("--style %s runs on --persistence %s, not %s", r.Style, want, r.Persistence)
	}
	return nil
}

// validatePlacement: a placement starts an empty private PostgreSQL
// server for the run, so it takes no --db and loads it; dual needs two
// CPUs to put the server and tierbench apart.
func (r *Run) validatePlacement() error {
	mode := placement.Mode(r.Placement)
	switch {
	case mode == placement.None:
		return nil
	case !slices.Contains(placement.Modes, mode):
		return fmt.Errorf("--placement %q: allowed: %s (or leave it unset: the run uses the database --db names)", r.Placement, placement.ModeNames())
	case r.DB != (store.DSN{}) && (r.DB.Dialect != store.SQLite || !r.DB.Temp):
		// None (a result's config: the server was the run's own) or the
		// default, a fresh SQLite file, which the server replaces.
		return errPlacementDB
	case r.NoLoad:
		return errors.New("--no-load: --placement starts an empty PostgreSQL server for the run, which the run loads; drop --no-load")
	}
	if cpus, err := placement.Allowed(); err == nil {
		if _, err := placement.Split(mode, cpus); err != nil {
			return err
		}
	}
	return nil
}

// errPlacementDB refuses a --db beside --placement.
var errPlacementDB = errors.New("--placement starts its own PostgreSQL server for the run; leave --db unset")

// validateTiers: a run spans at most the tiers its workload has, and a
// third process needs a business tier apart from the web tier.
func (r *Run) validateTiers() error {
	switch {
	case r.Tiers < 1 || r.Tiers > 3:
		return fmt.Errorf("--tiers %d: allowed: 1 (everything in this process), 2 (the middle tier in a process of its own), 3 (web and business tier each in its own; RUBiS with --style session, facade or entity)", r.Tiers)
	case r.Tiers == 3 && r.Workload != "rubis":
		return fmt.Errorf("--tiers 3: %s has no web tier; its clients call the business tier, so --tiers 2 puts that in a process of its own", r.Workload)
	case r.Tiers == 3 && !slices.Contains(RemoteStyles, r.StyleOf()):
		return fmt.Errorf("--tiers 3 puts the web and the business tier in processes of their own, but --style %s has no business tier apart from the web tier; use --style %s, or --tiers 2", r.StyleOf(), strings.Join(RemoteStyles, ", "))
	}
	return nil
}

// validateReceiver checks that the emulator can reach the receiver: the
// receiver's address is given to the emulator in every PO, so it must name
// one interface of this host (not a wildcard), and one the emulator's host
// can reach (not loopback, when the emulator is elsewhere).
func (r *Run) validateReceiver() error {
	if r.Receiver == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(r.Receiver)
	if err != nil || port == "" {
		return fmt.Errorf("--receiver %q: want HOST:PORT (PORT 0: any free port)", r.Receiver)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("--receiver %q: the emulator is sent this address to deliver to, so it must name this host as the emulator sees it (e.g. 10.0.0.5:8100 or driver-host:8100), not every interface", r.Receiver)
	}
	if r.Emulator == "" || !loopback(host) {
		return nil
	}
	u, err := url.Parse(r.Emulator)
	if err == nil && !loopback(u.Hostname()) {
		return fmt.Errorf("--receiver %q is reachable only from this host, but --emulator %s is on another: give --receiver an address of this host that %s can reach (e.g. driver-host:8100)", r.Receiver, r.Emulator, u.Hostname())
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

// Container is the run's container settings before any type's own.
func (r *Run) Container() container.Settings {
	return container.Settings{
		CommitOption: r.CommitOption, Cache: r.Cache, Pool: r.Pool, Persistence: r.Persistence,
		Concurrency: r.Concurrency, Refresh: time.Duration(r.RefreshInterval), LockTimeout: time.Duration(r.LockTimeout),
	}
}

// Err joins Validate's problems into one error, nil when there are none.
func Err(errs []error) error { return errors.Join(errs...) }

// Duration is a time.Duration written as "30s" in YAML and JSON.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (examples: 30s, 2m, 1h30m)", b)
	}
	*d = Duration(v)
	return nil
}

// Percent is a share written as "1%" (or "1") in flags, YAML and JSON.
type Percent float64

// Percent is p as a number of percent.
func (p Percent) Percent() float64 { return float64(p) }

// String is "1%"; zero is "0", which flag help reads as no default.
func (p Percent) String() string {
	if p == 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(p), 'g', -1, 64) + "%"
}

func (p Percent) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

func (p *Percent) UnmarshalText(b []byte) error { return p.Set(string(b)) }

// Set parses "1%", "0.5%" or "1" (percent), for pflag.
func (p *Percent) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || math.IsNaN(v) {
		return fmt.Errorf("%q is not a percentage (examples: 1%%, 0.5%%, 5)", s)
	}
	*p = Percent(v)
	return nil
}

// Type names the flag's value in help.
func (p *Percent) Type() string { return "percent" }

// UsageError marks a problem with what the user asked for: the CLI exits
// with code 2 and prints it as is.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage wraps err as a UsageError.
func Usage(err error) error { return &UsageError{Err: err} }
