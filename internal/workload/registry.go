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

// Names in order; none for a nil registry (a command tree built for its
// help alone).
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get a workload by name in any case (RUBiS, rubis), with an error that
// suggests the closest name and lists the known ones.
func (r *Registry) Get(name string) (Workload, error) {
	if w, ok := r.byName[name]; ok {
		return w, nil
	}
	for n, w := range r.byName {
		if strings.EqualFold(n, name) {
			return w, nil
		}
	}
	suggest := ""
	if n, d := r.closest(name); d <= max(2, len(n)/3) {
		suggest = fmt.Sprintf(" (did you mean %s?)", n)
	}
	return nil, fmt.Errorf("unknown workload %q%s; available: %s", name, suggest, strings.Join(r.Names(), ", "))
}

// closest is the registered name fewest edits from name, and how many.
func (r *Registry) closest(name string) (string, int) {
	best, dist := "", -1
	for _, n := range r.Names() {
		if d := editDistance(strings.ToLower(name), n); dist < 0 || d < dist {
			best, dist = n, d
		}
	}
	return best, dist
}

// editDistance is the Levenshtein distance of a and b, by bytes (the
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}
