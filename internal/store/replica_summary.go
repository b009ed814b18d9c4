package store

import (
	"cmp"
	"slices"
	"time"
)

// The replicas' counters as a run's result carries them, and how the
// counters of the processes of one run (its tiers, its app servers, the
// run's own process that samples the lag) add up.

// ReplicaStats are what one replica did for a run.
type ReplicaStats struct {
	Replica string `json:"replica"`
	// Reads are the read-only transactions routed to it.
	Reads int64 `json:"reads"`
	// Statements it ran (those reads', and its catch-up probes apart).
	Statements int64 `json:"statements"`
	// Probes: reads of its replay position (pg_last_wal_replay_lsn), to
	// learn whether it had replayed a terminal's last commit.
	Probes int64 `json:"probes"`
	// ReadYourWritesViolations: reads routed to it (eventual) while it
	// had not yet replayed the terminal's last commit: the read could
	// have missed the terminal's own write.
	ReadYourWritesViolations int64 `json:"read_your_writes_violations"`
	// CausalWaits are causal reads that waited for it to catch up, and
	// CausalWaitMs how long they waited in all; CausalFallbacks gave up
	// after CausalWait and ran on the primary.
	CausalWaits     int64   `json:"causal_waits"`
	CausalWaitMs    float64 `json:"causal_wait_ms"`
	CausalFallbacks int64   `json:"causal_fallbacks"`
	// Lost is when it was first found gone (a connection to it failed);
	// its reads moved to the other replicas and the primary.
	Lost *time.Time `json:"lost,omitempty"`
	// Outages are each time it was lost, and whether and when it was
	// taken back (see RejoinInterval).
	Outages []ReplicaOutage `json:"outages,omitempty"`
}

// ReplicaOutage is one time a replica was lost.
type ReplicaOutage struct {
	Lost time.Time `json:"lost"`
	// Back is when it was taken back: a standby again, and replaying
	// within a probe interval of the primary. Nil: not during the run.
	Back *time.Time `json:"back,omitempty"`
	// ReadsAfter are the read-only transactions routed to it from Back
	// until it was lost again or the run ended.
	ReadsAfter int64 `json:"reads_after_back"`
}

// ReplicaSummary is the replicas' part of a run's database counters.
type ReplicaSummary struct {
	Reads ReplicaReads `json:"reads"`
	// PrimaryReads are read-only transactions that ran on the primary: no
	// replica was live, or a causal read gave up waiting.
	PrimaryReads int64 `json:"primary_reads"`
	// Positions are the WAL positions read on the primary after a
	// terminal's write commits (one round trip each).
	Positions int64          `json:"positions"`
	Replicas  []ReplicaStats `json:"replicas"`
	// Lag is the standbys' lag as the primary saw it
	// (pg_stat_replication), sampled while the run went on.
	Lag []ReplicationLag `json:"lag,omitempty"`
}

// replicaSummary is the replicas' counters now.
func (rs *replicaSet) summary() *ReplicaSummary {
	out := &ReplicaSummary{Reads: rs.reads, PrimaryReads: rs.primaryReads.Load(), Positions: rs.positions.Load(), Lag: rs.lag.stats()}
	for _, r := range rs.list {
		st := r.db.Stats()
		rst := ReplicaStats{
			Replica: r.name, Reads: r.reads.Load(), Statements: st.Statements, Probes: r.probes.Load(),
			ReadYourWritesViolations: r.missed.Load(), CausalWaits: r.waits.Load(),
			CausalWaitMs: float64(r.waitNs.Load()) / 1e6, CausalFallbacks: r.fellBack.Load(),
		}
		rst.Lost, rst.Outages = r.outageStats()
		out.Replicas = append(out.Replicas, rst)
	}
	return out
}

// sub is s less the counts of an earlier snapshot; losses and lag stand.
func (s *ReplicaSummary) sub(e *ReplicaSummary) *ReplicaSummary {
	if s == nil || e == nil {
		return s
	}
	out := *s
	out.PrimaryReads -= e.PrimaryReads
	out.Positions -= e.Positions
	out.Replicas = make([]ReplicaStats, len(s.Replicas))
	for i, r := range s.Replicas {
		if i < len(e.Replicas) {
			p := e.Replicas[i]
			r.Reads -= p.Reads
			r.Statements -= p.Statements
			r.Probes -= p.Probes
			r.ReadYourWritesViolations -= p.ReadYourWritesViolations
			r.CausalWaits -= p.CausalWaits
			r.CausalWaitMs -= p.CausalWaitMs
			r.CausalFallbacks -= p.CausalFallbacks
		}
		out.Replicas[i] = r
	}
	return &out
}

// Plus is s and t, the counters of two processes of one run over the
// same replicas (its app servers, its tiers, the run's own process),
// summed replica by replica (matched by name, s's order first): reads,
// statements, probes, violations and causal waits add up exactly. Each
// process loses and takes back a replica on its own: Lost is the earliest
// loss, Outages every process's, in order of loss. Lag is sampled by one
// process of a run (the one that drives it), so the lists are joined.
// Either may be nil.
func (s *ReplicaSummary) Plus(t *ReplicaSummary) *ReplicaSummary {
	switch {
	case t == nil:
		return s
	case s == nil:
		s = &ReplicaSummary{}
	}
	out := *s
	out.Reads = cmp.Or(s.Reads, t.Reads)
	out.PrimaryReads += t.PrimaryReads
	out.Positions += t.Positions
	out.Replicas = slices.Clone(s.Replicas)
	for _, r := range t.Replicas {
		i := slices.IndexFunc(out.Replicas, func(o ReplicaStats) bool { return o.Replica == r.Replica })
		if i < 0 {
			out.Replicas = append(out.Replicas, r)
			continue
		}
		o := &out.Replicas[i]
		o.Reads += r.Reads
		o.Statements += r.Statements
		o.Probes += r.Probes
		o.ReadYourWritesViolations += r.ReadYourWritesViolations
		o.CausalWaits += r.CausalWaits
		o.CausalWaitMs += r.CausalWaitMs
		o.CausalFallbacks += r.CausalFallbacks
		if r.Lost != nil && (o.Lost == nil || r.Lost.Before(*o.Lost)) {
			o.Lost = r.Lost
		}
		if len(r.Outages) > 0 {
			o.Outages = append(slices.Clip(o.Outages), r.Outages...)
			slices.SortStableFunc(o.Outages, func(a, b ReplicaOutage) int { return a.Lost.Compare(b.Lost) })
		}
	}
	out.Lag = append(slices.Clip(s.Lag), t.Lag...)
	return &out
}

// Total is the counters of every replica summed (Replica, Lost and
// Outages empty).
func (s *ReplicaSummary) Total() ReplicaStats {
	var t ReplicaStats
	for _, r := range s.Replicas {
		t.Reads += r.Reads
		t.Statements += r.Statements
		t.Probes += r.Probes
		t.ReadYourWritesViolations += r.ReadYourWritesViolations
		t.CausalWaits += r.CausalWaits
		t.CausalWaitMs += r.CausalWaitMs
		t.CausalFallbacks += r.CausalFallbacks
	}
	return t
}
