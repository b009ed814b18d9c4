package store

import (
	"context"
	"time"
)

// RejoinInterval is how often, unless ReplicaOptions say otherwise, a
// primary probes the replicas it lost, to take back those that returned.
//
// A lost replica is back when a probe finds it a standby again
// (pg_is_in_recovery()) that has replayed the WAL up to where the
// primary's stood at the probe before: it is within one interval of the
// primary, as a live replica usually is, and has the writes committed
// before it was lost. The first probe after a loss only marks the
// primary's position, so a replica is back at the earliest two probes
// after it was lost. A replica taken back gets its share of the reads at
// once; its thread sessions replace their dead connections as they are
// next used.
const RejoinInterval = time.Second

var rejoinProbe = Statement{Name: "rejoin-probe", Dialects: map[Dialect]string{
	Postgres: "SELECT pg_is_in_recovery(), COALESCE((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8, 0)",
}}

// startRejoin probes a primary's lost replicas every interval until the
// returned stop. Its round trips go over the shared sessions, uncounted
// (as the lag's samples): they are the run's bookkeeping, not the
// workload's.
func startRejoin(ctx context.Context, primary *DB, rs *replicaSet, every time.Duration) (stop func(), err error) {
	probe, err := rs.list[0].db.Prepare(ctx, rejoinProbe)
	if err != nil {
		return nil, err
	}
	return Every(every, func(ctx context.Context) { rs.probeLost(ctx, primary, probe, every) }), nil
}

// probeLost probes each lost replica once, each round trip bounded by
// every, and takes back those that returned.
func (rs *replicaSet) probeLost(ctx context.Context, primary *DB, probe *Stmt, every time.Duration) {
	var lost []*replica
	for _, r := range rs.list {
		if r.isLost() {
			lost = append(lost, r)
		}
	}
	if len(lost) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	var at int64
	if err := primary.backend.Shared().QueryRow(ctx, rs.position.p, nil).Scan(&at); err != nil {
		return // the primary's own trouble is the run's, not the probe's
	}
	for _, r := range lost {
		var standby bool
		var replayed int64
		err := r.db.backend.Shared().QueryRow(ctx, probe.p, nil).Scan(&standby, &replayed)
		r.probed(err == nil && standby, uint64(replayed), uint64(at))
	}
}

// probed takes r back when it is a standby that has replayed up to the
// primary's position at the previous probe, and marks the primary's
// position now, at.
func (r *replica) probed(standby bool, replayed, at uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lostAt.IsZero() {
		return
	}
	if !standby || r.mark == 0 || replayed < r.mark {
		r.mark = at
		return
	}
	// Replayed past the mark, which was read after the loss: past
	// anything seen of it before, so the position it had is replaced
	// (a restarted standby may open for reads before it has replayed
	// all it had received).
	r.replayed.Store(replayed)
	o := &r.outages[len(r.outages)-1]
	o.back, o.readsAt = time.Now().UTC(), r.reads.Load()
	r.lostAt, r.mark = time.Time{}, 0
}

// outageStats are r's first loss and its outages, for the result.
func (r *replica) outageStats() (*time.Time, []ReplicaOutage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.outages) == 0 {
		return nil, nil
	}
	first := r.outages[0].lost
	out := make([]ReplicaOutage, len(r.outages))
	for i, o := range r.outages {
		out[i].Lost = o.lost
		if o.back.IsZero() {
			continue
		}
		back := o.back
		out[i].Back = &back
		end := o.readsEnd
		if !o.ended {
			end = r.reads.Load()
		}
		out[i].ReadsAfter = end - o.readsAt
	}
	return &first, out
}
