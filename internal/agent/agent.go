package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/metrics"
)

// Exec runs a task and returns its result file's content. It calls
// started once its driver runs, with its recorder.
type Exec func(ctx context.Context, t Task, started func(Recorder)) ([]byte, error)

// Recorder is what an agent reports from: *metrics.Recorder.
type Recorder interface {
	Completed() (ops, errors int64)
	Committed() (succeeded, inDoubt []int64)
	Sealed(from int) []metrics.Second
}

// Serve answers the coordinators on nc as the agent hello describes, one
// run at a time, until ctx is done. log receives a line per run.
func Serve(ctx context.Context, nc *nats.Conn, hello Hello, exec Exec, log io.Writer) error {
	a := &agent{nc: nc, hello: hello, exec: exec, log: log}
	var subs []*nats.Subscription
	for subject, handler := range map[string]nats.MsgHandler{
		subjectDiscover:        a.discover,
		clockSubject(hello.ID): a.clock,
		startSubject(hello.ID): a.start,
	} {
		sub, err := nc.Subscribe(subject, handler)
		if err != nil {
			return fmt.Errorf("agent: subscribe %s: %w", subject, err)
		}
		subs = append(subs, sub)
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	<-ctx.Done()
	for _, s := range subs {
		s.Unsubscribe()
	}
	a.mu.Lock()
	cancel := a.cancel
	a.mu.Unlock()
	if cancel != nil {
		cancel() // the run under way stops and still reports
	}
	a.runs.Wait()
	return nil
}

type agent struct {
	nc    *nats.Conn
	hello Hello
	exec  Exec
	log   io.Writer

	mu     sync.Mutex
	busy   bool
	cancel context.CancelFunc
	runs   sync.WaitGroup
}

func respond(m *nats.Msg, v any) {
	b, _ := json.Marshal(v) // our own types: they marshal
	m.Respond(b)
}

func (a *agent) discover(m *nats.Msg) {
	a.mu.Lock()
	busy := a.busy
	a.mu.Unlock()
	if !busy {
		respond(m, a.hello)
	}
}

func (a *agent) clock(m *nats.Msg) { respond(m, clockReply{UnixNano: time.Now().UnixNano()}) }

func (a *agent) start(m *nats.Msg) {
	var t Task
	if err := json.Unmarshal(m.Data, &t); err != nil || t.RunID == "" || t.Parts < 1 || t.Part < 0 || t.Part >= t.Parts {
		respond(m, reply{Error: fmt.Sprintf("agent %s: not a task: %v", a.hello.ID, err)})
		return
	}
	a.mu.Lock()
	if a.busy {
		a.mu.Unlock()
		respond(m, reply{Error: fmt.Sprintf("agent %s is running another drive", a.hello.ID)})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.busy, a.cancel = true, cancel
	a.runs.Add(1)
	a.mu.Unlock()
	abort, err := a.nc.Subscribe(abortSubject(t.RunID), func(*nats.Msg) { cancel() })
	if err != nil {
		a.finish(cancel)
		respond(m, reply{Error: fmt.Sprintf("agent %s: %v", a.hello.ID, err)})
		return
	}
	respond(m, reply{})
	fmt.Fprintf(a.log, "run %s: %s, part %d of %d of the terminals, against %s, starting %s\n", t.RunID, t.Workload, t.Part+1, t.Parts, t.Target,
		time.Unix(0, t.StartAt).Format("15:04:05.000"))
	go func() {
		defer a.finish(cancel)
		defer abort.Unsubscribe()
		out := a.run(ctx, t)
		if out.Error != "" {
			fmt.Fprintf(a.log, "run %s: %s\n", t.RunID, out.Error)
		} else {
			fmt.Fprintf(a.log, "run %s: done, result sent\n", t.RunID)
		}
	}()
}

func (a *agent) finish(cancel context.CancelFunc) {
	cancel()
	a.mu.Lock()
	a.busy, a.cancel = false, nil
	a.mu.Unlock()
	a.runs.Done()
}

// run executes t, reporting progress every second from acceptance to the
// end (the coordinator reads silence as loss), then sends the outcome.
// Cut off from the broker for CutOffAfter, it stops the drive.
func (a *agent) run(ctx context.Context, t Task) Outcome {
	ctx, cutOff := context.WithCancel(ctx)
	defer cutOff()
	var mu sync.Mutex
	var rec Recorder
	sent := 0 // seconds sent so far
	report := func() {
		p := Progress{Agent: a.hello.ID}
		mu.Lock()
		if rec != nil {
			p.At = time.Now().UnixNano()
			p.Ops, p.Errors = rec.Completed()
			p.Succeeded, p.InDoubt = rec.Committed()
			p.Seconds = rec.Sealed(sent)
			sent += len(p.Seconds)
		}
		mu.Unlock()
		b, _ := json.Marshal(p)
		a.nc.Publish(progressSubject(t.RunID), b)
	}
	stop := make(chan struct{})
	var ticking sync.WaitGroup
	ticking.Go(func() {
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		acked := time.Now() // when the broker last acknowledged a report
		for {
			report()
			if a.nc.FlushTimeout(ProgressInterval/2) == nil {
				acked = time.Now()
			} else if ctx.Err() == nil && time.Since(acked) > CutOffAfter {
				fmt.Fprintf(a.log, "run %s: the broker has acknowledged no report for %v: stopping the drive, the coordinator counts this agent lost\n", t.RunID, time.Since(acked).Round(time.Second))
				cutOff()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	res, err := a.exec(ctx, t, func(r Recorder) {
		mu.Lock()
		rec = r
		mu.Unlock()
	})
	close(stop)
	ticking.Wait()
	// The run's snapshot has sealed its last seconds: they go before the
	// result, so the live view ends with every second.
	report()
	out := Outcome{Agent: a.hello.ID, Result: res}
	if err != nil {
		out.Error = err.Error()
	}
	b, _ := json.Marshal(out)
	parts := chunks(b)
	for i, p := range parts {
		msg := nats.NewMsg(resultAgentSubject(t.RunID, a.hello.ID))
		msg.Header.Set(headerChunk, strconv.Itoa(i))
		msg.Header.Set(headerChunks, strconv.Itoa(len(parts)))
		msg.Data = p
		if err := a.nc.PublishMsg(msg); err != nil {
			out.Error = fmt.Sprintf("send result: %v", err)
			return out
		}
	}
	if err := a.nc.Flush(); err != nil {
		out.Error = fmt.Sprintf("send result: %v", err)
	}
	return out
}
