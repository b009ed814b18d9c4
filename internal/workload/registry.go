package workload

import (
	"fmt"
	"sort"
	"strings"
)

// Registry holds the workloads of a build; main builds it.
type Registry struct {
	byName map[string]Workload
}

// NewRegistry registers ws, rejecting duplicate names and malformed mixes.
func NewRegistry(ws ...Workload) (*Registry, error) {
	r := &Registry{byName: make(map[string]Workload)}
	for _, w := range ws {
		info := w.Info()
		if _, dup := r.byName[info.Name]; dup {
			return nil, fmt.Errorf("workload %q registered twice", info.Name)
		}
		if err := info.Mix.Validate(len(info.Operations)); err != nil {
			return nil, fmt.Errorf("workload %q: %w", info.Name, err)
		}
		r.byName[info.Name] = w
	}
	return r, nil
}

// Names in order.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get a workload by name, with an error that lists the known ones.
func (r *Registry) Get(name string) (Workload, error) {
	if w, ok := r.byName[name]; ok {
		return w, nil
	}
	return nil, fmt.Errorf("unknown workload %q; available: %s", name, strings.Join(r.Names(), ", "))
}
