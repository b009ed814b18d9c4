package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/workload"
)

// workloadAnnotation marks a workload's own command (run rubis): its
// value is the workload's name.
const workloadAnnotation = "tierbench-workload"

// workloadCommands gives a command that takes a WORKLOAD (load, run,
// serve, drive) a subcommand per registered workload, each with newCmd's
// flags and the workload's options' (decision 0019), its defaults shown
// and examples: `run rubis --help` says what RUBiS takes. The command
// itself keeps newCmd's flags for its help, and refuses a name no
// workload has, suggesting the closest.
func workloadCommands(env *Env, newCmd func() (*cobra.Command, *runFlags)) *cobra.Command {
	parent, _ := newCmd()
	verb := parent.Name()
	parent.Long += "\n\n'tierbench " + verb + " WORKLOAD --help' lists the workload's own flags and defaults."
	knowWorkloadFlags(env, parent.Flags())
	for _, name := range env.Workloads.Names() {
		w, _ := env.Workloads.Get(name)
		info := w.Info()
		cmd, f := newCmd()
		run := cmd.RunE
		cmd.Use = name
		cmd.Short = info.Title
		cmd.Annotations = map[string]string{workloadAnnotation: name}
		cmd.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("one WORKLOAD, got %d arguments (%s %s); available: %s", len(args)+1, name, strings.Join(args, " "), strings.Join(env.Workloads.Names(), ", "))
			}
			return nil
		}
		cmd.RunE = func(c *cobra.Command, _ []string) error { return run(c, []string{name}) }
		showDefaults(cmd.Flags(), info)
		f.options = config.BindOptions(cmd.Flags(), info.Options)
		cmd.Example = examples(verb, info)
		parent.AddCommand(cmd)
	}
	return parent
}

// knowWorkloadFlags binds every workload's options on the parent command,
// hidden, for cobra to read a command line that gives a workload's flag
// before its name (run --skip-images rubis): cobra takes an unknown
// --flag as one that has a value, which would swallow the workload's
// name. The workload's own command parses them.
func knowWorkloadFlags(env *Env, fs *pflag.FlagSet) {
	for name := range bindRawOptions(env, fs) {
		_ = fs.MarkHidden(name) // bound just above: it exists
	}
}

// showDefaults makes the help of the flags whose defaults are the
// workload's show them (RUBiS's ramp-up of 10s); the values are not set.
func showDefaults(fs *pflag.FlagSet, info workload.Info) {
	cfg := config.New(info.Name, info.Defaults)
	for _, name := range []string{"clients", "server-threads", "iterations", "duration", "ramp-up", "ramp-down", "persistence"} {
		if fl := fs.Lookup(name); fl != nil {
			fl.DefValue = cfg.Value(name)
		}
	}
}

// examples are two of verb's command lines for the workload.
func examples(verb string, info workload.Info) string {
	n := info.Name
	switch verb {
	case "run":
		return fmt.Sprintf("  # the reference's settings, on a fresh SQLite database\n  tierbench run %s\n  # on PostgreSQL, with the workload's own flags\n  tierbench run %s --db postgres://root@127.0.0.1:5432/test %s", n, n, info.Example)
	case "load":
		return fmt.Sprintf("  tierbench load %s --db sqlite:%s.db\n  tierbench load %s --db postgres://root@127.0.0.1:5432/test --scale 2", n, n, n)
	case "serve":
		return fmt.Sprintf("  tierbench load %s --db sqlite:%s.db\n  tierbench serve %s --db sqlite:%s.db --listen 127.0.0.1:8080", n, n, n, n)
	case "drive":
		return fmt.Sprintf("  tierbench drive %s --target http://127.0.0.1:8080 --duration 30s\n  tierbench drive %s --target http://127.0.0.1:8080 --duration 30s --agents 2 --broker nats://127.0.0.1:4222", n, n)
	}
	return ""
}

// workloadsWithFlag are the workloads whose options have the flag.
func workloadsWithFlag(env *Env, flag string) []string {
	var out []string
	for _, name := range env.Workloads.Names() {
		w, _ := env.Workloads.Get(name)
		if slices.Contains(config.OptionKeys(w.Info().Options), flag) {
			out = append(out, name)
		}
	}
	return out
}

// otherWorkloadsFlag says, for an unknown flag given to a workload's
// command, which workloads have it ("--ir applies to ecperf only, not
// rubis"); nil when none has.
func otherWorkloadsFlag(env *Env, cmd *cobra.Command, err error) error {
	name, ok := cmd.Annotations[workloadAnnotation]
	if !ok {
		return nil
	}
	flag, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return nil
	}
	only := workloadsWithFlag(env, flag)
	if len(only) == 0 {
		return nil
	}
	return fmt.Errorf("--%s applies to %s only, not %s", flag, strings.Join(only, ", "), name)
}

// rawOptions are the options of every workload as flags of a command
// that learns its workload later (sweep, from its file): each keeps the
// text given, set later as the -f file's value of the key would be.
type rawOptions map[string]*rawOption

type rawOption struct {
	value  string
	isBool bool
}

func (o *rawOption) String() string     { return o.value }
func (o *rawOption) Set(s string) error { o.value = s; return nil }
func (o *rawOption) Type() string {
	if o.isBool {
		return "bool"
	}
	return "value"
}

// bindRawOptions binds the options of every workload the command does
// not define itself, each helped by the first workload's help.
func bindRawOptions(env *Env, fs *pflag.FlagSet) rawOptions {
	out := rawOptions{}
	for _, name := range env.Workloads.Names() {
		w, _ := env.Workloads.Get(name)
		probe := pflag.NewFlagSet(name, pflag.ContinueOnError)
		config.BindOptions(probe, w.Info().Options)
		probe.VisitAll(func(fl *pflag.Flag) {
			if fs.Lookup(fl.Name) != nil {
				if _, ok := out[fl.Name]; ok {
					fs.Lookup(fl.Name).Usage += "; " + name + ": " + fl.Usage
				}
				return
			}
			o := &rawOption{isBool: fl.Value.Type() == "bool"}
			out[fl.Name] = o
			f := fs.VarPF(o, fl.Name, "", name+": "+fl.Usage)
			if o.isBool {
				f.NoOptDefVal = "true"
			}
		})
	}
	return out
}

// set sets on cfg the options given, as a -f file's keys.
func (o rawOptions) set(cfg *config.Run, given []string) error {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, key := range given {
		if v, ok := o[key]; ok {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: v.value})
		}
	}
	if len(n.Content) == 0 {
		return nil
	}
	return cfg.SetKeys(n)
}
