package container

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Dispatch is how code reaches an entity's fields (and, on a business
// tier, a bean's methods): the switch of Cecchet et al.'s finding that
// reflection is a bottleneck, JBoss's dynamic proxies and reflective field
// access against JOnAS's precompiled container classes.
//
// Generated is the container as it always was: a field is a typed member
// of its Value, read and written by compiled code chosen by the column's
// Kind (the typed accessors JOnAS's GenIC generates; Go needs no generator
// for them, the switch is written once for every type). Reflect reaches
// the same member through package reflect every time: reflect.Value.Field
// by the member's index (looked up by name once, as JBoss's CMP looked up
// its java.lang.reflect.Field objects at deployment), read, set or
// addressed for a scan through the reflect.Value. The storage is the same
// under both, so both leave the same state; only the cost differs.
type Dispatch string

const (
	Generated Dispatch = "generated"
	Reflect   Dispatch = "reflect"
)

// Dispatches are the values of --dispatch.
const Dispatches = "reflect, generated"

// ParseDispatch accepts reflect or generated.
func ParseDispatch(s string) (Dispatch, error) {
	switch d := Dispatch(s); d {
	case Generated, Reflect:
		return d, nil
	}
	return "", fmt.Errorf("%q is not a dispatch; allowed: %s", s, strings.ReplaceAll(Dispatches, ", ", "|"))
}

func (d Dispatch) String() string { return string(d) }

func (d Dispatch) MarshalText() ([]byte, error) { return []byte(d), nil }

// UnmarshalText reads a dispatch; empty (a result written before there
// was a choice) is generated, what every run did then.
func (d *Dispatch) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = Generated
		return nil
	}
	return d.Set(string(b))
}

// Set parses a flag's value.
func (d *Dispatch) Set(s string) (err error) {
	*d, err = ParseDispatch(s)
	return err
}

// Type names the flag's value in help.
func (d *Dispatch) Type() string { return "mode" }

// valueMember is the index in Value of the member that holds each Kind,
// found by name once.
var valueMember = func() [Bytes + 1]int {
	var out [Bytes + 1]int
	t := reflect.TypeFor[Value]()
	for k, name := range [...]string{Int: "I", Float: "F", String: "S", Time: "T", Bytes: "B"} {
		f, ok := t.FieldByName(name)
		if !ok {
			panic("container: Value has no member " + name)
		}
		out[k] = f.Index[0]
	}
	return out
}()

// reflected is the member of v that holds kind k, reached by reflection.
func reflected(k Kind, v *Value) reflect.Value {
	return reflect.ValueOf(v).Elem().Field(valueMember[k])
}

// The reflective accessors behind Instance's, under Reflect.
func reflectInt(v *Value) int64            { return reflected(Int, v).Int() }
func reflectFloat(v *Value) float64        { return reflected(Float, v).Float() }
func reflectString(v *Value) string        { return reflected(String, v).String() }
func reflectTime(v *Value) time.Time       { return reflected(Time, v).Interface().(time.Time) }
func reflectBytes(v *Value) []byte         { return reflected(Bytes, v).Bytes() }
func reflectSetTime(v *Value, t time.Time) { reflected(Time, v).Set(reflect.ValueOf(t)) }

// dest is the scan destination of a column of kind k in v, as the home's
// dispatch reaches it.
func (h *Home) dest(k Kind, v *Value) any {
	if h.reflect {
		return reflected(k, v).Addr().Interface()
	}
	return valueDest(k, v)
}

// arg is v as a statement argument for a column of kind k, as the home's
// dispatch reaches it (see valueArg).
func (h *Home) arg(k Kind, v *Value) any {
	if h.reflect {
		return reflected(k, v).Addr().Interface()
	}
	return valueArg(k, v)
}
