package container

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// CommitOption is what the container does with an instance at commit.
type CommitOption byte

const (
	// OptionA keeps the instance ready with its data: the next transaction
	// uses it without a load (the container assumes exclusive access).
	OptionA CommitOption = 'A'
	// OptionB keeps the instance ready (identity); its data is reloaded at
	// the next transaction's first use.
	OptionB CommitOption = 'B'
	// OptionC passivates the instance into the pool (or discards it when
	// the pool is full).
	OptionC CommitOption = 'C'
	// OptionD is A whose cached data expires after the refresh interval.
	OptionD CommitOption = 'D'
)

// String is the option's letter; the zero value (none chosen yet) is
// empty, so that a flag's help does not print a NUL as its default.
func (o CommitOption) String() string {
	if o == 0 {
		return ""
	}
	return string(o)
}

// caches reports whether the option keeps data across transactions.
func (o CommitOption) caches() bool { return o == OptionA || o == OptionD }

// DefaultConcurrency is the concurrency a run gets when none is given:
// exclusive for the options that cache data across transactions (A, D),
// which assume, as the EJB specification does, that the container is the
// database's only writer and keeps its copies right by locking them;
// the database's own for B and C, which reload every transaction.
func (o CommitOption) DefaultConcurrency() Concurrency {
	if o.caches() {
		return Exclusive
	}
	return Database
}

// Persistence is how instances reach the database.
type Persistence string

const (
	// CMP: find and load in one query, collection finders in one query,
	// store only modified columns, nothing for clean instances.
	CMP Persistence = "cmp"
	// BMP: find (keys) then load (row) as separate queries, N+1 for
	// collections, store every column of every enlisted instance.
	BMP Persistence = "bmp"
	// BMPChecked: BMP that skips unmodified instances at store.
	BMPChecked Persistence = "bmp-checked"
	// Direct is no container at all: the workload's hand-written SQL. It
	// is a run's choice, never an entity type's.
	Direct Persistence = "direct"
)

// Container reports whether the entity container runs the workload.
func (p Persistence) Container() bool { return p != Direct }

// Concurrency is how concurrent transactions on one identity are kept from
// losing updates.
type Concurrency string

const (
	// Database: each transaction its own instance; the database arbitrates
	// (read-write transactions load instances of updated types with a
	// locking read).
	Database Concurrency = "database"
	// Exclusive: one transaction at a time per identity, the container's
	// lock held to commit; waits are counted, and one past the lock
	// timeout aborts (retryable).
	Exclusive Concurrency = "exclusive"
	// Optimistic: the version column is checked at store; a conflict
	// aborts (retryable) and is counted.
	Optimistic Concurrency = "optimistic"
	// ReadOnly: never stored; cached under A and D.
	ReadOnly Concurrency = "readonly"
)

// Settings of one entity type. Sizes given in percent follow the type's
// rows as the run goes (see Size).
type Settings struct {
	CommitOption CommitOption
	Cache        Size
	Pool         Size
	Persistence  Persistence
	Concurrency  Concurrency
	Refresh      time.Duration
	LockTimeout  time.Duration
	// Coherence is how the type's cache stays right when several app
	// servers, each with its own container, share the database.
	Coherence Coherence
	// Server is this container's app server of Servers (0 of 0 or 1:
	// alone). Where keys count up from the table's largest (SQLite,
	// MySQL), server i draws the key blocks i, i+Servers, … so that
	// servers that started on one database never draw the same key.
	Server, Servers int
	// Dispatch is how the container and the beans reach the type's
	// fields; the run's, for every type (empty is generated).
	Dispatch Dispatch
	// ReadMostly names the read-write type whose commits invalidate this
	// one, a read-only type over the same rows cached under option D:
	// the read-mostly pattern (--entity Item.read-mostly=ItemRW; see
	// readmostly.go). Empty: none.
	ReadMostly string
}

// Allowed values, for messages.
const (
	CommitOptions = "A, B, C, D"
	Persistences  = "cmp, bmp, bmp-checked"
	Concurrencies = "database, exclusive, optimistic, readonly"
	// SettingKeys are the keys of --entity NAME.key=value.
	Coherences  = "none, invalidate, invalidate-async, shared"
	SettingKeys = "commit-option, cache, pool, persistence, concurrency, refresh-interval, lock-timeout, coherence, read-mostly"
)

// Coherence is how a type's cached data stays right across app servers.
type Coherence string

const (
	// NoCoherence: each server's cache knows only its own commits; right
	// with one app server, or for types nobody writes.
	NoCoherence Coherence = "none"
	// Invalidate: each commit publishes the identities it wrote and the
	// finder entries it invalidated, and returns once every live peer has
	// dropped them (a silent peer is fenced).
	Invalidate Coherence = "invalidate"
	// InvalidateAsync publishes the same without waiting: cheaper, and
	// a peer may serve data older than a commit for as long as the
	// message takes; that staleness is measured.
	InvalidateAsync Coherence = "invalidate-async"
	// Shared keeps the type's entity state in a shared cache (Redis),
	// read before the database and written under the commit.
	Shared Coherence = "shared"
)

// ParseCoherence accepts the coherence modes; empty is none.
func ParseCoherence(s string) (Coherence, error) {
	switch c := Coherence(s); c {
	case NoCoherence, Invalidate, InvalidateAsync, Shared:
		return c, nil
	case "":
		return NoCoherence, nil
	}
	return "", fmt.Errorf("%q is not a coherence mode; allowed: %s", s, Coherences)
}

// Keeps reports whether the mode keeps caches of several servers right:
// any but none.
func (c Coherence) Keeps() bool { return c != "" && c != NoCoherence }

func (c Coherence) String() string { return string(c) }

func (c Coherence) MarshalText() ([]byte, error) { return []byte(c), nil }

// UnmarshalText reads a mode; empty is none given.
func (c *Coherence) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*c = ""
		return nil
	}
	return c.Set(string(b))
}

// Set parses a flag's value.
func (c *Coherence) Set(s string) (err error) {
	*c, err = ParseCoherence(s)
	return err
}

// Type names the flag's value in help.
func (c *Coherence) Type() string { return "mode" }

// The parse functions and the text methods below are how settings enter
// the program: as flags (Set), YAML keys and result files (UnmarshalText).
// Their errors start with the value, quoted, so that the caller can put
// the flag or key in front.

// ParseCommitOption accepts A, B, C or D.
func ParseCommitOption(s string) (CommitOption, error) {
	if len(s) == 1 && strings.Contains("ABCD", s) {
		return CommitOption(s[0]), nil
	}
	return 0, fmt.Errorf("%q is not a commit option; allowed: %s", s, CommitOptions)
}

func (o CommitOption) MarshalText() ([]byte, error) { return []byte{byte(o)}, nil }

func (o *CommitOption) UnmarshalText(b []byte) error { return o.Set(string(b)) }

// Set parses a flag's value.
func (o *CommitOption) Set(s string) (err error) {
	*o, err = ParseCommitOption(s)
	return err
}

// Type names the flag's value in help.
func (o *CommitOption) Type() string { return "A|B|C|D" }

// ParsePersistence accepts the container's strategies, and direct when
// run is set (the run's choice; a type's cannot be direct).
func ParsePersistence(s string, run bool) (Persistence, error) {
	switch p := Persistence(s); p {
	case CMP, BMP, BMPChecked:
		return p, nil
	case Direct:
		if run {
			return p, nil
		}
		return "", fmt.Errorf("%q is a run's persistence, not one entity type's; allowed: %s", s, Persistences)
	}
	if run {
		return "", fmt.Errorf("%q is not a persistence strategy; allowed: %s, direct", s, Persistences)
	}
	return "", fmt.Errorf("%q is not a container persistence strategy; allowed: %s", s, Persistences)
}

func (p Persistence) String() string { return string(p) }

// JoinPersistence lists strategies for a message.
func JoinPersistence(ps []Persistence) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func (p Persistence) MarshalText() ([]byte, error) { return []byte(p), nil }

func (p *Persistence) UnmarshalText(b []byte) error { return p.Set(string(b)) }

// Set parses a run's persistence (--persistence).
func (p *Persistence) Set(s string) (err error) {
	*p, err = ParsePersistence(s, true)
	return err
}

// Type names the flag's value in help.
func (p *Persistence) Type() string { return "strategy" }

// ParseConcurrency accepts the container's strategies.
func ParseConcurrency(s string) (Concurrency, error) {
	switch c := Concurrency(s); c {
	case Database, Exclusive, Optimistic, ReadOnly:
		return c, nil
	}
	return "", fmt.Errorf("%q is not a concurrency strategy; allowed: %s", s, Concurrencies)
}

func (c Concurrency) String() string { return string(c) }

func (c Concurrency) MarshalText() ([]byte, error) { return []byte(c), nil }

// UnmarshalText reads a strategy; empty is none given (the run's default
// then follows its commit option, see CommitOption.DefaultConcurrency).
func (c *Concurrency) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*c = ""
		return nil
	}
	return c.Set(string(b))
}

// Set parses a flag's value.
func (c *Concurrency) Set(s string) (err error) {
	*c, err = ParseConcurrency(s)
	return err
}

// Type names the flag's value in help.
func (c *Concurrency) Type() string { return "strategy" }

// Size is a cache or pool size: a count, or a percentage of the type's
// rows. A percentage follows the rows as the run goes: counted when the
// container starts, then moved by every create and remove it commits, so
// that it means the same in a timed run as in one of a number of
// iterations, and at the end of the run it is Brebner & Ran's Table 4
// convention, a share of the rows at the end.
type Size struct {
	N        int
	Percent  float64
	Relative bool
}

// ParseSize accepts "N" or "P%".
func ParseSize(s string) (Size, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || !(f >= 0) || math.IsInf(f, 0) {
			return Size{}, fmt.Errorf("%q is not a size; give a count (1000) or a percentage of the type's rows (20%%)", s)
		}
		return Size{Percent: f, Relative: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return Size{}, fmt.Errorf("%q is not a size; give a count (1000) or a percentage of the type's rows (20%%)", s)
	}
	return Size{N: n}, nil
}

// Of resolves the size against the rows a type has.
func (s Size) Of(rows int64) int {
	if !s.Relative {
		return s.N
	}
	return int(float64(max(rows, 0))*s.Percent/100 + 0.5)
}

func (s Size) String() string {
	if s.Relative {
		return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
	}
	return strconv.Itoa(s.N)
}

func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Size) UnmarshalText(b []byte) error { return s.Set(string(b)) }

// Set parses a flag's value.
func (s *Size) Set(v string) (err error) {
	*s, err = ParseSize(v)
	return err
}

// Type names the flag's value in help.
func (s *Size) Type() string { return "N|P%" }

// Preset is what an entity type's declaration sets over the run's
// settings, as the reference does (Stock-Online fixes Transaction to
// option C); the user's --entity still overrides it. Zero fields leave
// the run's.
type Preset struct {
	CommitOption CommitOption
	// Concurrency: Database for a type that is also written outside the
	// container (TPC-App's stock, by its shipping agents), which only the
	// database's locks keep from lost updates.
	Concurrency Concurrency
}

// Setting is one container setting of one entity type, --entity
// NAME.key=value, parsed once.
type Setting struct {
	Type string
	Key  string
	// value holds the parsed value in the field Key names.
	value Settings
	text  string
}

// ParseSetting parses NAME.key=value.
func ParseSetting(s string) (Setting, error) {
	lhs, text, ok := strings.Cut(s, "=")
	name, key, dot := strings.Cut(lhs, ".")
	if !ok || !dot || name == "" || key == "" || text == "" {
		return Setting{}, fmt.Errorf("%q: write NAME.key=value, e.g. Item.concurrency=readonly; keys: %s", s, SettingKeys)
	}
	out := Setting{Type: name, Key: key, text: text}
	v := &out.value
	var err error
	switch key {
	case "commit-option":
		v.CommitOption, err = ParseCommitOption(text)
	case "cache":
		v.Cache, err = ParseSize(text)
	case "pool":
		v.Pool, err = ParseSize(text)
	case "persistence":
		v.Persistence, err = ParsePersistence(text, false)
	case "concurrency":
		v.Concurrency, err = ParseConcurrency(text)
	case "refresh-interval", "lock-timeout":
		d, perr := time.ParseDuration(text)
		if perr != nil || d <= 0 {
			return Setting{}, fmt.Errorf("%q: %s is not a positive duration (examples: 500ms, 5s)", s, text)
		}
		v.Refresh, v.LockTimeout = d, d
	case "coherence":
		v.Coherence, err = ParseCoherence(text)
	case "read-mostly":
		v.ReadMostly = text
	default:
		return Setting{}, fmt.Errorf("%q: no setting %s; keys: %s", s, key, SettingKeys)
	}
	if err != nil {
		return Setting{}, fmt.Errorf("%q: %w", s, err)
	}
	return out, nil
}

func (s Setting) String() string { return s.Type + "." + s.Key + "=" + s.text }

func (s Setting) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Setting) UnmarshalText(b []byte) (err error) {
	*s, err = ParseSetting(string(b))
	return err
}

// apply sets the one field the setting names.
func (s Setting) apply(to *Settings) {
	switch s.Key {
	case "commit-option":
		to.CommitOption = s.value.CommitOption
	case "cache":
		to.Cache = s.value.Cache
	case "pool":
		to.Pool = s.value.Pool
	case "persistence":
		to.Persistence = s.value.Persistence
	case "concurrency":
		to.Concurrency = s.value.Concurrency
	case "refresh-interval":
		to.Refresh = s.value.Refresh
	case "lock-timeout":
		to.LockTimeout = s.value.LockTimeout
	case "coherence":
		to.Coherence = s.value.Coherence
	case "read-mostly":
		to.ReadMostly = s.value.ReadMostly
	}
}

// Resolve gives a type's settings: the run's, then the type's preset,
// then the user's settings of that type, in order.
func Resolve(run Settings, t *Type, user []Setting) (Settings, error) {
	s := run
	if t.Preset.CommitOption != 0 {
		s.CommitOption = t.Preset.CommitOption
	}
	if t.Preset.Concurrency != "" {
		s.Concurrency = t.Preset.Concurrency
	}
	for _, u := range user {
		if u.Type == t.Name {
			u.apply(&s)
		}
	}
	readMostlyDefaults(&s, t, user)
	if s.Concurrency == "" { // none given: the type's commit option decides
		s.Concurrency = s.CommitOption.DefaultConcurrency()
		if s.Coherence == Shared && t.Updated {
			s.Concurrency = sharedConcurrency(t)
		}
	}
	return s, s.safe(t)
}

// safe rejects the combinations that would lose updates, serve another
// app server's stale data (Servers > 1) or cannot work,
// saying why and what to use instead.
func (s Settings) safe(t *Type) error {
	if err := s.safeReadMostly(t); err != nil {
		return err
	}
	switch {
	case !s.Persistence.Container():
		return fmt.Errorf("%s: persistence %s has no entity container; allowed: %s", t.Name, s.Persistence, Persistences)
	case s.Coherence == Shared && s.Concurrency == Exclusive && t.Updated:
		return fmt.Errorf("%s: exclusive concurrency with coherence shared would lose updates: the exclusive lock is one app server's, and %s's state is shared by all of them, so two servers could write back the same cached state. Use --concurrency %s (the database arbitrates), or coherence invalidate",
			t.Name, t.Name, sharedConcurrency(t))
	case s.CommitOption.caches() && s.Concurrency == Database && t.Updated && s.Coherence != Shared:
		return fmt.Errorf("%s: commit option %s with database concurrency would lose updates: %s keeps %s's data across transactions without holding the database's locks, so a transaction could write back data another one changed since. Use --concurrency exclusive or optimistic, or commit option B or C",
			t.Name, s.CommitOption, s.CommitOption, t.Name)
	case s.Concurrency == ReadOnly && t.Updated:
		return fmt.Errorf("%s: readonly concurrency, but the workload updates %s; use database, exclusive or optimistic", t.Name, t.Name)
	case s.Servers > 1 && s.CommitOption.caches() && writtenAcross(t, s) && !s.Coherence.Keeps():
		return fmt.Errorf("%s: commit option %s across %d app servers would serve stale data: each server's cache keeps %s's data and misses the others' writes. Use --coherence invalidate, invalidate-async or shared (or --entity %s.coherence=…), or commit option B or C",
			t.Name, s.CommitOption, s.Servers, t.Name, t.Name)
	case s.Concurrency == Optimistic && t.Updated && t.Version == "":
		return fmt.Errorf("%s: optimistic concurrency needs a version column, and %s has none; use database or exclusive", t.Name, t.Table)
	}
	return nil
}

// sharedConcurrency is the concurrency an updated type of coherence
// shared gets when none is given: optimistic where it has a version
// column (writers may read the shared state, and the database's version
// check refuses a stale one), the database's locks otherwise (writers
// read the database).
func sharedConcurrency(t *Type) Concurrency {
	if t.Version != "" {
		return Optimistic
	}
	return Database
}

// writtenAcross reports whether other app servers' commits can change
// what a cache of t holds: t is updated, or, only created, it has
// finders, whose cached results miss the rows the others create (a type
// with readonly concurrency is never written).
func writtenAcross(t *Type, s Settings) bool {
	return t.Updated || (len(t.Finders) > 0 && s.Concurrency != ReadOnly)
}
