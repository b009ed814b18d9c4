package metrics

import (
	"testing"
	"time"
)

// BenchmarkShardRecord is the recording cost of one operation: lock, the
// end-to-end and per-second histograms, counters; with Split, queue and
// service too.
func BenchmarkShardRecord(b *testing.B) {
	for _, split := range []bool{false, true} {
		name := "end-to-end"
		if split {
			name = "queue+service"
		}
		b.Run(name, func(b *testing.B) {
			r := NewRecorder([]string{"a", "b"}, 1)
			s := r.Shard(0)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				d := time.Duration(100+i%5000) * time.Microsecond
				s.Record(Sample{Op: i & 1, At: time.Duration(i) * time.Microsecond, Latency: d, Queue: d / 3, Service: d - d/3, Split: split, Measured: true})
			}
		})
	}
}
