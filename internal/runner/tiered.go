package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/tierbench/tierbench/internal/appservers"
	"github.com/tierbench/tierbench/internal/balancer"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/tierproc"
	"github.com/tierbench/tierbench/internal/workload"
)

// startTiers starts the run's middle tier as child processes of
// tierbench on its database (--tiers 2|3, --app-servers N: N copies),
// and readies the clients against them in this process: the browsers
// against each site or web tier (RUBiS), or the terminals calling each
// business tier (Stock-Online), spread over the servers or sent through
// the balancer. The checks read the database from here.
func (s *state) startTiers(ctx context.Context, w workload.Workload, dir string) (*tieredRun, error) {
	cfg := s.cfg
	exe, err := tierproc.Executable()
	if err != nil {
		return nil, err
	}
	token, tokenFile, err := newToken(dir)
	if err != nil {
		return nil, err
	}
	n, tiers := cfg.Servers(), tieringOf(cfg).Tiers
	hosted := s.hosted()
	protocol, _ := remote.ParseProtocol(tieringOf(cfg).Protocol)
	t := &tieredRun{processes: 1, token: token, log: s.r.TierLog, protocol: protocol}
	if err := t.startQueues(ctx, &cfg, dir); err != nil {
		return nil, err
	}
	p := params(cfg)
	p.Persistence, p.Dir = cfg.Persistence, dir
	if _, isWeb := w.(workload.Web); cfg.Balancer != "" && !isWeb && tieringOf(cfg).Protocol == string(remote.Lean) {
		// HAProxy balances HTTP (and gRPC's HTTP/2) requests; the lean
		// protocol's frames are not requests it reads.
		t.stopAll()
		return nil, config.Usage(fmt.Errorf("--balancer %s stands in front of http or grpc app servers, not --protocol %s", cfg.Balancer, remote.Lean))
	}
	entities, err := entitySettings(cfg, s.info)
	if err != nil {
		t.stopAll()
		return nil, config.Usage(err)
	}
	if err := t.startBroker(ctx, &cfg, entities, dir); err != nil {
		t.stopAll()
		return nil, err
	}
	db, err := dbFile(dir, cfg)
	if err != nil {
		t.stopAll()
		return nil, err
	}
	onDB := append(append([]string{"--file", db, "--token-file", tokenFile}, TierArgs(cfg)...), s.shared.tierArgs()...)
	fail := func(err error) (*tieredRun, error) {
		t.stopAll()
		return nil, err
	}
	web, isWeb := w.(workload.Web)
	served, isServed := w.(workload.Served)
	switch {
	case isWeb:
		t.checker, err = web.Checker(ctx, s.db, p)
	case isServed:
		t.checker, err = served.Checker(ctx, s.db, p)
	default:
		return fail(config.Usage(fmt.Errorf("--tiers %d: %s's tiers cannot run apart; the workloads whose can: rubis, stockonline", tiers, cfg.Workload)))
	}
	if err != nil {
		return fail(err)
	}
	for i := range n {
		sv := &appServer{name: serverName(i)}
		onDB := onDB
		if n > 1 {
			onDB = append(slices.Clip(onDB), "--app-servers", fmt.Sprint(n), "--app-server", fmt.Sprint(i))
		}
		if n == 1 {
			sv.name = "the middle tier"
		}
		start := func(tier string, args ...string) (*tierproc.Proc, error) {
			name := tier
			if n > 1 {
				name = sv.name + "'s " + tier
			}
			listen := hosted.listen(hostOf(tier))
			if tier == "business tier" {
				listen = t.businessListen(hosted, dir, i, listen)
			}
			args = append([]string{"serve", cfg.Workload, "--listen", listen}, args...)
			if hosted != nil && tier != "business tier" {
				// Pages take no token; the hosts' network is the run's
				// alone.
				args = append(args, "--insecure")
			}
			prog, args := hosted.command(hostOf(tier), exe, args)
			proc, err := tierproc.Start(ctx, name, prog, args, s.r.TierLog)
			if err == nil && hosted != nil {
				hosted.ran(hostOf(tier), fmt.Sprintf("the %s (pid %d, %s)", tier, proc.PID(), proc.URL))
				// Its callers call it through its host's proxy.
				if proc.URL, err = hosted.target(tier, proc.URL); err != nil {
					proc.Stop()
				}
			}
			if err == nil {
				sv.procs = append(sv.procs, proc)
				t.procs = append(t.procs, proc)
				s.procs = append(s.procs, proc)
				t.processes++
				if s.r.TierLog != nil {
					fmt.Fprintf(s.r.TierLog, "started the %s: pid %d, %s\n", name, proc.PID(), proc.URL)
				}
			}
			return proc, err
		}
		t.servers = append(t.servers, sv)
		var business *tierproc.Proc
		switch {
		case isWeb && tiers == 3:
			if business, err = start("business tier", append([]string{"--tier", TierBusiness}, onDB...)...); err != nil {
				return fail(err)
			}
			site, err := start("web tier", "--tier", TierWeb, "--business", business.URL, "--token-file", tokenFile,
				"--style", styleOf(cfg), "--server-threads", fmt.Sprint(cfg.ServerThreads))
			if err != nil {
				return fail(err)
			}
			sv.url, sv.site = site.URL, site.URL
		case isWeb:
			site, err := start("middle tier", onDB...)
			if err != nil {
				return fail(err)
			}
			sv.url, sv.site, sv.holder = site.URL, site.URL, site
			sv.read = siteCounters(site.URL, token)
		default:
			if business, err = start("business tier", onDB...); err != nil {
				return fail(err)
			}
			sv.url = business.URL
		}
		if business != nil {
			sv.holder = business
			conn, _, err := dialTier(ctx, "business", business.URL, token, 1)
			if err != nil {
				return fail(err)
			}
			t.conns = append(t.conns, conn)
			sv.read = businessCounters(conn)
		}
	}
	targets := make([]string, n)
	for i, sv := range t.servers {
		targets[i] = sv.url
	}
	if cfg.Balancer != "" {
		front, err := t.startBalancer(ctx, dir, protocol, isWeb)
		if err != nil {
			return fail(fmt.Errorf("--balancer %s: %w", cfg.Balancer, err))
		}
		t.processes++
		targets = []string{front}
	}
	var runs []workload.Run
	for _, target := range targets {
		var run workload.Run
		if isWeb {
			run, err = web.Browsers(ctx, target, p)
		} else {
			var conn *remote.Conn
			if conn, _, err = dialTier(ctx, "business", target, token, cfg.ServerThreads); err != nil {
				return fail(err)
			}
			t.conns = append(t.conns, conn)
			run, err = served.RemoteClients(ctx, conn, p)
		}
		if err != nil {
			return fail(err)
		}
		runs = append(runs, run)
	}
	t.Run = runs[0]
	if len(runs) > 1 {
		t.Run = appservers.NewSpread(runs)
	}
	if t.balancer != nil {
		// The probe's requests and the clients' first pings are not the
		// run's.
		st, err := t.balancer.Stats()
		if err != nil {
			return fail(fmt.Errorf("haproxy's statistics: %w", err))
		}
		for _, s := range st {
			t.probed = append(t.probed, s.Requests)
		}
	}
	if err := t.readStart(ctx, false); err != nil {
		return fail(err)
	}
	return t, nil
}

// tieredRun is a run whose middle tier is in other processes: its
// clients, the checker of its database, the servers and what stands
// beside them.
type tieredRun struct {
	workload.Run
	checker workload.Checker
	// procs in the order they started: each calls the ones before it.
	procs   []*tierproc.Proc
	servers []*appServer
	// processes the run spans: the driver's, the tiers', the balancer's;
	// 0 for a drive of sites, whose tiers are theirs (no Tiers).
	processes int
	token     string
	// log is the runner's TierLog: what the run starts for its tiers.
	log io.Writer
	// conns are this process's connections to business tiers: the
	// clients' and the counters'.
	conns []*remote.Conn
	// broker carries the app servers' invalidations, queues the
	// workload's agents' queues (both embedded, the run's).
	broker, queues *messaging.Broker
	balancer       *balancer.HAProxy
	balanced       *result.Balancer
	// requests are what haproxy sent each server during the run (probed
	// before it), read before it stops.
	requests, probed []int64
	tiers            *workload.Tiers
	// protocol the business tiers serve, and the socket they are called
	// over ("tcp" or "unix", businessListen).
	protocol  remote.Protocol
	transport string
}

func (t *tieredRun) Check(ctx context.Context, done workload.Outcomes) ([]workload.Check, error) {
	return t.checker.Check(ctx, done)
}

// Stop stops the clients, reads the servers' counters and the calls
// their pages made, then stops the balancer and the tiers, callers
// first.
func (t *tieredRun) Stop(ctx context.Context) error {
	var errs []error
	if st, ok := t.Run.(workload.Stopper); ok {
		errs = append(errs, st.Stop(ctx))
	}
	if d, ok := t.checker.(workload.Drainer); ok {
		// The servers' agents finish what the run committed before the
		// servers stop and their counters are read.
		errs = append(errs, d.Drain(ctx))
	}
	t.readEnd(ctx)
	if t.balancer != nil {
		if st, err := t.balancer.Stats(); err == nil {
			for i, s := range st {
				t.requests = append(t.requests, s.Requests-t.probed[i])
			}
		}
	}
	if tr, ok := t.Run.(workload.TieredRun); ok {
		x := tr.Tiers()
		t.tiers = &x
	} else {
		var all []workload.Tiers
		for _, sv := range t.servers {
			if sv.site == "" || sv.death() != nil {
				continue
			}
			if x, err := fetchTiers(ctx, sv.site); err == nil {
				all = append(all, x)
			}
		}
		if len(all) > 0 {
			x := appservers.MergeTiers(all...)
			t.tiers = &x
		}
	}
	errs = append(errs, t.stopAll())
	return errors.Join(errs...)
}

// stopAll closes the connections, stops the balancer and the tiers still
// running, the last started first, then the coherence broker.
func (t *tieredRun) stopAll() error {
	var errs []error
	for _, c := range t.conns {
		c.Close()
	}
	t.conns = nil
	if t.balancer != nil {
		errs = append(errs, t.balancer.Stop())
	}
	for i := len(t.procs) - 1; i >= 0; i-- {
		errs = append(errs, t.procs[i].Stop())
	}
	for _, b := range []**messaging.Broker{&t.broker, &t.queues} {
		if *b != nil {
			errs = append(errs, (*b).Close())
			*b = nil
		}
	}
	return errors.Join(errs...)
}

// Tiers are the web tiers' (or the remote clients') with the processes
// the run spanned.
func (t *tieredRun) Tiers() workload.Tiers {
	var x workload.Tiers
	if t.tiers != nil {
		x = *t.tiers
	}
	x.Processes = t.processes
	if x.Protocol != "" {
		x.Transport = t.transport
	}
	return x
}

// unixPathMax bounds a Unix-domain socket's path (sun_path's 108 bytes,
// its terminating NUL included).
const unixPathMax = 107

// businessListen is where server i's business tier listens: over lean on
// this host, a Unix-domain socket in the run's directory (decision 0039:
// the calls skip the TCP stack; the result's tiers say "unix"), else tcp
// (another host, or a directory whose path is too long for a socket's).
func (t *tieredRun) businessListen(hosted *hosted, dir string, i int, tcp string) string {
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("business-%d.sock", i)))
	if hosted != nil || t.protocol != remote.Lean || err != nil || len(path) > unixPathMax {
		t.transport = "tcp"
		return tcp
	}
	t.transport = "unix"
	return remote.UnixPrefix + path
}
