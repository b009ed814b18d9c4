package container

import (
	"fmt"
	"time"
)

// Kind of a column's values.
type Kind uint8

const (
	Int Kind = iota
	Float
	String
	Time
	// Bytes are binary values (a product's image); a NULL reads as nil,
	// so a nullable column of any type can be declared Bytes.
	Bytes
)

// Column of an entity's table.
type Column struct {
	Name string
	Kind Kind
}

// Key identifies an instance: up to two integer columns (A, then B) and
// one string column (S), in the order the type declares them. A fixed,
// comparable shape keeps cache lookups free of allocation.
type Key struct {
	A, B int64
	S    string
}

// Value holds one field; only the member of the field's Kind is used.
type Value struct {
	I int64
	F float64
	S string
	T time.Time
	B []byte
}

// KeyGen says where the keys of new instances come from.
type KeyGen uint8

const (
	// KeyGiven: the creator supplies the key.
	KeyGiven KeyGen = iota
	// KeySequence: the container allocates one (a single integer key).
	KeySequence
)

// Finder is a named query: "find accounts by …".
type Finder struct {
	Name string
	// Where is the condition, with ? parameters, e.g. "stock_code = ?".
	Where   string
	OrderBy string
	Limit   int
	// Many: a collection finder; otherwise at most one instance.
	Many bool
}

// Type is an entity type's deployment descriptor.
type Type struct {
	Name  string
	Table string
	// Key columns, 1 to 3: integers map to Key.A then Key.B, a string to
	// Key.S.
	Key    []Column
	Fields []Column
	// Version is the column optimistic concurrency checks and increments;
	// empty if the table has none.
	Version string
	KeyGen  KeyGen
	Finders []Finder
	// Updated: the workload changes existing instances (not only creates
	// and reads them). Lost updates are possible only on updated types.
	Updated bool
	// Preset sets some of the type's settings over the run's.
	Preset Preset
}

// check validates a declaration; errors are programmer errors.
func (t *Type) check() error {
	ints, strs := 0, 0
	for _, c := range t.Key {
		switch c.Kind {
		case Int:
			ints++
		case String:
			strs++
		default:
			return fmt.Errorf("container: %s: key column %s must be Int or String", t.Name, c.Name)
		}
	}
	if len(t.Key) == 0 || ints > 2 || strs > 1 {
		return fmt.Errorf("container: %s: keys are 1-3 columns, at most two Int and one String", t.Name)
	}
	if t.KeyGen == KeySequence && (len(t.Key) != 1 || t.Key[0].Kind != Int) {
		return fmt.Errorf("container: %s: a sequence key is one Int column", t.Name)
	}
	if len(t.Fields) > 64 {
		return fmt.Errorf("container: %s: at most 64 fields", t.Name)
	}
	return nil
}

// keyArgs appends the key's column values to args in declaration order,
// as pointers: a pointer needs no boxing (an int64 or a string in an
// interface is an allocation), and every driver reads through it.
func (t *Type) keyArgs(k *Key, args []any) []any {
	n := 0
	for _, c := range t.Key {
		if c.Kind == String {
			args = append(args, &k.S)
			continue
		}
		if n == 0 {
			args = append(args, &k.A)
		} else {
			args = append(args, &k.B)
		}
		n++
	}
	return args
}

// keyDest appends scan destinations for the key columns of k.
func (t *Type) keyDest(k *Key, dest []any) []any {
	n := 0
	for _, c := range t.Key {
		if c.Kind == String {
			dest = append(dest, &k.S)
			continue
		}
		if n == 0 {
			dest = append(dest, &k.A)
		} else {
			dest = append(dest, &k.B)
		}
		n++
	}
	return dest
}

// valueDest is the scan destination for a column of kind k in v.
func valueDest(k Kind, v *Value) any {
	switch k {
	case Float:
		return &v.F
	case String:
		return &v.S
	case Time:
		return &v.T
	case Bytes:
		return &v.B
	}
	return &v.I
}

// valueArg is v as a statement argument for a column of kind k: a
// pointer to the member, which must not change until the statement has
// gone out (see keyArgs).
func valueArg(k Kind, v *Value) any {
	switch k {
	case Float:
		return &v.F
	case String:
		return &v.S
	case Time:
		return &v.T
	case Bytes:
		return &v.B
	}
	return &v.I
}
