package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"

	"github.com/tierbench/tierbench/internal/agent"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/workload"
)

// AgentOptions spread a drive over driver agents (drive --agents).
type AgentOptions struct {
	// Broker is the NATS server the agents listen on.
	Broker string
	// Agents is how many to use; Wait how long to wait for them.
	Agents int
	Wait   time.Duration
	// Tolerate: a lost agent is named in the result, which is then made
	// of the others' terminals, and the drive does not fail for it.
	Tolerate bool
}

// startLead is how far ahead the common start is set: time for every
// agent to build its clients and connect to the target.
const startLead = 3 * time.Second

// ConnectBroker connects to the NATS server of a drive's agents.
func ConnectBroker(broker, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(broker, nats.Name(name), nats.Timeout(5*time.Second), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("--broker %s: %w", broker, err)
	}
	return nc, nil
}

// AgentExec runs a coordinator's task: this process's part of a drive.
func (r *Runner) AgentExec(ctx context.Context, t agent.Task, started func(agent.Recorder)) ([]byte, error) {
	var cfg config.Run
	if err := json.Unmarshal(t.Config, &cfg); err != nil {
		return nil, fmt.Errorf("the coordinator's configuration does not decode: %w", err)
	}
	run := *r
	run.Started = func(p Progress) { started(p.Recorder) }
	res, err := run.Drive(ctx, cfg, t.Target, DriveOptions{TokenFile: t.TokenFile, Share: &driver.Share{Part: t.Part, Parts: t.Parts}, StartAt: time.Unix(0, t.StartAt)})
	if res == nil {
		return nil, err
	}
	b, merr := json.Marshal(res)
	return b, errors.Join(err, merr)
}

// DriveAgents drives a workload served at target with the terminals
// spread over agents: each runs a part, all start at one time, and their
// results merge into one, exactly. The result names each agent; a lost or
// failed agent fails the drive (exit 3) unless ao.Tolerate.
func (r *Runner) DriveAgents(ctx context.Context, cfg config.Run, target string, o DriveOptions, ao AgentOptions) (*result.Result, error) {
	if err := r.resolve(&cfg); err != nil {
		return nil, err
	}
	if err := refusePlacement(cfg, "drive"); err != nil {
		return nil, err
	}
	w, err := r.Workloads.Get(cfg.Workload)
	if err != nil {
		return nil, config.Usage(err)
	}
	switch {
	case ao.Agents < 1:
		return nil, config.Usage(fmt.Errorf("--agents %d: want 1 or more", ao.Agents))
	case ao.Broker == "":
		return nil, config.Usage(errors.New("--agents needs --broker nats://HOST:PORT, the NATS server the agents (tierbench agent --broker URL) listen on"))
	case ao.Wait <= 0:
		return nil, config.Usage(fmt.Errorf("--agents-wait %v: want a positive duration", ao.Wait))
	}
	if strings.Contains(target, ",") {
		return nil, config.Usage(fmt.Errorf("--target %s: a drive spread over agents drives one target; without --agents a drive spreads its clients over several", target))
	}
	if u, err := url.Parse(target); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "grpc") {
		return nil, config.Usage(fmt.Errorf("--target %q: want the served tier's URL, http://HOST:PORT (or grpc://HOST:PORT for a business tier)", target))
	}
	if err := r.Validate(cfg); err != nil {
		return nil, err
	}
	if cfg.Duration > 0 {
		cfg.Iterations = 0
	}
	// With --db the coordinator reads the database before the agents
	// start and checks it against their merged outcomes after.
	var checker workload.Checker
	if o.CheckDB != nil {
		served, ok := w.(workload.Served)
		if !ok {
			return nil, config.Usage(fmt.Errorf("--db: a drive of %s checks no database (its site's checks are tierbench run's)", cfg.Workload))
		}
		dbCfg := cfg
		dbCfg.DB = *o.CheckDB
		db, err := r.open(ctx, dbCfg, w, true, useDrive)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		if checker, err = served.Checker(ctx, db, params(cfg)); err != nil {
			return nil, fmt.Errorf("read %s's database before the drive: %w", cfg.Workload, err)
		}
	}
	nc, err := ConnectBroker(ao.Broker, "tierbench drive coordinator")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	agents, err := agent.Discover(ctx, nc, ao.Agents, ao.Wait, r.Version)
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	rawCfg, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	startAt := began.Add(startLead)
	task := agent.Task{RunID: fmt.Sprintf("%s-%d", cfg.Workload, began.UnixNano()), Workload: cfg.Workload, Config: rawCfg, Target: target, TokenFile: o.TokenFile}
	var ops, errs atomic.Int64
	live := &agent.Live{}
	if r.Started != nil {
		r.Started(Progress{Began: startAt, Duration: time.Duration(cfg.Duration), Completed: func() (int64, int64) { return ops.Load(), errs.Load() },
			Agents: func() []agent.LiveOp { return live.Ops(w.Info().Operations) }})
	}
	if r.Abortable != nil {
		r.Abortable(func() *result.Result { return liveResult(r, cfg, w.Info(), target, startAt, agents, live) })
	}
	reports, err := agent.Drive(ctx, nc, task, agents, startAt, func(o, e int64) { ops.Store(o); errs.Store(e) }, live)
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	res, snap, err := merge(r, cfg, w.Info(), target, startAt, reports, ao, ctx.Err() != nil)
	if res == nil || checker == nil {
		return res, err
	}
	if r.Abortable != nil {
		// Copied now: the checks' outcome goes into res, not into it.
		aborted := *res
		aborted.Summary.Interrupted, aborted.Summary.Aborted, aborted.Summary.Passed = true, true, false
		aborted.Summary.InterruptedDuring = phaseChecks
		aborted.Summary.Unchecked = "a second interrupt stopped the drive during its checks, before they finished"
		r.Abortable(func() *result.Result { return &aborted })
	}
	failpoint.Hit(ctx, "checks")
	checkCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CheckTimeout)
	defer cancel()
	done := workload.Outcomes{Succeeded: snap.Succeeded, InDoubt: snap.InDoubt}
	if lost := lostOutcomes(reports, res.Agents, startAt); lost.LostTerminals > 0 {
		if _, ok := checker.(workload.LossReconciler); !ok {
			res.Summary.Unchecked = fmt.Sprintf("an agent was lost and %s's checks cannot allow for its unreported commits", cfg.Workload)
			return res, err
		}
		done = addOutcomes(done, lost)
	}
	checks, cerr := checker.Check(checkCtx, done)
	if cerr != nil {
		return res, errors.Join(err, fmt.Errorf("consistency checks could not run: %w", cerr))
	}
	res.Checks, res.Summary.Unchecked = checks, ""
	for _, c := range checks {
		res.Summary.Passed = res.Summary.Passed && c.Passed
	}
	return res, err
}

// merge makes one result of the agents' results, and gives the merged
// measurements with it.
func merge(r *Runner, cfg config.Run, info workload.Info, target string, startAt time.Time, reports []agent.Report, ao AgentOptions, interrupted bool) (*result.Result, *metrics.Snapshot, error) {
	var snap *metrics.Snapshot
	var first *result.Result
	var elapsed, window time.Duration
	queued := false
	var agents []result.Agent
	var missing []string
	var tiers *workload.Tiers
	for _, rep := range reports {
		a := result.Agent{ID: rep.ID, Host: rep.Host, PID: rep.PID, Part: rep.Part + 1, Parts: len(reports),
			ClockOffsetMs: ms(rep.Offset), ClockRTTMs: ms(rep.RTT), Status: result.AgentOK, Error: rep.Error}
		var res *result.Result
		if rep.Result != nil {
			res = &result.Result{}
			if err := json.Unmarshal(rep.Result, res); err != nil {
				res, a.Error = nil, "its result does not decode: "+err.Error()
			}
		}
		var reported int64
		if rep.Last != nil {
			reported = rep.Last.Ops
		}
		switch {
		case rep.Lost:
			a.Status = result.AgentLost
			a.Error = fmt.Sprintf("lost at %.1f s: %d operations reported, last report at %.1f s", rep.LostAt.Sub(startAt).Seconds(), reported, rep.LastHeard.Sub(startAt).Seconds())
		case res == nil:
			a.Status = result.AgentFailed
		}
		if res != nil {
			s, err := res.Snapshot()
			if err == nil && snap != nil {
				err = snap.Merge(s)
			} else if err == nil {
				snap, first = &s, res
			}
			if err != nil {
				a.Status, a.Error = result.AgentFailed, "its result does not merge: "+err.Error()
			} else {
				total := 0
				for _, t := range res.Terminals {
					total += t.Count
				}
				from, to := (&driver.Share{Part: rep.Part, Parts: len(reports)}).Range(total)
				a.Terminals = to - from
				a.Operations = res.Summary.Completed
				a.StartLagMs = ms(res.StartedAt.Add(-rep.Offset).Sub(startAt))
				elapsed = max(elapsed, time.Duration(res.Summary.RunS*float64(time.Second)))
				window = max(window, time.Duration(res.Summary.ElapsedS*float64(time.Second)))
				interrupted = interrupted || res.Summary.Interrupted
				for _, op := range res.Operations {
					queued = queued || op.Queue != nil
				}
				tiers = addTierCalls(tiers, res.Tiers, len(reports))
			}
		}
		if a.Status != result.AgentOK {
			a.Reported = reported
			missing = append(missing, fmt.Sprintf("agent %s on %s %s", a.ID, a.Host, a.Status))
		}
		agents = append(agents, a)
	}
	if snap == nil {
		return nil, nil, fmt.Errorf("no agent returned a result: %v", describe(agents))
	}
	var groups []workload.Group
	for _, t := range first.Terminals {
		groups = append(groups, workload.Group{Name: t.Group, Clients: t.Count})
	}
	// A missing agent held its share of the terminals all the same.
	for i := range agents {
		if agents[i].Status != result.AgentOK {
			from, to := (&driver.Share{Part: agents[i].Part - 1, Parts: len(agents)}).Range(driver.Clients(groups))
			agents[i].Terminals = to - from
		}
	}
	var failure *result.Failure
	var failErr error
	if len(missing) > 0 && !ao.Tolerate {
		failErr = fmt.Errorf("%s (--tolerate-agent-loss keeps such a drive)", joinMissing(missing))
		failure = &result.Failure{Phase: "run", At: time.Now().UTC().Truncate(time.Millisecond), Error: failErr.Error(),
			Effect: "the figures hold only the other agents' terminals"}
	}
	env := environment(nil, target)
	res := result.Build(result.Inputs{
		Version: r.Version, Config: cfg, Info: info, Environment: env, Started: startAt,
		Elapsed: elapsed, Window: window, Interrupted: interrupted, Snapshot: *snap, Queued: queued,
		Groups: groups, Failure: failure, Tiers: tiers,
	})
	res.Agents = agents
	return res, snap, failErr
}

// lostOutcomes are the outcomes of the agents missing from the merged
// figures (lost, or failed): their successes and commits in doubt up to
// their last report, and a bound on those after it, for the database
// checks. After its last report an agent commits at most at its peak rate
// until it is given up (lost: it stops driving by then, agent.CutOffAfter;
// failed: its failure arrived), plus one operation under way per terminal.
// An agent that reported no rate is given the highest per-terminal rate of
// the others.
func lostOutcomes(reports []agent.Report, agents []result.Agent, startAt time.Time) workload.Outcomes {
	var perTerminal []float64
	for i, rep := range reports {
		for op, r := range rep.Peak {
			if agents[i].Terminals > 0 {
				if perTerminal == nil {
					perTerminal = make([]float64, len(rep.Peak))
				}
				if op < len(perTerminal) {
					perTerminal[op] = max(perTerminal[op], r/float64(agents[i].Terminals))
				}
			}
		}
	}
	var out workload.Outcomes
	for i, rep := range reports {
		if agents[i].Status == result.AgentOK {
			continue
		}
		out.LostTerminals += int64(agents[i].Terminals)
		until := rep.LastHeard
		if rep.Lost {
			until = rep.LostAt
		}
		window := max(until.Sub(rep.LastAt(startAt)), 0).Seconds()
		peak := rep.Peak
		if peak == nil {
			peak = make([]float64, len(perTerminal))
			for op, r := range perTerminal {
				peak[op] = r * float64(agents[i].Terminals)
			}
		}
		n := max(len(peak), len(out.Unreported))
		if rep.Last != nil {
			n = max(n, len(rep.Last.Succeeded))
		}
		out.Succeeded, out.InDoubt, out.Unreported = grow(out.Succeeded, n), grow(out.InDoubt, n), grow(out.Unreported, n)
		for op, r := range peak {
			out.Unreported[op] += int64(math.Ceil(r * window))
		}
		if rep.Last != nil {
			for op := range rep.Last.Succeeded {
				out.Succeeded[op] += rep.Last.Succeeded[op]
				out.InDoubt[op] += rep.Last.InDoubt[op]
			}
		}
	}
	return out
}

func grow(s []int64, n int) []int64 {
	if len(s) < n {
		s = append(s, make([]int64, n-len(s))...)
	}
	return s
}

// addOutcomes adds the lost agents' outcomes to the merged ones, into
// new slices.
func addOutcomes(done, lost workload.Outcomes) workload.Outcomes {
	out := workload.Outcomes{Succeeded: slices.Clone(done.Succeeded), InDoubt: grow(slices.Clone(done.InDoubt), len(done.Succeeded)),
		Unreported: make([]int64, len(done.Succeeded)), LostTerminals: lost.LostTerminals}
	for op := range out.Succeeded {
		if op < len(lost.Succeeded) {
			out.Succeeded[op] += lost.Succeeded[op]
			out.InDoubt[op] += lost.InDoubt[op]
		}
		if op < len(lost.Unreported) {
			out.Unreported[op] = lost.Unreported[op]
		}
	}
	return out
}

// tierCalls adds one agent's tier calls (a result's, in milliseconds) to
// the drive's.
func addTierCalls(into *workload.Tiers, t *result.Tiers, agents int) *workload.Tiers {
	if t == nil {
		return into
	}
	if into == nil {
		// The agents' processes, and the served tiers' (each agent's
		// count has its own driver process in it).
		into = &workload.Tiers{Style: t.Style, Protocol: t.Protocol, Transport: t.Transport, Processes: t.Processes - 1 + agents}
	}
	dur := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	for _, p := range t.Pages {
		c := remote.Counts{Calls: p.Calls, Failed: p.Failed, BytesOut: p.BytesOut, BytesIn: p.BytesIn, Call: dur(p.CallMs), Bean: dur(p.BeanMs)}
		i := slices.IndexFunc(into.Calls, func(x workload.RemoteCalls) bool { return x.Name == p.Name })
		if i < 0 {
			into.Calls = append(into.Calls, workload.RemoteCalls{Name: p.Name})
			i = len(into.Calls) - 1
		}
		into.Calls[i].Pages += p.Pages
		into.Calls[i].Counts = into.Calls[i].Counts.Add(c)
	}
	return into
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func describe(agents []result.Agent) []string {
	var out []string
	for _, a := range agents {
		out = append(out, fmt.Sprintf("%s on %s: %s %s", a.ID, a.Host, a.Status, a.Error))
	}
	return out
}

func joinMissing(m []string) string { return strings.Join(m, "; ") }

// AgentHello describes this process as an agent.
func AgentHello(name, version string) agent.Hello {
	host, _ := os.Hostname()
	if name == "" {
		name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	// The ID is a token of NATS subjects, where dots separate tokens.
	id := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '-'
	}, name)
	return agent.Hello{ID: id, Host: host, PID: os.Getpid(), CPUs: runtime.NumCPU(), Version: version}
}

// liveResult is the drive as its agents' per-second reports told it so
// far, for a second interrupt that comes before their results merge (an
// agent that no longer answers holds the merge up to its loss): each
// operation's completed and failed count and the completed ones' latency
// over the whole drive until then (ramps included, at the reports' one
// significant digit, business exceptions among the successes), the agents
// named, the checks not run.
func liveResult(r *Runner, cfg config.Run, info workload.Info, target string, startAt time.Time, agents []agent.Agent, live *agent.Live) *result.Result {
	reported := live.Ops(info.Operations)
	snap := metrics.Snapshot{Succeeded: make([]int64, len(info.Operations)), InDoubt: make([]int64, len(info.Operations))}
	for i, name := range info.Operations {
		op := metrics.NewOpStats(name)
		if i < len(reported) {
			op.Successes, op.Completed, op.Errors = reported[i].Completed, reported[i].Completed, reported[i].Failed
			if reported[i].Latency != nil {
				op.Latency.Merge(reported[i].Latency)
			}
			snap.Succeeded[i] = reported[i].Completed
		}
		snap.Ops = append(snap.Ops, op)
	}
	elapsed := max(time.Since(startAt), 0)
	res := result.Build(result.Inputs{
		Version: r.Version, Config: cfg, Info: info, Environment: environment(nil, target), Started: startAt,
		Elapsed: elapsed, Window: elapsed, Interrupted: true, InterruptedIn: phaseRun, Snapshot: snap,
	})
	for i, a := range agents {
		from, to := (&driver.Share{Part: i, Parts: len(agents)}).Range(cfg.Clients)
		res.Agents = append(res.Agents, result.Agent{ID: a.ID, Host: a.Host, PID: a.PID, Part: i + 1, Parts: len(agents), Terminals: to - from,
			ClockOffsetMs: ms(a.Offset), ClockRTTMs: ms(a.RTT), Status: result.AgentOK})
	}
	res.Summary.Aborted = true
	res.Summary.Unchecked = "a second interrupt stopped the drive while its agents drove: the figures are their per-second reports until then " +
		"(ramps included, latency to one significant digit, business exceptions among the successes), and the checks did not run"
	return res
}
