package ecperf

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/messaging/messagingtest"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workload"
)

// A run of --po-dispatch queue on a three-node NATS cluster with the PO
// queue on all three (--stream-replicas 3) loses the leader of the
// queue's stream, or a follower, mid-run: publishes and acknowledgements
// under way are retried on the survivors, and every committed PO still
// reaches the emulator exactly once and is delivered.
func TestQueueDispatchSurvivesANodeKilled(t *testing.T) {
	for _, victim := range []string{messagingtest.Leader, messagingtest.Follower} {
		t.Run(victim, func(t *testing.T) {
			testsvc.SkipUnlessLong(t, "a NATS cluster node killed mid-run")
			cluster := testsvc.NATSClusterOf3(t)
			r := newRunner(t)
			cfg := shortRun(t, r, storetest.SQLite(t), dispatchQueue)
			workload.SetOptions(&cfg, func(o *Options) { o.Broker, o.StreamReplicas = cluster.URLs(), 3 })
			// A few POs through the queue first: the kill falls among
			// the run's publishes, deliveries and acknowledgements.
			res := messagingtest.KillDuringRun(t, cluster, "ECPERF_PO_", victim, 3, func() (*result.Result, error) {
				return r.Run(context.Background(), cfg)
			})
			checks := checksOf(t, res)
			po := checks["po-sent-exactly-once"].Detail
			for _, want := range []string{"0 committed but never sent", "0 at the emulator that the database lacks"} {
				if !strings.Contains(po, want) {
					t.Errorf("po-sent-exactly-once: %s; want %q", po, want)
				}
			}
			if strings.HasPrefix(po, "0 POs committed") {
				t.Errorf("no PO was created, so nothing was tested: %s", po)
			}
			// Exact counts: each committed PO at the emulator, delivered
			// once, and its outbox row acknowledged by the stream once
			// (as new, or as the copy of a publish in doubt).
			committed := submatchInt(t, committedPOs, po)
			if at := submatchInt(t, atEmulator, po); at != committed {
				t.Errorf("%d POs at the emulator; want the %d committed", at, committed)
			}
			if applied := submatchInt(t, appliedOnce, checks["deliveries-applied-once"].Detail); applied != committed {
				t.Errorf("%d deliveries applied; want the %d POs committed", applied, committed)
			}
			if acked := submatchInt(t, relayPublished, po) + submatchInt(t, relayDropped, po); acked != committed {
				t.Errorf("the relay had %d POs acknowledged; want the %d committed: %s", acked, committed, po)
			}
			if got := res.Config.Options.(Options).StreamReplicas; got != 3 {
				t.Errorf("result's stream-replicas %d; want 3", got)
			}
			t.Logf("%s killed: %s", victim, po)
		})
	}
}

var (
	atEmulator     = regexp.MustCompile(`POs committed, (\d+) at the emulator`)
	relayPublished = regexp.MustCompile(`the PO relay: (\d+) published`)
	relayDropped   = regexp.MustCompile(`(\d+) dropped by the stream as copies`)
)
