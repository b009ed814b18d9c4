package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// A key is one setting of a run: a field of Run or of its workload's
// Options, named by its yaml tag (the flag's name).
type key struct {
	name  string
	field reflect.StructField
	value reflect.Value
}

// keyFields are v's tagged fields, those of embedded structs (a shared
// option set such as workload.Tiering) in their place.
func keyFields(v reflect.Value) []key {
	var out []key
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, keyFields(v.Field(i))...)
			continue
		}
		if name := f.Tag.Get("yaml"); name != "" && name != "-" {
			out = append(out, key{name: name, field: f, value: v.Field(i)})
		}
	}
	return out
}

// keys are r's settings, Run's then its options', each settable; commit
// stores the options set back into r (they are a value, so that copies
// of a Run never share them).
func (r *Run) keys() (keys []key, commit func()) {
	keys = keyFields(reflect.ValueOf(r).Elem())
	if r.Options == nil {
		return keys, func() {}
	}
	opts := reflect.New(reflect.TypeOf(r.Options)).Elem()
	opts.Set(reflect.ValueOf(r.Options))
	return append(keys, keyFields(opts)...), func() { r.Options = opts.Interface() }
}

// keyed maps r's keys to their fields; see keys.
func (r *Run) keyed() (map[string]reflect.Value, func()) {
	keys, commit := r.keys()
	out := make(map[string]reflect.Value, len(keys))
	for _, k := range keys {
		out[k.name] = k.value
	}
	return out, commit
}

// Keys lists the configuration keys of r's workload: Run's and its
// options'.
func (r *Run) Keys() []string {
	keys, _ := r.keys()
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.name
	}
	return out
}

// OptionKeys lists the keys of a workload's options (a struct value).
func OptionKeys(options any) []string {
	if options == nil {
		return nil
	}
	var out []string
	for _, k := range keyFields(reflect.ValueOf(options)) {
		out = append(out, k.name)
	}
	return out
}

// ofWorkload names r's workload for a list of its keys.
func (r *Run) ofWorkload() string {
	if r.Workload == "" {
		return ""
	}
	return " of " + r.Workload
}

// SetKeys sets the keys of a YAML mapping (a sweep's settings) as a -f
// file's are; it sets none when one is refused.
func (r *Run) SetKeys(n *yaml.Node) error {
	next := *r
	if err := next.setKeys(n, func(format string, args ...any) error {
		return errors.New(oneLine.Replace(fmt.Sprintf(format, args...)))
	}); err != nil {
		return err
	}
	*r = next
	return nil
}

// Overlay copies from src the settings named by keys (flag names, which
// are the YAML keys): the flags a user set override the file and the
// defaults. src's options are of r's workload.
func (r *Run) Overlay(src *Run, keys []string) {
	dst, commit := r.keyed()
	defer commit()
	from, _ := src.keyed()
	for _, key := range keys {
		if d, ok := dst[key]; ok {
			if f, ok := from[key]; ok {
				d.Set(f)
			}
		}
		r.give(key)
	}
}

// runFields is Run without its methods, for decoding its keys.
type runFields Run

// UnmarshalJSON reads Run's keys and keeps the whole for the workload's
// options, which only their workload can decode (DecodeOptions).
func (r *Run) UnmarshalJSON(b []byte) error {
	var f runFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*r = Run(f)
	r.raw = bytes.Clone(b)
	return nil
}

// DecodeOptions sets r's options, of the type of defaults: read from the
// JSON r was read from (a result's config, a coordinator's task), as
// Run's own keys are (a key left out, being empty, is zero), or defaults
// when r was not read from JSON. A key of another workload is ignored: a
// result carries some (see legacyKeys).
func (r *Run) DecodeOptions(defaults any) error {
	if defaults == nil {
		r.Options = nil
		return nil
	}
	opts := reflect.New(reflect.TypeOf(defaults))
	if r.raw == nil {
		opts.Elem().Set(reflect.ValueOf(defaults))
	} else {
		if err := json.Unmarshal(r.raw, opts.Interface()); err != nil {
			return fmt.Errorf("the %s options of the configuration: %w", r.Workload, err)
		}
	}
	r.Options = opts.Elem().Interface()
	return nil
}

// legacyKeys are the workload keys a result's config carried before each
// workload owned its options (decision 0019), in their order, each with
// the value a run of another workload wrote (nil: left out, as
// omitempty): a result is written as it was. Frozen: an option added
// since is written after them, by its workload's options alone.
var legacyKeys = []struct {
	key   string
	value any
}{
	{"ir", nil}, {"po-dispatch", "sync"}, {"broker", nil}, {"emulator", nil}, {"emulator-delay", nil},
	{"receiver", "127.0.0.1:0"}, {"cycle-scale", 1}, {"lead-time-unit", nil}, {"unsorted-access", nil},
	{"mix", "bidding"}, {"think-scale", 1}, {"items-per-category", nil}, {"skip-images", nil},
	{"one-based-ids", nil}, {"page-tries", nil}, {"no-ramp-slowdown", nil}, {"style", nil},
	{"protocol", "http"}, {"tiers", 1}, {"po-senders", 16}, {"item-images", "in-row"}, {"image-kb", 100},
	{"image-dir", nil}, {"indexes", "spec"}, {"pov", nil}, {"pge", nil}, {"ice", nil},
	{"partner-delay", "fixed:500ms"}, {"partner-fail-rate", nil}, {"session-length", "negexp:20"},
	{"front", "soap"}, {"shipping-agents", 2},
}

// legacyWarmup: warmup (Stock-Online's) came among Run's keys, before
// no-load, and was written for every workload.
const legacyWarmup = "warmup"

// MarshalJSON writes Run's keys then its options', each as its json tag
// says (omitempty included), in the order results have always had.
func (r Run) MarshalJSON() ([]byte, error) {
	opts := map[string]json.RawMessage{}
	var optOrder []string
	if r.Options != nil {
		for _, k := range keyFields(reflect.ValueOf(r.Options)) {
			name, omit := jsonName(k.field)
			if name == "" {
				continue
			}
			optOrder = append(optOrder, name)
			if omit && empty(k.value) {
				opts[name] = nil
				continue
			}
			b, err := json.Marshal(k.value.Interface())
			if err != nil {
				return nil, fmt.Errorf("option %s: %w", name, err)
			}
			opts[name] = b
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	written := map[string]bool{}
	write := func(name string, raw []byte) {
		written[name] = true
		if raw == nil {
			return
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		n, _ := json.Marshal(name)
		buf.Write(n)
		buf.WriteByte(':')
		buf.Write(raw)
	}
	// fromOptions writes the option name, or def when the workload has
	// none of that name; it reports whether the options had it.
	fromOptions := func(name string, def any) error {
		if raw, ok := opts[name]; ok {
			write(name, raw)
			return nil
		}
		if def == nil {
			return nil
		}
		b, err := json.Marshal(def)
		write(name, b)
		return err
	}
	for _, k := range keyFields(reflect.ValueOf(&r).Elem()) {
		name, omit := jsonName(k.field)
		if name == "" {
			continue
		}
		if name == "no-load" {
			if err := fromOptions(legacyWarmup, false); err != nil {
				return nil, err
			}
		}
		if omit && empty(k.value) {
			continue
		}
		b, err := json.Marshal(k.value.Interface())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		write(name, b)
	}
	for _, l := range legacyKeys {
		if err := fromOptions(l.key, l.value); err != nil {
			return nil, err
		}
	}
	for _, name := range optOrder {
		if !written[name] {
			write(name, opts[name])
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// jsonName is a field's JSON key and whether it is left out when empty;
// "" for a field not written.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(","+opts+",", ",omitempty,")
}

// empty is encoding/json's omitempty test.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// Value is the value of r's key as a flag would take it: from its
// options, or, for a Run read from JSON whose options were not decoded
// (a result read back), from the JSON; "" for a key r does not have.
func (r *Run) Value(key string) string {
	fields, _ := r.keyed()
	if v, ok := fields[key]; ok {
		return fmt.Sprint(v.Interface())
	}
	var m map[string]any
	if r.Options == nil && json.Unmarshal(r.raw, &m) == nil && m[key] != nil {
		return fmt.Sprint(m[key])
	}
	return ""
}

// MarshalYAML writes r as a -f file of every key, Run's and its options'.
func (r Run) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	keys, _ := r.keys()
	for _, k := range keys {
		var v yaml.Node
		if err := v.Encode(k.value.Interface()); err != nil {
			return nil, fmt.Errorf("%s: %w", k.name, err)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k.name}, &v)
	}
	return n, nil
}
