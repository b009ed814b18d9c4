package config

import (
	"fmt"
	"reflect"
	"time"

	"github.com/spf13/pflag"
)

// BindOptions binds a flag for each key of a workload's options (a
// struct value; see workload.Options): named by the key, helped by the
// field's help tag, defaulting to the field's value in defaults, which
// the help shows. A flag the command defines itself keeps its meaning
// (drive's --broker is its agents'). values are the options as the flags
// set them.
func BindOptions(fs *pflag.FlagSet, defaults any) (values func() any) {
	if defaults == nil {
		return func() any { return nil }
	}
	opts := reflect.New(reflect.TypeOf(defaults)).Elem()
	opts.Set(reflect.ValueOf(defaults))
	for _, k := range keyFields(opts) {
		if fs.Lookup(k.name) != nil {
			continue
		}
		help := k.field.Tag.Get("help")
		switch p := k.value.Addr().Interface().(type) {
		case pflag.Value:
			fs.Var(p, k.name, help)
		case *Duration:
			fs.DurationVar((*time.Duration)(p), k.name, time.Duration(*p), help)
		case *string:
			fs.StringVar(p, k.name, *p, help)
		case *int:
			fs.IntVar(p, k.name, *p, help)
		case *uint64:
			fs.Uint64Var(p, k.name, *p, help)
		case *float64:
			fs.Float64Var(p, k.name, *p, help)
		case *bool:
			fs.BoolVar(p, k.name, *p, help)
		default:
			// A workload's options.go is checked by its tests: an
			// unsupported type is the author's to fix, at start-up.
			panic(fmt.Sprintf("option %s: no flag for a %s", k.name, k.field.Type))
		}
	}
	return opts.Interface
}
