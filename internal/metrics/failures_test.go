package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestFailuresByClass(t *testing.T) {
	r := NewRecorder([]string{"a", "b"}, 2)
	fail := func(shard, op int, class, msg string) {
		r.Shard(shard).Record(Sample{Op: op, Outcome: Error, At: time.Second, Measured: true})
		r.Shard(shard).RecordFailure(op, class, func() string { return msg })
	}
	fail(0, 0, "disk_full", "database or disk is full (13)")
	fail(1, 0, "disk_full", "a later message")
	fail(1, 0, "disk_full", "a later message")
	fail(1, 0, "timeout", "deadline exceeded")
	fail(0, 1, "http_404", strings.Repeat("é", MaxSampleBytes))
	snap := r.Snapshot()
	a, b := snap.Ops[0].Failures, snap.Ops[1].Failures
	if a["disk_full"].Count != 3 || a["timeout"].Count != 1 || len(a) != 2 || a.Total() != snap.Ops[0].Errors {
		t.Errorf("operation a's failures %v, errors %d; want disk_full 3, timeout 1", a, snap.Ops[0].Errors)
	}
	if got := a["disk_full"].Sample; got != "database or disk is full (13)" {
		t.Errorf("sample %q, want the first message", got)
	}
	if s := b["http_404"].Sample; len(s) > MaxSampleBytes || !strings.HasSuffix(s, "…") || !strings.HasPrefix(s, "éé") {
		t.Errorf("a long sample is %d bytes (%q…), want at most %d ending in …", len(s), s[:8], MaxSampleBytes)
	}

	// Merging is exact: counts add, the first sample stays.
	var m Failures
	m.Merge(a)
	m.Merge(Failures{"disk_full": {Count: 5, Sample: "other agent"}, "constraint": {Count: 2, Sample: "NOT NULL"}})
	if m["disk_full"] != (FailureClass{Count: 8, Sample: "database or disk is full (13)"}) || m["constraint"].Count != 2 || m.Total() != 11 {
		t.Errorf("merged %v", m)
	}

	// Classes are bounded: beyond the limit they are counted as other.
	var many Failures
	for i := range MaxFailureClasses + 5 {
		many.add(fmt.Sprintf("http_%d", 400+i), 1, func() string { return "x" })
	}
	if len(many) != MaxFailureClasses+1 || many[OtherFailures].Count != 5 || many.Total() != MaxFailureClasses+5 {
		t.Errorf("%d classes, other %d; want %d classes and 5 other", len(many), many[OtherFailures].Count, MaxFailureClasses+1)
	}
}
