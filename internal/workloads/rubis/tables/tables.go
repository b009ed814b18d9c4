// Package tables holds the RUBiS client's two transition tables, as shipped
// with the original client (tab-separated, Excel export), embedded in the
// binary. It depends on the workload package's table parser only.
package tables

import (
	"bytes"
	"embed"
	"fmt"
	"strings"

	"github.com/tierbench/tierbench/internal/workload"
)

// The mixes, by the original's file names.
const (
	// Bidding is the default transition set: the bidding mix, with
	// read-write interactions.
	Bidding = "default_transitions.txt"
	// Browsing is the browse-only transition set: read-only.
	Browsing = "browse_only_transitions.txt"
)

//go:embed default_transitions.txt browse_only_transitions.txt
var files embed.FS

// Names are the tables shipped, bidding first.
func Names() []string { return []string{Bidding, Browsing} }

// Load parses a shipped table.
func Load(name string) (*workload.Transitions, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("transition table %q: none such (have %s)", name, strings.Join(Names(), ", "))
	}
	t, err := workload.ParseTransitions(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}
