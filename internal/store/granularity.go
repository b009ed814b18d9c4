package store

import "fmt"

// LockGranularity is what a run's transactions lock, named as on the
// command line: the engine's own locks (rows for InnoDB and PostgreSQL,
// the database for SQLite), or every table of the database, each
// transaction holding them from its start to its end (MariaDB's LOCK
// TABLES; decision 0040).
type LockGranularity string

const (
	// EngineLocks: the engine's own locking, the default.
	EngineLocks LockGranularity = "engine"
	// TableLocks: every transaction locks the database's tables first.
	TableLocks LockGranularity = "table"
)

// LockGranularities lists the accepted values, for messages.
const LockGranularities = "engine, table"

// ParseLockGranularity accepts the names in LockGranularities.
func ParseLockGranularity(s string) (LockGranularity, error) {
	switch g := LockGranularity(s); g {
	case EngineLocks, TableLocks:
		return g, nil
	}
	return "", fmt.Errorf("%q is not a lock granularity; allowed: %s", s, LockGranularities)
}

func (g LockGranularity) String() string {
	if g == "" {
		return string(EngineLocks)
	}
	return string(g)
}

func (g LockGranularity) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

func (g *LockGranularity) UnmarshalText(b []byte) error { return g.Set(string(b)) }

// Set parses --lock-granularity.
func (g *LockGranularity) Set(s string) (err error) {
	*g, err = ParseLockGranularity(s)
	return err
}

// Type names the flag's value in help.
func (g *LockGranularity) Type() string { return "granularity" }
