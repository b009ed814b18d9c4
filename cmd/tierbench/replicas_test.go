package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// runOnReplicas runs tierbench's args (a run of workload) on c's primary
// and standbys, and returns its result, which must pass.
func runOnReplicas(t *testing.T, c *testsvc.PGCluster, workload string, args ...string) *result.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run.json")
	all := []string{"run", workload, "--db", c.Primary.DSNOf("test"), "--out", out}
	for _, s := range c.Standbys {
		all = append(all, "--replica", s.DSNOf("test"))
	}
	run := testsvc.Start(t, testsvc.Binary(t), append(all, args...)...)
	code, err := run.Wait(3 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("%v exited %d (%v): %s\n%s", args, code, err, run.Stdout(), run.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wantChecksPassed(t, r)
	if r.Summary.Errors != 0 || len(r.Checks) == 0 {
		t.Errorf("%d errors, %d checks; want none, some", r.Summary.Errors, len(r.Checks))
	}
	if r.Database.Replicas == nil || len(r.Database.Replicas.Replicas) != len(c.Standbys) {
		t.Fatalf("database.replicas = %+v; want the %d standbys'", r.Database.Replicas, len(c.Standbys))
	}
	return r
}

// TestReplicasUnderTiersAndAppServers: Stock-Online's business tier in a
// process of its own (--tiers 2), then in two (--app-servers 2), on a
// private primary with two streaming standbys. The children route the
// queries (read-only transactions) and the result counts every one of
// them exactly once, on a replica or the primary: 4 clients × 2
// iterations × 35 queries; over two app servers the result's reads are
// exactly the sum of the servers' own, replica by replica. The terminals'
// positions cross the calls (the children probe the replicas for them,
// and read a position after each write commit); the lag is sampled once,
// by the run's own process: one entry per standby, not one per process.
func TestReplicasUnderTiersAndAppServers(t *testing.T) {
	testsvc.SkipUnlessLong(t, "starts a PostgreSQL primary and two standbys and two runs over child processes; internal/remote's TestPositionsCrossTheLayer and internal/appservers's TestSumDatabaseReplicas run the mechanisms in make test")
	t.Parallel()
	c := testsvc.PGReplicas(t, 2)
	const queries = 4 * 2 * 35
	for _, tc := range []struct {
		name    string
		args    []string
		servers int
	}{
		{"tiers 2", []string{"--tiers", "2"}, 0},
		{"app servers 2", []string{"--app-servers", "2"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runOnReplicas(t, c, "stockonline", append([]string{"--persistence", "cmp", "--clients", "4", "--iterations", "2", "--protocol", "http"}, tc.args...)...)
			rs := r.Database.Replicas
			total := rs.Total()
			t.Logf("%s: reads %d and %d on the replicas, %d on the primary; %d probes, %d positions, %d violations",
				tc.name, rs.Replicas[0].Reads, rs.Replicas[1].Reads, rs.PrimaryReads, total.Probes, rs.Positions, total.ReadYourWritesViolations)
			if got := total.Reads + rs.PrimaryReads; got != queries {
				t.Errorf("read-only transactions routed: %d (%d retries); want exactly %d, the queries", got, r.Summary.Retries, queries)
			}
			if rs.Replicas[0].Reads == 0 || rs.Replicas[1].Reads == 0 {
				t.Errorf("reads %d and %d: want both replicas read", rs.Replicas[0].Reads, rs.Replicas[1].Reads)
			}
			// 8 of the deck's 43 write: a position read after each commit,
			// and the reads after them probe the replicas for it.
			if rs.Positions == 0 || total.Probes == 0 {
				t.Errorf("%d positions read, %d probes; want some of both: the clients' positions crossed the calls", rs.Positions, total.Probes)
			}
			if len(rs.Lag) != 2 || rs.Lag[0].Samples == 0 {
				t.Errorf("lag %+v; want one entry per standby, sampled", rs.Lag)
			}
			if len(r.Servers) != tc.servers {
				t.Fatalf("%d servers; want %d", len(r.Servers), tc.servers)
			}
			if tc.servers == 0 {
				return
			}
			var sum store.ReplicaSummary
			for _, s := range r.Servers {
				if s.Replicas == nil || s.Replicas.Total().Reads == 0 || s.Replicas.Lag != nil {
					t.Fatalf("%s's replicas = %+v; want its own reads, no lag", s.Name, s.Replicas)
				}
				sum = *sum.Plus(s.Replicas)
			}
			for i, want := range rs.Replicas {
				got := sum.Replicas[i]
				if got.Reads != want.Reads || got.Probes != want.Probes || got.ReadYourWritesViolations != want.ReadYourWritesViolations || got.Statements > want.Statements {
					t.Errorf("%s: the servers' sum %+v; the result's %+v", want.Replica, got, want)
				}
			}
			if sum.PrimaryReads != rs.PrimaryReads || sum.Positions != rs.Positions {
				t.Errorf("the servers' primary reads %d, positions %d; the result's %d, %d", sum.PrimaryReads, sum.Positions, rs.PrimaryReads, rs.Positions)
			}
		})
	}
}

// TestRubisTiersReadYourWrites: RUBiS's facade over --tiers 3 (the web
// tier and the business tier in processes of their own), bidding without
// think time, on standbys that apply each commit 300 ms late
// (recovery_min_apply_delay). The browsers' positions cross from their
// cookie to the web tier, over the protocol to the business tier and
// back: under eventual reads the business tier's reads on the standbys
// count violations; under causal reads none, and they wait. grpc and
// lean (one carries the position in metadata, the other in its frames).
func TestRubisTiersReadYourWrites(t *testing.T) {
	testsvc.SkipUnlessLong(t, "four RUBiS runs over three processes on a private three-server PostgreSQL cluster")
	t.Parallel()
	c := testsvc.PGReplicas(t, 2)
	for _, s := range c.Standbys {
		s.Exec(t, "ALTER SYSTEM SET recovery_min_apply_delay = '300ms'")
		s.Exec(t, "SELECT pg_reload_conf()")
	}
	loaded := false
	for _, protocol := range []string{"grpc", "lean"} {
		for _, mode := range []store.ReplicaReads{store.Eventual, store.Causal} {
			t.Run(fmt.Sprint(protocol, "/", mode), func(t *testing.T) {
				args := []string{"--tiers", "3", "--style", "facade", "--protocol", protocol, "--replica-reads", string(mode),
					"--clients", "4", "--iterations", "40", "--think-scale", "0", "--skip-images", "--one-based-ids"}
				if loaded {
					args = append(args, "--no-load")
				}
				loaded = true
				r := runOnReplicas(t, c, "rubis", args...)
				if r.Tiers == nil || r.Tiers.Processes != 3 || r.Tiers.Protocol != protocol {
					t.Fatalf("tiers %+v; want 3 processes over %s", r.Tiers, protocol)
				}
				rs := r.Database.Replicas
				total := rs.Total()
				t.Logf("%s %s: %d reads on the replicas, %d on the primary, %d positions; %d violations, %d causal waits (%.1f ms), %d gave up",
					protocol, mode, total.Reads, rs.PrimaryReads, rs.Positions, total.ReadYourWritesViolations, total.CausalWaits, total.CausalWaitMs, total.CausalFallbacks)
				if total.Reads == 0 || rs.Positions == 0 {
					t.Fatalf("%d replica reads, %d positions: the business tier did not write and read over the replicas", total.Reads, rs.Positions)
				}
				switch mode {
				case store.Eventual:
					if total.ReadYourWritesViolations == 0 {
						t.Errorf("no read-your-writes violation with the standbys 300 ms behind: the positions did not reach the business tier")
					}
				case store.Causal:
					if total.ReadYourWritesViolations != 0 || total.CausalWaits == 0 {
						t.Errorf("causal: %d violations, %d waits; want 0 and some", total.ReadYourWritesViolations, total.CausalWaits)
					}
				}
			})
		}
	}
}
