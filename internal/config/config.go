package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
)

// Run configures one run of a workload.
type Run struct {
	Workload string `yaml:"workload" json:"workload"`
	// DB is the DSN; see store.DSNForms.
	DB    string `yaml:"db" json:"db"`
	Scale int    `yaml:"scale" json:"scale"`
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
	MaxErrorRate Percent `yaml:"max-error-rate" json:"max-error-rate"`
	Persistence  string  `yaml:"persistence" json:"persistence"`
	Isolation    string  `yaml:"isolation" json:"isolation"`
	// The entity container's settings for every type; Entity overrides
	// them per type as NAME.key=value.
	CommitOption    string   `yaml:"commit-option" json:"commit-option"`
	Cache           string   `yaml:"cache" json:"cache"`
	Pool            string   `yaml:"pool" json:"pool"`
	Concurrency     string   `yaml:"concurrency" json:"concurrency"`
	RefreshInterval Duration `yaml:"refresh-interval" json:"refresh-interval"`
	LockTimeout     Duration `yaml:"lock-timeout" json:"lock-timeout"`
	Entity          []string `yaml:"entity" json:"entity"`
	Warmup          bool     `yaml:"warmup" json:"warmup"`
	NoLoad          bool     `yaml:"no-load" json:"no-load"`
	Out             string   `yaml:"out" json:"out"`
	Quiet           bool     `yaml:"quiet" json:"quiet"`

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
	// POSenders is the pool of agents that send POs under poller and
	// queue dispatch (the message-driven beans): at most this many sends
	// are under way at once, each a database session.
	POSenders int `yaml:"po-senders" json:"po-senders,omitempty"`
}

// PODispatchModes are the values of --po-dispatch.
var PODispatchModes = []string{"sync", "poller", "queue"}

// Normalize applies the settings that stand for others: --ir is the scale.
func (r *Run) Normalize() {
	if r.IR > 0 {
		r.Scale = r.IR
	}
}

// Defaults a workload brings: its reference's run settings.
type Defaults struct {
	Clients       int
	ServerThreads int
	Iterations    int
	// Duration and RampUp, for workloads measured over time (ECperf).
	Duration, RampUp, RampDown time.Duration
}

// Persistence strategies tierbench knows (not all are built yet; the
// workload says which it implements).
var PersistenceStrategies = []string{"cmp", "bmp", "bmp-checked", "direct"}

// New is the default configuration of a workload.
func New(workload string, d Defaults) Run {
	return Run{
		Workload:        workload,
		DB:              "sqlite",
		Scale:           1,
		Clients:         d.Clients,
		ServerThreads:   d.ServerThreads,
		Iterations:      d.Iterations,
		Duration:        Duration(d.Duration),
		RampUp:          Duration(d.RampUp),
		RampDown:        Duration(d.RampDown),
		PODispatch:      "sync",
		POSenders:       16,
		CycleScale:      1,
		Receiver:        "127.0.0.1:0",
		Seed:            1,
		Retries:         5,
		MaxErrorRate:    1,
		Persistence:     "cmp",
		Isolation:       string(store.ReadCommitted),
		CommitOption:    "C",
		Cache:           "0",
		Pool:            "20%",
		Concurrency:     "database",
		RefreshInterval: Duration(10 * time.Second),
		LockTimeout:     Duration(time.Second),
	}
}

// LoadFile overlays the keys a YAML file sets; unknown keys are errors.
func (r *Run) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("-f %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// A file of comments alone sets nothing (the decoder says EOF).
	if err := dec.Decode(r); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("-f %s: %s", path, yamlProblem(err))
	}
	// A document after the first would be ignored, its keys unchecked.
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return fmt.Errorf("-f %s: more than one YAML document (---); a run configuration is one", path)
	}
	return nil
}

// unknownField matches yaml.v3's "field x not found in type config.Run".
var unknownField = regexp.MustCompile(`field (.+) not found in type \S+`)

// oneLine escapes the line breaks of keys and values that yaml.v3's
// messages quote as written.
var oneLine = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// yamlProblem puts a YAML error on one line, naming an unknown key as such
// and listing the keys there are.
func yamlProblem(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return oneLine.Replace(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	msgs := make([]string, len(te.Errors))
	unknown := false
	for i, m := range te.Errors {
		msgs[i] = unknownField.ReplaceAllStringFunc(oneLine.Replace(m), func(s string) string {
			unknown = true
			return "unknown key " + unknownField.FindStringSubmatch(s)[1]
		})
	}
	out := strings.Join(msgs, "; ")
	if unknown {
		out += " (keys are the flag names: " + strings.Join(Keys(), ", ") + ")"
	}
	return out
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
	}
}

// Validate returns every problem, each naming the field, the value and
// what is allowed. persistence lists what the workload implements.
func (r *Run) Validate(persistence []string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if _, err := store.ParseDSN(r.DB); err != nil {
		errs = append(errs, err)
	}
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
	if _, err := store.ParseIsolation(r.Isolation); err != nil {
		bad("--isolation %v", err)
	}
	switch {
	case slices.Contains(persistence, r.Persistence):
	case slices.Contains(PersistenceStrategies, r.Persistence):
		bad("--persistence %s: not available for this workload yet; available: %s", r.Persistence, strings.Join(persistence, ", "))
	default:
		bad("--persistence %q: allowed: %s", r.Persistence, strings.Join(PersistenceStrategies, ", "))
	}
	if _, err := container.ParseCommitOption(r.CommitOption); err != nil {
		bad("--commit-option %v", err)
	}
	if _, err := container.ParseConcurrency(r.Concurrency); err != nil {
		bad("--concurrency %v", err)
	}
	if _, err := container.ParseSize(r.Cache); err != nil {
		bad("--cache %v", err)
	}
	if _, err := container.ParseSize(r.Pool); err != nil {
		bad("--pool %v", err)
	}
	if r.RefreshInterval <= 0 {
		bad("--refresh-interval %v: must be positive", r.RefreshInterval)
	}
	if r.LockTimeout <= 0 {
		bad("--lock-timeout %v: must be positive", r.LockTimeout)
	}
	if r.Warmup && r.Persistence == "direct" {
		bad("--warmup warms the entity container's caches, and --persistence direct has none: use cmp, bmp or bmp-checked, or drop --warmup")
	}
	for _, e := range r.Entity {
		if _, _, _, err := ParseEntity(e); err != nil {
			errs = append(errs, err)
		}
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
	if !(r.CycleScale > 0 && r.CycleScale <= 100) {
		bad("--cycle-scale %v: must be in (0, 100] (1 = the kit's cycle times)", r.CycleScale)
	}
	return errs
}

// workloadKeys are the configuration keys only some workloads read; given
// to another workload they would be ignored, so they are refused.
var workloadKeys = map[string][]string{
	"ir": {"ecperf"}, "po-dispatch": {"ecperf"}, "broker": {"ecperf"}, "emulator": {"ecperf"},
	"emulator-delay": {"ecperf"}, "receiver": {"ecperf"}, "cycle-scale": {"ecperf"},
	"lead-time-unit": {"ecperf"}, "unsorted-access": {"ecperf"}, "po-senders": {"ecperf"},
	"warmup": {"stockonline"},
}

// CheckKeys refuses keys (flags given, or keys of the -f file) that the
// workload would ignore, and keys that contradict each other.
func CheckKeys(workload string, keys []string) error {
	for _, k := range keys {
		if only, ok := workloadKeys[k]; ok && !slices.Contains(only, workload) {
			return fmt.Errorf("--%s applies to %s only, not %s", k, strings.Join(only, ", "), workload)
		}
	}
	if slices.Contains(keys, "duration") && slices.Contains(keys, "iterations") {
		return errors.New("--duration and --iterations both given: a run is bounded by one of them")
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

// ParseEntity splits an --entity NAME.key=value.
func ParseEntity(s string) (name, key, value string, err error) {
	lhs, value, ok := strings.Cut(s, "=")
	name, key, dot := strings.Cut(lhs, ".")
	if !ok || !dot || name == "" || key == "" || value == "" {
		return "", "", "", fmt.Errorf("--entity %q: write NAME.key=value, e.g. Item.concurrency=readonly; keys: %s", s, container.SettingKeys)
	}
	return name, key, value, nil
}

// Container is the run's container settings before any type's overrides.
func (r *Run) Container() container.Raw {
	return container.Raw{
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
