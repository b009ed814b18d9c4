package placement

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPUSet is a set of CPU numbers, ascending.
type CPUSet []int

// String writes the set as Linux's CPU lists do (taskset -c,
// Cpus_allowed_list): "0", "2-3", "0,2,4-7".
func (s CPUSet) String() string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			fmt.Fprintf(&b, "-%d", s[j])
		}
		i = j + 1
	}
	return b.String()
}

// Words names the set for a sentence: "CPU 1", "CPUs 2-3".
func (s CPUSet) Words() string {
	if len(s) == 1 {
		return "CPU " + s.String()
	}
	return "CPUs " + s.String()
}

// ParseList reads a Linux CPU list ("0-1,3").
func ParseList(list string) (CPUSet, error) {
	var s CPUSet
	list = strings.TrimSpace(list)
	if list == "" {
		return s, nil
	}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %v", list, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: bad range %q", list, part)
			}
		}
		for c := a; c <= b; c++ {
			s = append(s, c)
		}
	}
	slices.Sort(s)
	return slices.Compact(s), nil
}

// Allowed is the CPUs this process's calling thread may run on.
func Allowed() (CPUSet, error) {
	var m unix.CPUSet
	if err := unix.SchedGetaffinity(0, &m); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return fromMask(&m), nil
}

func fromMask(m *unix.CPUSet) CPUSet {
	var s CPUSet
	for c := 0; c < len(m)*64; c++ {
		if m.IsSet(c) {
			s = append(s, c)
		}
	}
	return s
}

func (s CPUSet) mask() *unix.CPUSet {
	var m unix.CPUSet
	for _, c := range s {
		m.Set(c)
	}
	return &m
}
