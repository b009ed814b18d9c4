// Package messagingtest is the workloads' fault tests' side of a private
// NATS cluster (testsvc.NATSClusterOf): it watches a run's queue from
// outside, through its own connection, and kills the node that leads the
// queue's stream, or one that follows it, by PID while messages flow.
//
// It depends on messaging and testsvc, and is imported by tests only.
package messagingtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// The victims of KillWhenFlowing.
const (
	Leader   = "leader"
	Follower = "follower"
)

// pollInterval spaces the looks at the stream while waiting for traffic;
// lookTimeout bounds one.
const (
	pollInterval = 50 * time.Millisecond
	lookTimeout  = time.Second
)

// KillWhenFlowing waits until a queue whose name begins with prefix
// exists on cluster and has stored at least minStored messages (the run's
// traffic is flowing), then kills the node that leads its stream (victim
// Leader) or one that follows it (Follower), and returns that node's
// name. When ctx ends first (the test cancels it when its run ends) it
// kills nothing and says what it saw last.
func KillWhenFlowing(t testing.TB, ctx context.Context, cluster *testsvc.NATSCluster, prefix, victim string, minStored uint64) (string, error) {
	t.Helper()
	b, err := messaging.Open(ctx, cluster.URLs(), "")
	if err != nil {
		return "", err
	}
	defer b.Close()
	var p messaging.Placement
	for {
		// Each look bounded: a JetStream API request can go unanswered
		// (a server busy electing), and the run would end meanwhile.
		lookCtx, cancel := context.WithTimeout(ctx, lookTimeout)
		names, err := b.QueueNames(lookCtx, prefix)
		if err == nil && len(names) > 0 {
			p, err = b.Placement(lookCtx, names[0])
		}
		cancel()
		if err == nil && p.Stored >= minStored && p.Leader != "" {
			break
		}
		if err != nil && !errors.Is(err, messaging.ErrNoQueue) && ctx.Err() == nil {
			t.Logf("messagingtest: looking at queue %s*: %v", prefix, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("messagingtest: no queue %s* with %d messages stored and a leader before the run ended (last seen %+v): %w", prefix, minStored, p, context.Cause(ctx))
		case <-time.After(pollInterval):
		}
	}
	name := p.Leader
	if victim == Follower {
		if len(p.Followers) == 0 {
			return "", fmt.Errorf("messagingtest: the stream has no follower to kill: %+v", p)
		}
		name = p.Followers[0].Name
	}
	node := cluster.Node(name)
	t.Logf("messagingtest: killing the %s %s (pid %d) of %s's stream, %d messages stored", victim, name, node.PID(), prefix, p.Stored)
	node.Kill()
	return name, nil
}

// KillDuringRun calls run (a workload's run on cluster, its queues'
// names beginning with prefix) and, while it runs, kills the victim node
// of the queue's stream once minStored messages went through it (see
// KillWhenFlowing). It returns run's result; the test fails if run fails
// or the run ended before a node could be killed.
func KillDuringRun[R any](t testing.TB, cluster *testsvc.NATSCluster, prefix, victim string, minStored uint64, run func() (R, error)) R {
	t.Helper()
	type outcome struct {
		res R
		err error
	}
	done := make(chan outcome, 1)
	ctx, runEnded := context.WithTimeout(context.Background(), runTimeout)
	defer runEnded()
	go func() {
		defer runEnded()
		res, err := run()
		done <- outcome{res, err}
	}()
	killed, kerr := KillWhenFlowing(t, ctx, cluster, prefix, victim, minStored)
	o := <-done
	if o.err != nil || kerr != nil {
		t.Fatalf("run: %v; the %s %s killed: %v", o.err, victim, killed, kerr)
	}
	return o.res
}

// runTimeout bounds the wait for a run's traffic: its load and start on
// the loaded two-core machine included.
const runTimeout = 3 * time.Minute
