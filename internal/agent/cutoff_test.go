package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/metrics"
)

// An agent cut off from the broker stops its drive once no report has
// been acknowledged for CutOffAfter, before the coordinator counts it
// lost (LostAfter): what a lost agent commits after its last report is
// then bounded by the time until it is counted lost, as the database
// checks assume.
func TestAgentCutOffStopsDriving(t *testing.T) {
	srv := startNATS(t)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	driving, stopped := make(chan struct{}), make(chan time.Time, 1)
	exec := func(ctx context.Context, _ Task, started func(Recorder)) ([]byte, error) {
		started(metrics.NewRecorder([]string{"op"}, 1))
		close(driving)
		<-ctx.Done()
		stopped <- time.Now()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &strings.Builder{}
	go Serve(ctx, nc, Hello{ID: "cut", Host: "h"}, exec, log)
	coord := natsServerConn(t, nc)
	time.Sleep(100 * time.Millisecond) // the agent subscribes
	b, _ := json.Marshal(Task{RunID: "r", Workload: "w", Parts: 1, StartAt: time.Now().UnixNano()})
	if _, err := coord.Request(startSubject("cut"), b, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	<-driving
	time.Sleep(ProgressInterval + 100*time.Millisecond) // a report acknowledged
	cutAt := time.Now()
	srv.Shutdown()
	select {
	case at := <-stopped:
		// It stops after CutOffAfter without an acknowledgement, within
		// a report's interval and a flush's timeout more.
		if d := at.Sub(cutAt); d < CutOffAfter-ProgressInterval || d > CutOffAfter+ProgressInterval+ProgressInterval/2+500*time.Millisecond {
			t.Errorf("stopped driving %v after the broker went, want about %v", d, CutOffAfter)
		}
	case <-time.After(LostAfter + 2*time.Second):
		t.Fatalf("still driving %v after the broker went: the coordinator has counted it lost", LostAfter+2*time.Second)
	}
}
