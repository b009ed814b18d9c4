package store

import "fmt"

// Isolation is a transaction isolation level, named as on the command line.
type Isolation string

const (
	ReadCommitted  Isolation = "read-committed"
	RepeatableRead Isolation = "repeatable-read"
	Serializable   Isolation = "serializable"
)

// IsolationLevels lists the accepted values, for messages.
const IsolationLevels = "read-committed, repeatable-read, serializable"

// ParseIsolation accepts the names in IsolationLevels.
func ParseIsolation(s string) (Isolation, error) {
	switch i := Isolation(s); i {
	case ReadCommitted, RepeatableRead, Serializable:
		return i, nil
	}
	return "", fmt.Errorf("%q is not an isolation level; allowed: %s", s, IsolationLevels)
}

// SQL is the level as SQL spells it ("READ COMMITTED").
func (i Isolation) SQL() string {
	switch i {
	case RepeatableRead:
		return "REPEATABLE READ"
	case Serializable:
		return "SERIALIZABLE"
	}
	return "READ COMMITTED"
}

func (i Isolation) String() string { return string(i) }

func (i Isolation) MarshalText() ([]byte, error) { return []byte(i), nil }

func (i *Isolation) UnmarshalText(b []byte) error { return i.Set(string(b)) }

// Set parses --isolation.
func (i *Isolation) Set(s string) (err error) {
	*i, err = ParseIsolation(s)
	return err
}

// Type names the flag's value in help.
func (i *Isolation) Type() string { return "level" }
