package config

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/hosts"
	"github.com/tierbench/tierbench/internal/inputfile"
	"github.com/tierbench/tierbench/internal/placement"
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
	// LockGranularity is what every transaction locks: the engine's own
	// locks (empty or engine), or every table of the database (table:
	// MariaDB/MySQL's LOCK TABLES, decision 0040).
	LockGranularity store.LockGranularity `yaml:"lock-granularity" json:"lock-granularity,omitempty"`
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
	NoLoad          bool                  `yaml:"no-load" json:"no-load"`
	Out             string                `yaml:"out" json:"out"`
	Quiet           bool                  `yaml:"quiet" json:"quiet"`
	// Placement is where the run's database server and tierbench run
	// (internal/placement): empty, on the database DB names, nothing
	// pinned; mixed, a private PostgreSQL server sharing tierbench's half
	// of the CPUs (one machine); dual, the server on the other half (two
	// machines of the same size); hosts, the server, the tiers and the
	// driver each in a network namespace of its own (internal/hosts).
	Placement string `yaml:"placement" json:"placement,omitempty"`
	// Link is what joins the hosts of --placement hosts: RATE[,DELAY]
	// (hosts.ParseLink); empty, the veths as they are.
	Link string `yaml:"link" json:"link,omitempty"`
	// Partition cuts the business tier from its caller (the web tier, or
	// the driver) mid-run under --placement hosts: "AT,FOR", from AT
	// after the measured run begins, for FOR. For the fault tests; not in
	// --help.
	Partition string `yaml:"partition" json:"partition,omitempty"`
	// PartitionDBNode cuts one node of a Galera --db from the others
	// mid-run: "N,AT,FOR", node N (from 0, in --db's order) from AT after
	// the measured run begins, for FOR (decision 0036). For the fault
	// tests; not in --help.
	PartitionDBNode string `yaml:"partition-db-node" json:"partition-db-node,omitempty"`
	// PGSettings are server parameters NAME=VALUE the private server of
	// --placement starts with (-c NAME=VALUE): the run's own server is the
	// run's to configure, the shared one is not.
	PGSettings []string `yaml:"pg-setting" json:"pg-setting,omitempty"`

	// AppServers is how many middle-tier processes, each with its own
	// container, serve the run over its one database; 0 is one, in the
	// run's process (or its --tiers).
	AppServers int `yaml:"app-servers" json:"app-servers,omitempty"`
	// AppServer is which of them this process is, from 0 (`serve`, as a
	// run over several starts them): the container draws its own keys.
	// A run's own process is none of them: never in a result.
	AppServer int `yaml:"app-server" json:"-"`
	// Balancer, when set (haproxy), stands in front of the app servers.
	Balancer string `yaml:"balancer" json:"balancer,omitempty"`
	// Coherence is every entity type's coherence mode (Entity overrides
	// it per type); empty is none.
	Coherence container.Coherence `yaml:"coherence" json:"coherence,omitempty"`
	// CacheURL is the shared cache of --coherence shared.
	CacheURL string `yaml:"cache-url" json:"cache-url,omitempty"`
	// CoherenceBroker is the NATS server the app servers' invalidations
	// cross (--coherence invalidate, invalidate-async); empty: a run over
	// several app servers starts one of its own and gives it to them.
	CoherenceBroker string `yaml:"coherence-broker" json:"coherence-broker,omitempty"`

	// Dispatch is how a business tier invokes its beans' methods and how
	// the entity container reaches their fields: compiled code
	// (generated, what tierbench always did) or package reflect.
	Dispatch container.Dispatch `yaml:"dispatch" json:"dispatch,omitempty"`

	// Replicas are hot standbys of the PostgreSQL primary DB names; the
	// store routes read-only transactions to them, reading as
	// ReplicaReads says (empty: eventual).
	Replicas     []store.DSN        `yaml:"replica" json:"replica,omitempty"`
	ReplicaReads store.ReplicaReads `yaml:"replica-reads" json:"replica-reads,omitempty"`

	// Thresholds are conditions on the steady state's figures
	// (internal/threshold: p99<50ms, tps>1000); one unmet, the run does
	// not pass. The runner validates them against the workload.
	Thresholds []string `yaml:"threshold" json:"threshold,omitempty"`

	// Options are the workload's own settings (its options.go): a struct
	// value whose fields are tagged with their keys as Run's are. config
	// reads them from -f files and sweeps, overlays the flags on them and
	// writes them beside Run's keys, without knowing them (decision 0019);
	// nil for a workload without options.
	Options any `yaml:"-" json:"-"`
	// given are the keys a flag or the -f file set (ECperf's --ir 0 is
	// refused, RUBiS's --style leaves a --persistence given); appended to
	// as a fresh slice, so that copies of a Run do not share it.
	given []string
	// raw is the JSON the Run was read from, for DecodeOptions.
	raw []byte
}

// Given: the user set key (a flag or the -f file), rather than leaving
// the default.
func (r *Run) Given(key string) bool { return slices.Contains(r.given, key) }

// give records keys as given.
func (r *Run) give(keys ...string) {
	r.given = append(slices.Clip(r.given), keys...)
}

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
}

// New is the default configuration of a workload.
func New(workload string, d Defaults) Run {
	return Run{
		Workload:      workload,
		DB:            store.DSN{Dialect: store.SQLite, Temp: true},
		Scale:         1,
		Clients:       d.Clients,
		ServerThreads: d.ServerThreads,
		Iterations:    d.Iterations,
		Duration:      Duration(d.Duration),
		RampUp:        Duration(d.RampUp),
		RampDown:      Duration(d.RampDown),
		Seed:          1,
		Retries:       5,
		MaxErrorRate:  1,
		Persistence:   cmp.Or(d.Persistence, container.CMP),
		Isolation:     store.ReadCommitted,
		CommitOption:  container.OptionC,
		Pool:          container.Size{Percent: 20, Relative: true},
		// Concurrency is left empty: each entity type's follows its commit
		// option (container.Resolve).
		RefreshInterval: Duration(10 * time.Second),
		LockTimeout:     Duration(time.Second),
		Dispatch:        container.Generated,
		LockGranularity: store.EngineLocks,
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
	fields, commit := r.keyed()
	defer commit()
	// The keys first: a misspelt one is the likelier mistake, and would
	// explain a refused value.
	seen := make(map[string]int)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if _, ok := fields[k.Value]; k.Kind != yaml.ScalarNode || !ok {
			return fail("line %d: unknown key %s (keys are the flag names%s: %s)", k.Line, k.Value, r.ofWorkload(), strings.Join(r.Keys(), ", "))
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
		r.give(k.Value)
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
	}{{"ramp-up", r.RampUp}, {"ramp-down", r.RampDown}, {"think-time", r.ThinkTime}} {
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
	errs = append(errs, r.validateTableLocks()...)
	errs = append(errs, r.validateCluster()...)
	errs = append(errs, r.validateReplicas()...)
	if r.PartitionDBNode != "" {
		if _, _, _, err := ParsePartitionDBNode(r.PartitionDBNode, r.DB); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// validateTableLocks: only a single MariaDB or MySQL server locks tables
// (LOCK TABLES), and only statements that name each table by its own name
// run under them.
func (r *Run) validateTableLocks() []error {
	if r.LockGranularity != store.TableLocks {
		return nil
	}
	var errs []error
	if r.DB.Dialect != store.MySQL || len(r.DB.Hosts()) > 1 {
		errs = append(errs, fmt.Errorf("--lock-granularity table: only a single MariaDB or MySQL server locks tables (LOCK TABLES); --db is %s (engine locks are the only ones there)", r.DB))
	}
	if r.Persistence == container.Direct {
		errs = append(errs, fmt.Errorf("--lock-granularity table with --persistence direct: the direct SQL names tables by aliases, which LOCK TABLES would have to lock one by one; use cmp, bmp or bmp-checked"))
	}
	return errs
}

// ParsePartitionDBNode reads --partition-db-node N,AT,FOR against the
// --db it cuts a node of: N one of its nodes (from 0), AT and FOR as
// --partition's. Only a MySQL --db of several nodes (Galera) has a node
// to cut from the others.
func ParsePartitionDBNode(s string, db store.DSN) (node int, at, dur time.Duration, err error) {
	n, rest, ok := strings.Cut(s, ",")
	hosts := len(db.Hosts())
	if db.Dialect != store.MySQL || hosts < 2 {
		return 0, 0, 0, fmt.Errorf("--partition-db-node %s cuts a node of a Galera cluster from the others: give --db mysql://USER@H1:P1,H2:P2,H3:P3/DB (--db is %s)", s, db)
	}
	node, nerr := strconv.Atoi(strings.TrimSpace(n))
	if ok {
		at, dur, err = ParsePartition(rest)
	}
	if !ok || nerr != nil || err != nil || node < 0 || node >= hosts {
		return 0, 0, 0, fmt.Errorf("--partition-db-node %q: want N,AT,FOR: the node (0 to %d, in --db's order), when the cut begins after the measured run starts and how long it lasts (1,2s,5s)", s, hosts-1)
	}
	return node, at, dur, nil
}

// validateReplicas: replicas are a PostgreSQL primary's hot standbys,
// other servers than it; causal reads need them.
func (r *Run) validateReplicas() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch r.ReplicaReads {
	case "", store.Eventual, store.Causal:
	default:
		bad("--replica-reads %q: allowed: %s", r.ReplicaReads, store.ReplicaReadModes)
	}
	if len(r.Replicas) == 0 {
		if r.ReplicaReads == store.Causal {
			bad("--replica-reads causal needs --replica: without read replicas every read is on the primary and sees every write")
		}
		return errs
	}
	if r.DB.Dialect != store.Postgres {
		bad("--replica needs a PostgreSQL primary in --db (postgres://…): read replicas are its hot standbys; --db is %s", r.DB.Dialect)
	}
	if r.Isolation == store.Serializable {
		bad("--replica with --isolation serializable: a hot standby runs no serializable transactions; use read-committed or repeatable-read")
	}
	for i, d := range r.Replicas {
		switch {
		case d.Dialect != store.Postgres:
			bad("--replica %s: a replica is a PostgreSQL hot standby, postgres://USER@HOST:PORT/DB", d)
		case r.DB.Dialect == store.Postgres && d.Hosts()[0] == r.DB.Hosts()[0]:
			bad("--replica %s is --db itself (%s): give the primary's standbys", d, d.Hosts()[0])
		case slices.ContainsFunc(r.Replicas[:i], func(e store.DSN) bool { return e.Hosts()[0] == d.Hosts()[0] }):
			bad("--replica %s is given twice", d)
		}
	}
	return errs
}

// MaxAppServers bounds --app-servers: each is a process with its own
// database connections and cache.
const MaxAppServers = 32

// Balancers are the values of --balancer.
const Balancers = "haproxy"

// DefaultCacheURL is the shared cache a run uses when --coherence shared
// names none: Redis on this machine.
const DefaultCacheURL = "redis://127.0.0.1:6379"

// Servers is how many app servers the run has: at least one.
func (r *Run) Servers() int { return max(r.AppServers, 1) }

// validateCluster checks the keys of a run over several app servers.
func (r *Run) validateCluster() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r.AppServers < 0 || r.AppServers > MaxAppServers {
		bad("--app-servers %d: allowed: 1 to %d", r.AppServers, MaxAppServers)
	}
	if r.AppServer < 0 || r.AppServer >= r.Servers() {
		bad("--app-server %d: allowed: 0 to %d, one less than --app-servers %d", r.AppServer, r.Servers()-1, r.Servers())
	}
	if r.Balancer != "" && r.Balancer != Balancers {
		bad("--balancer %q: allowed: %s (or leave it unset: the driver spreads its clients over the app servers itself)", r.Balancer, Balancers)
	}
	if r.CoherenceBroker != "" {
		if u, err := url.Parse(r.CoherenceBroker); err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
			bad("--coherence-broker %q: give a NATS URL, nats://HOST:PORT", r.CoherenceBroker)
		}
	}
	if r.CacheURL != "" {
		if u, err := url.Parse(r.CacheURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			bad("--cache-url %q: give a Redis URL, redis://HOST:PORT[/DB] or rediss://…", r.CacheURL)
		}
	}
	return errs
}

// CheckKeys refuses keys (flags given, or keys of the -f file) that
// contradict each other.
func CheckKeys(keys []string) error {
	if slices.Contains(keys, "placement") && slices.Contains(keys, "db") {
		return errPlacementDB
	}
	if slices.Contains(keys, "duration") && slices.Contains(keys, "iterations") {
		return errors.New("--duration and --iterations both given: a run is bounded by one of them")
	}
	return nil
}

// validatePlacement: a placement starts an empty private PostgreSQL
// server for the run, so it takes no --db and loads it; dual needs two
// CPUs to put the server and tierbench apart.
func (r *Run) validatePlacement() error {
	mode := placement.Mode(r.Placement)
	var errs []error
	for _, kv := range r.PGSettings {
		if _, _, err := placement.ParseSetting(kv); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := r.validateHosts(mode); err != nil {
		return err
	}
	switch {
	case mode == placement.None && len(r.PGSettings) > 0:
		return fmt.Errorf("--pg-setting %s: applies to the private PostgreSQL server of --placement mixed|dual|hosts, and --placement is not set (the server --db names is not the run's to configure)", r.PGSettings[0])
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

// validateHosts: --link and --partition belong to --placement hosts,
// whose hosts they join or part.
func (r *Run) validateHosts(mode placement.Mode) error {
	if mode != placement.Hosts {
		for _, f := range []struct{ flag, value string }{{"link", r.Link}, {"partition", r.Partition}} {
			if f.value != "" {
				return fmt.Errorf("--%s %s joins the hosts of --placement hosts; give --placement hosts, or drop --%s", f.flag, f.value, f.flag)
			}
		}
		return nil
	}
	if r.Link != "" {
		if _, err := hosts.ParseLink(r.Link); err != nil {
			return err
		}
	}
	if r.Partition != "" {
		if _, _, err := ParsePartition(r.Partition); err != nil {
			return err
		}
	}
	if r.AppServers > 1 || r.Balancer != "" {
		return errors.New("--placement hosts puts one middle tier on hosts of its own: drop --app-servers and --balancer")
	}
	return nil
}

// ParsePartition reads --partition AT,FOR: two positive durations.
func ParsePartition(s string) (at, dur time.Duration, err error) {
	a, f, ok := strings.Cut(s, ",")
	if ok {
		at, err = time.ParseDuration(strings.TrimSpace(a))
		if err == nil {
			dur, err = time.ParseDuration(strings.TrimSpace(f))
		}
	}
	if !ok || err != nil || at < 0 || dur <= 0 {
		return 0, 0, fmt.Errorf("--partition %q: want AT,FOR: when the cut begins after the measured run starts and how long it lasts (2s,5s)", s)
	}
	return at, dur, nil
}

// errPlacementDB refuses a --db beside --placement.
var errPlacementDB = errors.New("--placement starts its own PostgreSQL server for the run (SQLite, a file inside tierbench's processes, cannot be placed on a CPU or a host of its own); leave --db unset")

// Container is the run's container settings before any type's own.
func (r *Run) Container() container.Settings {
	return container.Settings{
		CommitOption: r.CommitOption, Cache: r.Cache, Pool: r.Pool, Persistence: r.Persistence,
		Concurrency: r.Concurrency, Refresh: time.Duration(r.RefreshInterval), LockTimeout: time.Duration(r.LockTimeout),
		Coherence: r.Coherence, Server: r.AppServer, Servers: r.Servers(), Dispatch: r.Dispatch,
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
