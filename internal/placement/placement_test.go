package placement

import (
	"slices"
	"strings"
	"testing"
)

func TestPlacementSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode    Mode
		cpus    CPUSet
		app, db string
		err     string
	}{
		{mode: Mixed, cpus: CPUSet{0, 1}, app: "0", db: "0"},
		{mode: Dual, cpus: CPUSet{0, 1}, app: "0", db: "1"},
		{mode: Mixed, cpus: CPUSet{0, 1, 2, 3}, app: "0-1", db: "0-1"},
		{mode: Dual, cpus: CPUSet{0, 1, 2, 3}, app: "0-1", db: "2-3"},
		// Two machines of the same size: an odd CPU is left out.
		{mode: Dual, cpus: CPUSet{0, 1, 2}, app: "0", db: "1"},
		// The CPUs this process may use, whichever they are.
		{mode: Dual, cpus: CPUSet{2, 3, 6, 7}, app: "2-3", db: "6-7"},
		{mode: Mixed, cpus: CPUSet{5}, app: "5", db: "5"},
		{mode: Dual, cpus: CPUSet{5}, err: "needs 2 CPUs; this process may use 1 (5)"},
		{mode: Hosts, cpus: CPUSet{0, 1}, app: "", db: "0-1"},
		{mode: "both", cpus: CPUSet{0, 1}, err: `--placement "both": allowed: mixed, dual, hosts`},
	} {
		p, err := Split(tc.mode, tc.cpus)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Split(%s, %s) = %v, want error containing %q", tc.mode, tc.cpus, err, tc.err)
			}
			continue
		}
		if err != nil || p.App.String() != tc.app || p.DB.String() != tc.db || p.Mode != tc.mode {
			t.Errorf("Split(%s, %s) = app %s db %s (%v), want app %s db %s", tc.mode, tc.cpus, p.App, p.DB, err, tc.app, tc.db)
		}
	}
}

func TestPlacementCPUList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		list string
		set  CPUSet
	}{
		{"0", CPUSet{0}},
		{"0-1", CPUSet{0, 1}},
		{"0,2,4-7", CPUSet{0, 2, 4, 5, 6, 7}},
		{"1,3", CPUSet{1, 3}},
	} {
		got, err := ParseList(tc.list)
		if err != nil || !slices.Equal(got, tc.set) {
			t.Errorf("ParseList(%q) = %v, %v; want %v", tc.list, got, err, tc.set)
		}
		if s := tc.set.String(); s != tc.list {
			t.Errorf("%v.String() = %q, want %q", []int(tc.set), s, tc.list)
		}
	}
	for _, bad := range []string{"x", "3-1", "1-"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q): no error", bad)
		}
	}
}
