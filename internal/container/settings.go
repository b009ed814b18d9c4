package container

import (
	"fmt"
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

func (o CommitOption) String() string { return string(o) }

// caches reports whether the option keeps data across transactions.
func (o CommitOption) caches() bool { return o == OptionA || o == OptionD }

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
)

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

// Settings of one entity type, resolved: sizes are absolute.
type Settings struct {
	CommitOption CommitOption
	CacheSize    int
	PoolSize     int
	Persistence  Persistence
	Concurrency  Concurrency
	Refresh      time.Duration
	LockTimeout  time.Duration
}

// Allowed values, for messages.
const (
	CommitOptions = "A, B, C, D"
	Persistences  = "cmp, bmp, bmp-checked"
	Concurrencies = "database, exclusive, optimistic, readonly"
	// SettingKeys are the keys of --entity NAME.key=value.
	SettingKeys = "commit-option, cache, pool, persistence, concurrency, refresh-interval, lock-timeout"
)

// ParseCommitOption accepts A, B, C or D.
func ParseCommitOption(s string) (CommitOption, error) {
	if len(s) == 1 && strings.Contains("ABCD", s) {
		return CommitOption(s[0]), nil
	}
	return 0, fmt.Errorf("%q is not a commit option; allowed: %s", s, CommitOptions)
}

// ParsePersistence accepts the container's strategies.
func ParsePersistence(s string) (Persistence, error) {
	switch p := Persistence(s); p {
	case CMP, BMP, BMPChecked:
		return p, nil
	}
	return "", fmt.Errorf("%q is not a container persistence strategy; allowed: %s", s, Persistences)
}

// ParseConcurrency accepts the container's strategies.
func ParseConcurrency(s string) (Concurrency, error) {
	switch c := Concurrency(s); c {
	case Database, Exclusive, Optimistic, ReadOnly:
		return c, nil
	}
	return "", fmt.Errorf("%q is not a concurrency strategy; allowed: %s", s, Concurrencies)
}

// Size is a cache or pool size: absolute, or a percentage of the type's
// rows at the end of the run (Brebner & Ran's Table 4 convention).
type Size struct {
	N        int
	Percent  float64
	Relative bool
}

// ParseSize accepts "N" or "P%".
func ParseSize(s string) (Size, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 {
			return Size{}, fmt.Errorf("%q is not a size; give a count (1000) or a percentage of the rows at the end of the run (20%%)", s)
		}
		return Size{Percent: f, Relative: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return Size{}, fmt.Errorf("%q is not a size; give a count (1000) or a percentage of the rows at the end of the run (20%%)", s)
	}
	return Size{N: n}, nil
}

// Of resolves the size against the rows a type will have.
func (s Size) Of(rows int64) int {
	if !s.Relative {
		return s.N
	}
	return int(float64(rows)*s.Percent/100 + 0.5)
}

func (s Size) String() string {
	if s.Relative {
		return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
	}
	return strconv.Itoa(s.N)
}

// Overrides are settings given as text (a type's defaults, or the user's
// --entity NAME.key=value), by key.
type Overrides map[string]string

// Raw is the run's settings as text, before a type's overrides apply.
type Raw struct {
	CommitOption, Cache, Pool, Persistence, Concurrency string
	Refresh, LockTimeout                                time.Duration
}

// Resolve gives a type's settings: the run's, then the type's defaults,
// then the user's overrides for it; sizes against rows.
func Resolve(run Raw, t *Type, user Overrides, rows int64) (Settings, error) {
	r := run
	for _, o := range []Overrides{t.Defaults, user} {
		for k, v := range o {
			switch k {
			case "commit-option":
				r.CommitOption = v
			case "cache":
				r.Cache = v
			case "pool":
				r.Pool = v
			case "persistence":
				r.Persistence = v
			case "concurrency":
				r.Concurrency = v
			case "refresh-interval", "lock-timeout":
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return Settings{}, fmt.Errorf("--entity %s.%s=%s: not a positive duration (examples: 500ms, 5s)", t.Name, k, v)
				}
				if k == "lock-timeout" {
					r.LockTimeout = d
				} else {
					r.Refresh = d
				}
			default:
				return Settings{}, fmt.Errorf("--entity %s.%s: no such setting; allowed: %s", t.Name, k, SettingKeys)
			}
		}
	}
	var s Settings
	var err error
	if s.CommitOption, err = ParseCommitOption(r.CommitOption); err != nil {
		return s, fmt.Errorf("%s commit option: %w", t.Name, err)
	}
	if s.Persistence, err = ParsePersistence(r.Persistence); err != nil {
		return s, fmt.Errorf("%s persistence: %w", t.Name, err)
	}
	if s.Concurrency, err = ParseConcurrency(r.Concurrency); err != nil {
		return s, fmt.Errorf("%s concurrency: %w", t.Name, err)
	}
	cache, err := ParseSize(r.Cache)
	if err != nil {
		return s, fmt.Errorf("%s cache: %w", t.Name, err)
	}
	pool, err := ParseSize(r.Pool)
	if err != nil {
		return s, fmt.Errorf("%s pool: %w", t.Name, err)
	}
	s.CacheSize, s.PoolSize = cache.Of(rows), pool.Of(rows)
	s.Refresh, s.LockTimeout = r.Refresh, r.LockTimeout
	return s, s.safe(t)
}

// safe rejects the combinations that would lose updates or cannot work,
// saying why and what to use instead.
func (s Settings) safe(t *Type) error {
	switch {
	case s.CommitOption.caches() && s.Concurrency == Database && t.Updated:
		return fmt.Errorf("%s: commit option %s with database concurrency would lose updates: %s keeps %s's data across transactions without holding the database's locks, so a transaction could write back data another one changed since. Use --concurrency exclusive or optimistic, or commit option B or C",
			t.Name, s.CommitOption, s.CommitOption, t.Name)
	case s.Concurrency == ReadOnly && t.Updated:
		return fmt.Errorf("%s: readonly concurrency, but the workload updates %s; use database, exclusive or optimistic", t.Name, t.Name)
	case s.Concurrency == Optimistic && t.Updated && t.Version == "":
		return fmt.Errorf("%s: optimistic concurrency needs a version column, and %s has none; use database or exclusive", t.Name, t.Table)
	}
	return nil
}
