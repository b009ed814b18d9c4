// Package sweep runs a grid of configurations: a base run configuration,
// experiments that fix some settings and vary others along axes, and
// repetitions of every point. Each run gets a repopulated database and a
// fresh container (the paper's routine); results are kept per run, and
// each experiment is summarised as a table and a CSV file.
//
// sweep depends on config, runner and result; only the CLI depends on it.
package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/inputfile"
)

// File is a sweep definition as written in YAML.
type File struct {
	Name  string `yaml:"name"`
	Title string `yaml:"title"`
	// Base is a run configuration: the keys of `tierbench run -f`.
	Base        yaml.Node    `yaml:"base"`
	Repetitions int          `yaml:"repetitions"`
	Experiments []Experiment `yaml:"experiments"`
}

// Experiment fixes settings and varies others.
type Experiment struct {
	Name  string `yaml:"name"`
	Title string `yaml:"title"`
	// Set overrides the base for every point of the experiment.
	Set yaml.Node `yaml:"set"`
	// Variants are named sets of settings that vary together, compared as
	// one axis ahead of the others: settings that only make sense in
	// combination (RUBiS's style with its protocol and tiers) without a
	// grid of their meaningless products. Each is a mapping of run keys
	// with a `name` that labels its points "variant=NAME".
	Variants []yaml.Node `yaml:"variants"`
	// Axes map a setting to the values it takes, in order; several axes
	// multiply.
	Axes yaml.Node `yaml:"axes"`
	// Paper holds the reference's figures for the points, by the first
	// axis's value, to print beside the measured ones.
	Paper map[string]float64 `yaml:"paper"`
}

// Point is one configuration of an experiment.
type Point struct {
	Experiment *Experiment
	// Values are the axes' values, in axis order, as "key=value".
	Values []string
	Config config.Run
}

// Label names the point: "pool=20%".
func (p Point) Label() string { return strings.Join(p.Values, " ") }

// Parse reads a sweep file strictly (unknown keys are errors).
func Parse(path string) (*File, error) {
	data, err := inputfile.Read(context.Background(), path, "a sweep file", config.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// An empty file decodes as EOF: it lacks a name and experiments.
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", path, yamlProblem(err))
	}
	// A document after the first would be ignored, its keys unchecked.
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document (---); a sweep is one", path)
	}
	deref(&f.Base)
	for i := range f.Experiments {
		e := &f.Experiments[i]
		deref(&e.Set)
		deref(&e.Axes)
		for j := range e.Variants {
			deref(&e.Variants[j])
		}
	}
	if f.Name == "" || len(f.Experiments) == 0 {
		return nil, fmt.Errorf("%s: a sweep needs a name and at least one experiment", path)
	}
	if !fileSafe.MatchString(f.Name) {
		return nil, fmt.Errorf("%s: name %q: use letters, digits, '.', '_' and '-' (it names the results directory)", path, f.Name)
	}
	if f.Repetitions == 0 {
		f.Repetitions = 1
	}
	if f.Repetitions < 0 {
		return nil, fmt.Errorf("%s: repetitions %d: must be at least 1", path, f.Repetitions)
	}
	seen := make(map[string]bool)
	for _, e := range f.Experiments {
		if e.Name == "" || seen[e.Name] {
			return nil, fmt.Errorf("%s: every experiment needs a unique name (%q)", path, e.Name)
		}
		if !fileSafe.MatchString(e.Name) {
			return nil, fmt.Errorf("%s: experiment %q: use letters, digits, '.', '_' and '-' (it names a directory and a CSV file of the results)", path, e.Name)
		}
		seen[e.Name] = true
		if _, err := variantAxis(&e); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	return &f, nil
}

// VariantAxis is the label's key of a variant's points.
const VariantAxis = "variant"

// variantAxis reads an experiment's variants as the axis ahead of the
// others (nil when it has none): mappings, each with a unique name safe in
// a file name that labels its points; the rest of each mapping is run
// keys, checked when the points are made.
func variantAxis(e *Experiment) (*axis, error) {
	if len(e.Variants) == 0 {
		return nil, nil
	}
	ax := &axis{key: VariantAxis}
	for _, v := range e.Variants {
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("experiment %s: a variant must be a mapping of settings with a name", e.Name)
		}
		settings := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		name := ""
		for i := 0; i < len(v.Content); i += 2 {
			k, val := v.Content[i], v.Content[i+1]
			if k.Value != "name" {
				settings.Content = append(settings.Content, k, val)
				continue
			}
			if name != "" || val.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("experiment %s: a variant's name must be given once, as a word", e.Name)
			}
			name = val.Value
		}
		if !fileSafe.MatchString(name) {
			return nil, fmt.Errorf("experiment %s: variant name %q: use letters, digits, '.', '_' and '-' (it names the variant's result files)", e.Name, name)
		}
		if slices.ContainsFunc(ax.values, func(o axisValue) bool { return o.label == name }) {
			return nil, fmt.Errorf("experiment %s: two variants are named %s", e.Name, name)
		}
		ax.values = append(ax.values, axisValue{label: name, settings: settings})
	}
	return ax, nil
}

// deref replaces an alias by what it names, so that experiments can share
// a set, an axis or a list of variants (`variants: *styles`). Only the
// top: an alias deeper inside stays one and is refused where a value is
// read, so a few lines cannot expand into more settings than memory holds.
func deref(n *yaml.Node) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		anchor := n.Alias
		*n = *anchor
		n.Anchor = ""
	}
}

// fileSafe matches names that are safe as one path element: sweep and
// experiment names name the directories and files of the results.
var fileSafe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// MaxPoints bounds the points of one experiment: axes multiply, and a few
// lines of YAML can ask for more runs than would ever finish.
const MaxPoints = 10_000

// yamlProblem puts a YAML error on one line: yaml.v3 gives each decoding
// problem a line of its own and quotes keys and values as written.
func yamlProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = strings.Join(te.Errors, "; ")
	}
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(msg)
}

// Workload is the base's workload name, which the defaults depend on.
func (f *File) Workload() (string, error) {
	var w struct {
		Workload string `yaml:"workload"`
	}
	if err := f.Base.Decode(&w); err != nil || w.Workload == "" {
		return "", fmt.Errorf("sweep %s: base needs a workload", f.Name)
	}
	return w.Workload, nil
}

// Points expands every experiment over its variants and axes: the
// workload's defaults (base), then the file's base, then flags (the command
// line's settings), then the experiment's settings, its variant's, and its
// axis values.
func (f *File) Points(base config.Run, flags func(*config.Run) error) ([]Point, error) {
	return f.points(base, flags, false)
}

// Labels are the points with their labels (Point.Label), for a reader of
// a sweep's results that does not know its workload's options: a key no
// common setting has is left out of each point's configuration, not
// refused (the sweep refused it before it ran).
func (f *File) Labels() ([]Point, error) {
	return f.points(config.Run{}, nil, true)
}

func (f *File) points(base config.Run, flags func(*config.Run) error, labelsOnly bool) ([]Point, error) {
	overlay := func(cfg *config.Run, n *yaml.Node, where string) error {
		if labelsOnly {
			n = knownKeys(cfg, n)
		}
		return overlay(cfg, n, where)
	}
	if err := overlay(&base, &f.Base, "base"); err != nil {
		return nil, err
	}
	if flags != nil {
		if err := flags(&base); err != nil {
			return nil, err
		}
	}
	var points []Point
	for i := range f.Experiments {
		e := &f.Experiments[i]
		cfg := base
		if err := overlay(&cfg, &e.Set, e.Name+" set"); err != nil {
			return nil, err
		}
		keys := cfg.Keys()
		if labelsOnly {
			keys = nil
		}
		axes, err := axesOf(e, keys)
		if err != nil {
			return nil, err
		}
		grid := []Point{{Experiment: e, Config: cfg}}
		for _, ax := range axes {
			var next []Point
			for _, p := range grid {
				for _, v := range ax.values {
					q := Point{Experiment: e, Config: p.Config, Values: append(slices.Clone(p.Values), ax.key+"="+v.label)}
					if err := overlay(&q.Config, v.settings, e.Name+" "+ax.key+" "+v.label); err != nil {
						return nil, err
					}
					next = append(next, q)
				}
			}
			grid = next
		}
		points = append(points, grid...)
	}
	return points, nil
}

// axis is a setting, or a set of them (the variants), and the values it
// takes in order.
type axis struct {
	key    string
	values []axisValue
}

// axisValue labels a point ("pool=20%", "variant=entity-grpc") and holds
// the run keys it sets.
type axisValue struct {
	label    string
	settings *yaml.Node
}

// axesOf reads an experiment's variants and axes, in the order they
// multiply.
func axesOf(e *Experiment, keys []string) ([]axis, error) {
	var out []axis
	variants, err := variantAxis(e)
	if err != nil {
		return nil, err
	}
	points := 1
	if variants != nil {
		out = append(out, *variants)
		if points = len(variants.values); points > MaxPoints {
			return nil, fmt.Errorf("experiment %s: its variants make more than %d points", e.Name, MaxPoints)
		}
	}
	if e.Axes.Kind == 0 {
		return out, nil
	}
	if e.Axes.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("experiment %s: axes must map a setting to a list of values", e.Name)
	}
	for i := 0; i < len(e.Axes.Content); i += 2 {
		k, v := e.Axes.Content[i], e.Axes.Content[i+1]
		if keys != nil && !slices.Contains(keys, k.Value) {
			return nil, fmt.Errorf("experiment %s: axis %q is not a setting (keys are those of `tierbench run -f`: %s)", e.Name, k.Value, strings.Join(keys, ", "))
		}
		// A YAML mapping decoded into a node keeps a repeated key; as two
		// axes it would make points that differ in their labels only.
		if slices.ContainsFunc(out, func(a axis) bool { return a.key == k.Value }) {
			return nil, fmt.Errorf("experiment %s: axis %s is given twice", e.Name, k.Value)
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, fmt.Errorf("experiment %s: axis %s needs a list of values", e.Name, k.Value)
		}
		// A value listed twice would run twice under one label, and its
		// second run's result file would replace the first's.
		for j, x := range v.Content {
			if slices.ContainsFunc(v.Content[:j], func(y *yaml.Node) bool { return valueText(y) == valueText(x) }) {
				return nil, fmt.Errorf("experiment %s: axis %s lists %s twice", e.Name, k.Value, valueText(x))
			}
		}
		if points *= len(v.Content); points > MaxPoints {
			return nil, fmt.Errorf("experiment %s: its variants and axes make more than %d points", e.Name, MaxPoints)
		}
		ax := axis{key: k.Value}
		for _, x := range v.Content {
			ax.values = append(ax.values, axisValue{label: valueText(x), settings: mapping(k, x)})
		}
		out = append(out, ax)
	}
	return out, nil
}

// valueText is an axis value as a point's label shows it: a scalar as
// written, a list (an entity axis's) in YAML's flow style, so that
// different lists label different points.
func valueText(v *yaml.Node) string {
	if v.Kind == yaml.ScalarNode {
		return v.Value
	}
	flow := *v
	flow.Style = yaml.FlowStyle
	b, err := yaml.Marshal(&flow)
	if err != nil {
		return v.Value
	}
	return strings.TrimSpace(string(b))
}

func mapping(k, v *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, v}}
}

// overlay sets a mapping of run keys on cfg, strictly, as a -f file's.
func overlay(cfg *config.Run, n *yaml.Node, where string) error {
	if n.Kind == 0 {
		return nil
	}
	if err := cfg.SetKeys(n); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// knownKeys is the mapping n without the keys cfg does not have.
func knownKeys(cfg *config.Run, n *yaml.Node) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return n
	}
	keys := cfg.Keys()
	out := *n
	out.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if slices.Contains(keys, n.Content[i].Value) {
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return &out
}
