package result

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// database names the run's database, and where it ran when the run placed
// it: "postgres 15.10 (placement dual: tierbench on CPU 0, database on CPU 1)".
func database(env Environment) string {
	if env.Placement == "" {
		return env.DB
	}
	if len(env.Hosts) > 0 {
		link := "the veths as they are"
		if l := env.Link; l != nil {
			var parts []string
			if l.RateBitS > 0 {
				parts = append(parts, fmt.Sprintf("%g Mbit/s", float64(l.RateBitS)/1e6))
			}
			if l.DelayMS > 0 {
				parts = append(parts, fmt.Sprintf("%g ms each way", l.DelayMS))
			}
			if len(parts) > 0 {
				link = strings.Join(parts, ", ")
			}
		}
		roles := make([]string, len(env.Hosts))
		for i, h := range env.Hosts {
			roles[i] = h.Role + " " + h.Address
		}
		return fmt.Sprintf("%s (placement hosts: %s; link: %s)", env.DB, strings.Join(roles, ", "), link)
	}
	cpus := func(list string) string {
		if strings.ContainsAny(list, ",-") {
			return "CPUs " + list
		}
		return "CPU " + list
	}
	return fmt.Sprintf("%s (placement %s: tierbench on %s, database on %s)", env.DB, env.Placement, cpus(env.AppCPUs), cpus(env.DBCPUs))
}

// WriteSummary prints the end-of-run table: one line per operation, a total,
// the headline metric, the database counters and the checks.
func WriteSummary(w io.Writer, r *Result) {
	c := r.Config
	load := "iterations " + fmt.Sprint(c.Iterations)
	if c.Duration > 0 {
		load = "duration " + c.Duration.String()
	}
	if t := r.Environment.Target; t != "" {
		// Driven from outside: the site's threads, persistence and
		// database are its own, unknown here.
		fmt.Fprintf(w, "%s · site %s · %s, %s · seed %d\n\n", r.Workload, t, terminals(r), load, r.Seed)
	} else {
		fmt.Fprintf(w, "%s · %s · %s · %s, %d server threads, %s · persistence %s · seed %d\n\n",
			r.Workload, database(r.Environment), isolation(r.Environment), terminals(r), c.ServerThreads, load, c.Persistence, r.Seed)
	}

	queued := false
	for _, op := range r.Operations {
		queued = queued || op.Queue != nil
	}
	header := fmt.Sprintf("%-22s %9s %7s %8s %7s %9s %9s %9s %9s %9s %10s", "operation", "count", "errors", "biz-exc", "retries", "mean", "p50", "p90", "p99", "max", "per-s")
	if queued {
		header += fmt.Sprintf(" %9s %9s", "queue", "service")
	}
	fmt.Fprintln(w, header)
	window := r.Summary.ElapsedS
	line := func(name string, op Operation) {
		rate := 0.0
		if window > 0 {
			rate = float64(op.Completed) / window
		}
		l := op.Latency
		s := fmt.Sprintf("%-22s %9d %7d %8d %7d %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f", name, op.Count, op.Errors, op.BusinessExceptions, op.Retries, l.Mean, l.P50, l.P90, l.P99, l.Max, rate)
		if queued && op.Queue != nil {
			s += fmt.Sprintf(" %9.3f %9.3f", op.Queue.Mean, op.Service.Mean)
		}
		fmt.Fprintln(w, s)
	}
	for _, name := range r.OperationOrder {
		if op, ok := r.Operations[name]; ok {
			line(name, op)
		}
	}
	total := Operation{Count: r.Summary.Operations, Completed: r.Summary.Completed, Errors: r.Summary.Errors, BusinessExceptions: r.Summary.BusinessExceptions, Retries: r.Summary.Retries, Latency: r.TotalLatency}
	if queued {
		total.Queue, total.Service = &r.TotalQueue, &r.TotalService
	}
	fmt.Fprintln(w, strings.Repeat("-", len(header)))
	line("total", total)
	note := "latency in ms, end-to-end as the client saw it"
	if queued {
		note += "; queue = waiting for a server thread, service = holding one (means)"
	}
	fmt.Fprintf(w, "(%s)\n\n", note)

	fmt.Fprintf(w, "%s %.1f   (%d transactions finished in %.3f s of steady state; whole run %.3f s)\n",
		r.Summary.Metric.Name, r.Summary.Metric.Value, r.Summary.Completed, r.Summary.ElapsedS, r.Summary.RunS)
	if v := r.Summary.SIPSPerAppServer; v != nil {
		over := "one app server"
		if n := r.Config.Servers(); n > 1 {
			over = fmt.Sprintf("over %d app servers", n)
		}
		fmt.Fprintf(w, "SIPS per app server %.1f   (%s)\n", *v, over)
	}
	writePartners(w, r.Partners)
	if s := r.Summary; s.Errors+s.InDoubt > 0 || r.TooManyErrors() {
		verdict := "within"
		if r.TooManyErrors() {
			verdict = "ABOVE"
		}
		fmt.Fprintf(w, "failed: %d errors, %d in doubt: %.3g%% of the operations due in the steady state, %s --max-error-rate %g%% (failures are not in the rate above)\n",
			s.Errors, s.InDoubt, s.ErrorRatePct, verdict, s.MaxErrorRatePct)
	}
	writeFailures(w, r)
	if s := r.Summary; s.Completed < s.Operations*99/100 {
		fmt.Fprintf(w, "behind schedule: %d transactions were due in the steady state, %d finished in it; the rest finished late (their lateness is in the latencies)\n",
			s.Operations, s.Completed)
	}
	if a := r.Summary.Aborts; a.Total() > 0 {
		fmt.Fprintf(w, "aborts: %d deadlock, %d lock timeout, %d serialization", a.Deadlock, a.LockTimeout, a.Serialization)
		// Certification failures exist on multi-master clusters alone:
		// elsewhere the line stays as it was.
		certification := a.Certification > 0
		if certification {
			fmt.Fprintf(w, ", %d certification", a.Certification)
		}
		var per []string
		for _, name := range r.OperationOrder {
			if op, ok := r.Operations[name]; ok && op.Aborts != nil {
				counts := fmt.Sprintf("%s %d/%d/%d", name, op.Aborts.Deadlock, op.Aborts.LockTimeout, op.Aborts.Serialization)
				if certification {
					counts += fmt.Sprintf("/%d", op.Aborts.Certification)
				}
				per = append(per, counts)
			}
		}
		columns := "deadlock/timeout/serialization"
		if certification {
			columns += "/certification"
		}
		fmt.Fprintf(w, " (by operation, %s: %s)\n", columns, strings.Join(per, ", "))
	}
	writeEntities(w, r)
	writeServers(w, r)
	writeAgents(w, r.Agents)
	if t := r.Tiers; t != nil {
		processes := "processes"
		if t.Processes == 1 {
			processes = "process"
		}
		if t.Style != "" {
			fmt.Fprintf(w, "tiers: style %s, %d %s", t.Style, t.Processes, processes)
		} else {
			fmt.Fprintf(w, "tiers: %d %s", t.Processes, processes)
		}
		if t.Protocol != "" {
			c := t.Total
			over := t.Protocol
			if t.Transport == "unix" {
				over += " on a Unix-domain socket"
			}
			fmt.Fprintf(w, ", calls over %s: %.2f per interaction, %.0f B out and %.0f B in per interaction, %.3f ms per interaction in the layer (%d calls, %d answered with an error)",
				over, c.CallsPerPage, c.BytesOutPerPage, c.BytesInPerPage, c.LayerMsPerPage, c.Calls, c.Failed)
		}
		fmt.Fprintln(w)
	}
	writeMix(w, r.Mix)
	apart := r.Tiers != nil && r.Tiers.Processes > 1
	if r.Environment.DB != "" && apart && r.Database.Statements == 0 && r.Database.Transactions == 0 {
		fmt.Fprintln(w, "database: its statements are the tiers' processes', not counted here")
	} else if r.Environment.DB != "" {
		d := r.Database
		fmt.Fprintf(w, "database: %d statements, %d transactions, %d rollbacks, %d deadlocks, %d serialization failures, %d lock timeouts",
			d.Statements, d.Transactions, d.Rollbacks, d.Deadlocks, d.SerializationFailures, d.LockTimeouts)
		if d.CertificationFailures > 0 {
			fmt.Fprintf(w, ", %d certification failures", d.CertificationFailures)
		}
		if d.ConnectionsLost > 0 || d.InDoubt > 0 {
			fmt.Fprintf(w, ", %d connections lost, %d commits in doubt", d.ConnectionsLost, d.InDoubt)
		}
		if apart {
			fmt.Fprint(w, " (summed over the tiers' processes and the driver's checks, each counted where it ran)")
		}
		fmt.Fprintln(w)
	}
	for _, l := range r.Database.NodesLost {
		fmt.Fprintf(w, "database node %s lost at %s: its connections moved to the survivors; %d transactions and reads retried, %d commits in doubt, %d statements failed",
			l.Node, l.At.UTC().Format("15:04:05.000"), l.Retried, l.InDoubt, l.Failed)
		if l.Back != nil {
			fmt.Fprintf(w, "; back at %s (%.1f s later): its threads moved back", l.Back.UTC().Format("15:04:05.000"), l.Back.Sub(l.At).Seconds())
		}
		fmt.Fprintln(w)
	}
	for _, p := range r.Environment.Partitions {
		fmt.Fprintf(w, "partition: %s cut from %s from %.1f s to %.1f s\n", p.Between[0], p.Between[1], p.FromS, p.ToS)
	}
	writeReplicas(w, r.Database.Replicas)
	if f := r.Summary.Failure; f != nil {
		at := ""
		if f.AtS != nil {
			at = fmt.Sprintf(" %.1f s into the run", *f.AtS)
		}
		fmt.Fprintf(w, "FAILED during %s%s: %s\n  %s\n", f.Phase, at, f.Error, f.Effect)
	} else if r.Summary.Aborted {
		fmt.Fprintf(w, "aborted during %s by a second interrupt: the figures hold what had finished by then\n", r.Summary.InterruptedDuring)
	} else if r.Summary.Interrupted {
		fmt.Fprintln(w, "interrupted: operations under way were allowed to finish; the checks below cover them")
	}
	if u := r.Summary.Unchecked; u != "" && len(r.Checks) == 0 {
		fmt.Fprintln(w, "checks: not run: "+u)
	} else {
		WriteChecks(w, r.Checks)
	}
	if r.Validity != nil {
		writeVerdicts(w, "validity", r.Validity.Rules)
	}
	writeThresholds(w, r)
}

// writeEntities prints a line per entity type: its settings and what the
// container did with it.
func writeEntities(w io.Writer, r *Result) {
	if len(r.EntityOrder) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-14s %3s %6s %6s %-11s %-11s %8s %5s %7s %8s %9s %7s %8s %8s %8s %6s %6s %5s %5s\n",
		"entity", "opt", "cache", "pool", "persistence", "concurrency", "finds", "hit%", "tx-hits", "loads", "not-found", "stores", "activate", "passivate", "discards", "peak-r", "peak-p", "waits", "confl")
	for _, name := range r.EntityOrder {
		e := r.Container[name]
		s := e.Settings
		fmt.Fprintf(w, "%-14s %3s %6d %6d %-11s %-11s %8d %5.1f %7d %8d %9d %7d %8d %8d %8d %6d %6d %5d %5d\n",
			name, s.CommitOption, s.Cache, s.Pool, s.Persistence, s.Concurrency, e.Finds, 100*e.HitRate, e.TxHits, e.Loads, e.NotFound, e.Stores,
			e.Activations, e.Passivations, e.Discards, e.PeakReady, e.PeakPooled, e.LockWaits, e.Conflicts)
	}
	fmt.Fprintln(w, "(the entity container over the whole run: each find, by key or a finder's row, is a ready-cache hit (hit%), a tx-hit (the transaction's own instance), a load or not found; peak-r/-p = peak ready/pooled instances)")
	var finders []string
	for _, name := range r.EntityOrder {
		if e := r.Container[name]; e.FinderHits+e.FinderMisses > 0 {
			finders = append(finders, fmt.Sprintf("%s %d hits, %d misses, %d invalidated", name, e.FinderHits, e.FinderMisses, e.FinderInvalidations))
		}
	}
	if len(finders) > 0 {
		fmt.Fprintf(w, "finder cache: %s\n", strings.Join(finders, "; "))
	}
	writeCoherence(w, r)
	writeReadMostly(w, r)
	var shared []string
	for _, name := range r.EntityOrder {
		if e := r.Container[name]; e.SharedHits+e.SharedMisses+e.SharedInvalidations > 0 {
			shared = append(shared, fmt.Sprintf("%s %d hits (%d near), %d misses, %d filled, %d invalidated",
				name, e.SharedHits, e.NearHits, e.SharedMisses, e.SharedPuts, e.SharedInvalidations))
		}
	}
	if len(shared) > 0 {
		fmt.Fprintf(w, "shared cache: %s\n", strings.Join(shared, "; "))
	}
	fmt.Fprintln(w)
}

// writeCoherence prints a line per entity type whose cache was kept
// coherent across app servers (or sampled for staleness), nothing when
// none was.
func writeCoherence(w io.Writer, r *Result) {
	var lines []string
	for _, name := range r.EntityOrder {
		e := r.Container[name]
		if e.InvalidationCommits+e.CommitsUnclaimed+e.InvalidationsReceived+e.ReadBacks+e.Fences+e.PeersFenced == 0 {
			continue
		}
		perCommit := 0.0
		if e.InvalidationCommits > 0 {
			perCommit = float64(e.InvalidationsSent) / float64(e.InvalidationCommits)
		}
		unannounced := ""
		if e.CreatesUnannounced+e.CommitsUnannounced+e.CommitsUnclaimed > 0 {
			unannounced = fmt.Sprintf(" (%d created unannounced; %d commits announced nothing, %d published nothing: unclaimed)",
				e.CreatesUnannounced, e.CommitsUnannounced, e.CommitsUnclaimed)
		}
		lines = append(lines, fmt.Sprintf("%s %d sent%s (%.1f a commit), %d received, latency p50 %dus p99 %dus max %dus, stale %d of %d read back, fenced %d, peers fenced %d",
			name, e.InvalidationsSent, unannounced, perCommit, e.InvalidationsReceived, e.InvalidationP50Micros, e.InvalidationP99Micros, e.InvalidationMaxMicros,
			e.StaleReads, e.ReadBacks, e.Fences, e.PeersFenced))
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "coherence: %s\n", strings.Join(lines, "; "))
	}
}

// writeReadMostly prints a line per read-mostly type: what its cache
// served, refreshed, and dropped for its writer's commits, and the stale
// reads its sampled read-backs found; nothing when no type is one.
func writeReadMostly(w io.Writer, r *Result) {
	var lines []string
	for _, name := range r.EntityOrder {
		e := r.Container[name]
		if e.Settings.ReadMostly == "" {
			continue
		}
		from := ""
		if e.InvalidationsReceived > 0 {
			from = fmt.Sprintf(" (and %d from the other app servers')", e.InvalidationsReceived)
		}
		lines = append(lines, fmt.Sprintf("%s through %s: %d cache hits, %d refreshes, %d invalidated by %s's commits%s, stale %d of %d read back",
			name, e.Settings.ReadMostly, e.CacheHits, e.Refreshes, e.WriterInvalidations, e.Settings.ReadMostly, from, e.StaleReads, e.ReadBacks))
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "read-mostly: %s\n", strings.Join(lines, "; "))
	}
}

// WriteChecks prints the consistency checks, one per line.
func WriteChecks(w io.Writer, checks []workload.Check) { writeVerdicts(w, "checks", checks) }

// writeVerdicts prints a verdict line for the label, then one line per
// check or rule.
func writeVerdicts(w io.Writer, label string, checks []workload.Check) {
	failed, unjudged := 0, 0
	width := 0
	for _, c := range checks {
		width = max(width, len(c.Name))
		switch {
		case !c.Passed:
			failed++
		case notJudged(c):
			unjudged++
		}
	}
	var aside string
	if unjudged > 0 {
		aside = fmt.Sprintf(" (%d not judged)", unjudged)
	}
	switch {
	case len(checks) == 0:
		fmt.Fprintln(w, label+": none")
		return
	case failed == 0:
		fmt.Fprintf(w, "%s: all %d passed%s\n", label, len(checks), aside)
	default:
		fmt.Fprintf(w, "%s: %d of %d FAILED%s\n", label, failed, len(checks), aside)
	}
	for _, c := range checks {
		mark := "ok  "
		switch {
		case !c.Passed:
			mark = "FAIL"
		case notJudged(c):
			// A rule the run was too short to judge did not pass either:
			// it was not applied.
			mark = "skip"
		}
		fmt.Fprintf(w, "  %s %-*s  %s\n", mark, width, c.Name, c.Detail)
	}
}

// notJudged tells a rule that was passed over (a run too short to judge
// it) from one that held.
func notJudged(c workload.Check) bool { return strings.HasPrefix(c.Detail, "not judged") }

// terminals says who drove the run: "100 clients", or the workload's own
// setup and groups ("Ir 5, PO dispatch sync: 25 order-entry, 15
// planned-lines, 1 large-order-line terminals").
func terminals(r *Result) string {
	if len(r.Terminals) <= 1 && r.Setup == "" {
		return fmt.Sprintf("%d clients", r.Config.Clients)
	}
	parts := make([]string, len(r.Terminals))
	for i, t := range r.Terminals {
		parts[i] = fmt.Sprintf("%d %s", t.Count, t.Group)
	}
	s := strings.Join(parts, ", ") + " terminals"
	if len(r.Terminals) <= 1 {
		// One group: the clients themselves, after the workload's setup.
		s = fmt.Sprintf("%d clients", r.Config.Clients)
	}
	if r.Setup != "" {
		s = r.Setup + ": " + s
	}
	return s
}

// writeFailures prints why operations failed: per operation, each class
// of failure with its count and the message of its first.
func writeFailures(w io.Writer, r *Result) {
	head := false
	for _, name := range r.OperationOrder {
		f := r.Operations[name].Failures
		if len(f) == 0 {
			continue
		}
		if !head {
			fmt.Fprintln(w, "failures by class (count, first message):")
			head = true
		}
		classes := slices.Sorted(maps.Keys(f))
		slices.SortStableFunc(classes, func(a, b string) int { return cmp.Compare(f[b].Count, f[a].Count) })
		for _, class := range classes {
			c := f[class]
			fmt.Fprintf(w, "  %-22s %-18s %9d  %s\n", name, class, c.Count, oneLine(c.Sample))
		}
	}
}

// oneLine keeps a sample message on its line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// writeReplicas says where the read-only transactions ran, what they may
// have missed, and how far each standby lagged.
func writeReplicas(w io.Writer, rs *store.ReplicaSummary) {
	if rs == nil {
		return
	}
	t := rs.Total()
	fmt.Fprintf(w, "replicas (%s reads): %d read-only transactions on %d replicas, %d on the primary; %d read-your-writes violations",
		rs.Reads, t.Reads, len(rs.Replicas), rs.PrimaryReads, t.ReadYourWritesViolations)
	if rs.Reads == store.Causal {
		mean := 0.0
		if t.CausalWaits > 0 {
			mean = t.CausalWaitMs / float64(t.CausalWaits)
		}
		fmt.Fprintf(w, ", %d causal waits (%.2f ms mean), %d gave up for the primary", t.CausalWaits, mean, t.CausalFallbacks)
	}
	fmt.Fprintln(w)
	for _, r := range rs.Replicas {
		outages := r.Outages
		if len(outages) == 0 && r.Lost != nil { // a result written before outages were
			outages = []store.ReplicaOutage{{Lost: *r.Lost}}
		}
		for _, o := range outages {
			fmt.Fprintf(w, "replica %s lost at %s: its reads moved to the other replicas and the primary", r.Replica, o.Lost.UTC().Format("15:04:05.000"))
			if o.Back != nil {
				fmt.Fprintf(w, "; back at %s, %d reads since", o.Back.UTC().Format("15:04:05.000"), o.ReadsAfter)
			}
			fmt.Fprintln(w)
		}
	}
	for _, l := range rs.Lag {
		fmt.Fprintf(w, "standby %s lag: replay p50 %.1f ms, p99 %.1f ms, max %.1f ms; WAL p50 %.0f B, p99 %.0f B, max %.0f B (%d samples)\n",
			l.Standby, l.ReplayLagMs.P50, l.ReplayLagMs.P99, l.ReplayLagMs.Max, l.Bytes.P50, l.Bytes.P99, l.Bytes.Max, l.Samples)
	}
}

// writePartners is a line of the partner services' requests: SNE's
// notices with their labels' bytes, the others' requests and approvals.
func writePartners(w io.Writer, ps []Partner) {
	if len(ps) == 0 {
		return
	}
	var parts []string
	for _, p := range ps {
		c := p.Counts
		switch p.Name {
		case "sne":
			parts = append(parts, fmt.Sprintf("sne %d notices (%d again), %.1f MiB of labels", c["requests"], c["duplicates"], float64(c["label_bytes"])/(1<<20)))
		case "ice":
			parts = append(parts, fmt.Sprintf("ice %d reorders (%d again)", c["requests"], c["duplicates"]))
		default:
			parts = append(parts, fmt.Sprintf("%s %d (%d approved)", p.Name, c["requests"], c["approved"]))
		}
	}
	fmt.Fprintf(w, "partners: %s\n", strings.Join(parts, ", "))
}

// isolation is the run's isolation level, and its lock granularity when
// not the engine's own.
func isolation(e Environment) string {
	if e.LockGranularity != "" {
		return e.Isolation + ", " + e.LockGranularity + " locks"
	}
	return e.Isolation
}
