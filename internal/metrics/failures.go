package metrics

import (
	"maps"
	"slices"
	"unicode/utf8"
)

// FailureClass is one class of an operation's failures: how many, and the
// message of the first, so that a result says why its errors happened.
type FailureClass struct {
	Count  int64  `json:"count"`
	Sample string `json:"sample"`
}

// Failures are an operation's failures by class ("disk_full",
// "connection_lost", "http_404", …); nil when it had none.
type Failures map[string]FailureClass

// Bounds that keep a run failing in every way from growing without end.
const (
	// MaxFailureClasses per operation; the failures of any further class
	// are counted under OtherFailures.
	MaxFailureClasses = 32
	// MaxSampleBytes bounds a sample message.
	MaxSampleBytes = 300
	OtherFailures  = "other"
)

// add counts n failures of class, keeping the first sample.
func (f *Failures) add(class string, n int64, sample func() string) {
	if *f == nil {
		*f = make(Failures)
	}
	c, ok := (*f)[class]
	if !ok && len(*f) >= MaxFailureClasses {
		class = OtherFailures
		c, ok = (*f)[class]
	}
	if !ok {
		c.Sample = truncate(sample())
	}
	c.Count += n
	(*f)[class] = c
}

// Merge adds x's failures to f exactly; where both have a class, f's
// sample stays.
func (f *Failures) Merge(x Failures) {
	for _, class := range sortedKeys(x) {
		c := x[class]
		f.add(class, c.Count, func() string { return c.Sample })
	}
}

// Total is the number of failures of all classes.
func (f Failures) Total() int64 {
	var n int64
	for _, c := range f {
		n += c.Count
	}
	return n
}

func sortedKeys(f Failures) []string {
	keys := make([]string, 0, len(f))
	for k := range maps.Keys(f) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// truncate cuts s to MaxSampleBytes on a character boundary.
func truncate(s string) string {
	if len(s) <= MaxSampleBytes {
		return s
	}
	cut := MaxSampleBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// RecordFailure notes why a failed operation of the steady state failed.
// Only the error path calls it, after Record: success costs nothing more.
// msg is called for the first failure of a class only.
func (s *Shard) RecordFailure(op int, class string, msg func() string) {
	s.mu.Lock()
	s.ops[op].failures.add(class, 1, msg)
	s.mu.Unlock()
}
