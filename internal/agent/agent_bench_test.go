package agent

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The coordinator's cost per progress report: with 10 agents reporting
// once a second, ns/op × 10 / 1e9 is the share of one core it takes
// (the bound: 1%, i.e. 1 ms per report).
func BenchmarkCoordinatorProgress(b *testing.B) {
	c := &coordination{reports: map[string]*Report{}, latest: map[string]Progress{}, chunks: map[string]*assembly{}, progress: func(int64, int64) {}}
	var msgs []*nats.Msg
	for i := range 10 {
		id := fmt.Sprintf("agent%d", i)
		c.reports[id] = &Report{LastHeard: time.Now()}
		data, _ := json.Marshal(Progress{Agent: id, Ops: 123456789, Errors: 12})
		msgs = append(msgs, &nats.Msg{Subject: progressSubject("run"), Data: data})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.onProgress(msgs[i%len(msgs)])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*10/1e9*100, "%core@10agents")
}
