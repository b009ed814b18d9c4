package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/hosts"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/workload"
)

// --placement hosts (decision 0027): the command line makes the hosts
// (internal/hosts) and re-executes the run on the driver's host with
// their plan (Runner.Hosts); this side starts the database and the
// tiers on their hosts, puts the link's delaying proxies in front of
// them, and records it all.

// HostRoles are the hosts a run of cfg needs: the database's, each tier
// process's (none when the middle tier runs in the driver's process,
// --tiers 1), the driver's.
func (r *Runner) HostRoles(cfg config.Run) ([]string, error) {
	w, err := r.runnable(&cfg)
	if err != nil {
		return nil, err
	}
	roles := []string{hosts.DB}
	if apart(cfg) {
		_, web := w.(workload.Web)
		switch {
		case web && tieringOf(cfg).Tiers == 3:
			roles = append(roles, hosts.Business, hosts.Web)
		case web:
			roles = append(roles, hosts.Web) // pages and beans in one process
		default:
			roles = append(roles, hosts.Business)
		}
	}
	if cfg.Partition != "" && !slices.Contains(roles, hosts.Business) {
		return nil, config.Usage(fmt.Errorf("--partition cuts the business tier from its caller, and this run has none apart: give --tiers 2 (stockonline) or --tiers 3 (rubis)"))
	}
	return append(roles, hosts.Driver), nil
}

// hosted is a run's hosts under way, on this, the driver's, host.
type hosted struct {
	plan *hosts.Plan
	// mu guards runs and proxies, which tiers add to as they start.
	mu      sync.Mutex
	runs    map[string][]string
	proxies []*hosts.Proxy
	cuts    []result.Partition
}

func newHosted(plan *hosts.Plan) *hosted {
	h := &hosted{plan: plan, runs: map[string][]string{}}
	h.ran(hosts.Driver, "the driver and the checks (this process)")
	return h
}

// ran notes what runs on role's host.
func (h *hosted) ran(role, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs[role] = append(h.runs[role], what)
}

// front is where role's clients reach addr (HOST:PORT on role's host):
// addr itself, or, when the link has a delay, a delaying proxy on the
// same host in front of it.
func (h *hosted) front(role, addr string) (string, error) {
	if h == nil || h.plan.Link.Delay == 0 {
		return addr, nil
	}
	p, err := h.plan.Delay(role, addr)
	if err != nil {
		return "", fmt.Errorf("the delaying proxy on the %s host: %w", role, err)
	}
	h.mu.Lock()
	h.proxies = append(h.proxies, p)
	h.mu.Unlock()
	return p.Addr(), nil
}

// frontURL is front for a URL (scheme://HOST:PORT…).
func (h *hosted) frontURL(role, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Host, err = h.front(role, u.Host); err != nil {
		return "", err
	}
	return u.String(), nil
}

// listen is where a tier on role's host listens: its address, any port.
func (h *hosted) listen(role string) string {
	if h == nil {
		return "127.0.0.1:0"
	}
	return net.JoinHostPort(h.plan.Host(role).Address, "0")
}

// command is how a tier on role's host is started: exe args, entered
// into the host's namespace by ip netns exec.
func (h *hosted) command(role, exe string, args []string) (string, []string) {
	if h == nil {
		return exe, args
	}
	argv := h.plan.Exec(role, append([]string{exe}, args...)...)
	return argv[0], argv[1:]
}

// close stops the proxies.
func (h *hosted) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, p := range h.proxies {
		errs = append(errs, p.Close())
	}
	h.proxies = nil
	return errors.Join(errs...)
}

// startDB starts the placement's server on the database's host, with
// the --pg-setting parameters settings.
func (h *hosted) startDB(ctx context.Context, cpus placement.CPUSet, settings []string) (*placement.Server, string, error) {
	db := h.plan.Host(hosts.DB)
	srv, err := placement.StartOn(ctx, "", cpus, placement.Network{Host: db.Address, Netns: h.plan.Path(hosts.DB)}, settings...)
	if err != nil {
		return nil, "", err
	}
	h.ran(hosts.DB, fmt.Sprintf("PostgreSQL %s (pid %d, port %d)", srv.Major(), srv.PID(), srv.Port()))
	u := srv.URL()
	if u, err = h.frontURL(hosts.DB, u); err != nil {
		srv.Stop()
		return nil, "", err
	}
	return srv, u, nil
}

// environment records the hosts, the link and the cuts.
func (h *hosted) environment(env *result.Environment) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range h.plan.Hosts {
		env.Hosts = append(env.Hosts, result.Host{Role: x.Role, Namespace: x.Namespace, Address: x.Address, Runs: h.runs[x.Role]})
	}
	l := h.plan.Link
	how := l.How()
	if how == "" {
		how = "veth pairs to a bridge, no rate or delay set"
	}
	env.Link = &result.Link{RateBitS: l.Rate, DelayMS: float64(l.Delay) / float64(time.Millisecond), How: how}
	env.Partitions = append(env.Partitions, h.cuts...)
}

// partition cuts the business tier from its caller (the web tier, or the
// driver) at after began, for dur, unless ctx ends first; it heals on
// every path. It returns once the cut is healed.
func (h *hosted) partition(ctx context.Context, began time.Time, at, dur time.Duration, notes func(string)) error {
	caller := hosts.Driver
	if h.plan.Host(hosts.Web).Namespace != "" {
		caller = hosts.Web
	}
	if h.plan.Host(hosts.Business).Namespace == "" {
		return config.Usage(errors.New("--partition cuts the business tier from its caller: give --tiers 2 (stockonline) or --tiers 3 (rubis)"))
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(time.Until(began.Add(at))):
	}
	bg := context.WithoutCancel(ctx)
	if err := h.plan.Cut(bg, hosts.Business, caller); err != nil {
		return err
	}
	from := time.Since(began)
	notes(fmt.Sprintf("partition: the business host cut from the %s host at %.1fs", caller, from.Seconds()))
	select {
	case <-ctx.Done():
	case <-time.After(dur):
	}
	err := h.plan.Heal(bg, hosts.Business, caller)
	to := time.Since(began)
	notes(fmt.Sprintf("partition: healed at %.1fs", to.Seconds()))
	h.mu.Lock()
	h.cuts = append(h.cuts, result.Partition{Between: [2]string{hosts.Business, caller}, FromS: from.Seconds(), ToS: to.Seconds()})
	h.mu.Unlock()
	return err
}

// hostOf is the host a tier of the given name runs on.
func hostOf(tier string) string {
	switch {
	case strings.Contains(tier, "web"), tier == "middle tier":
		return hosts.Web
	default:
		return hosts.Business
	}
}

// target is the URL a tier's callers call: its own, or, with a delay,
// its host's proxy's.
func (h *hosted) target(tier, raw string) (string, error) {
	if h == nil {
		return raw, nil
	}
	return h.frontURL(hostOf(tier), raw)
}

// hosted is the run's hosts, or nil.
func (s *state) hosted() *hosted {
	if s.placed == nil {
		return nil
	}
	return s.placed.hosted
}

// partition, under --partition, makes the driver's start (dcfg.Began)
// start the cut; the function it returns ends a cut still under way (the
// run ended first) and waits until it is healed.
func (s *state) partition(ctx context.Context, dcfg *driver.Config) (healed func()) {
	h := s.hosted()
	if h == nil || s.cfg.Partition == "" {
		return func() {}
	}
	at, dur, _ := config.ParsePartition(s.cfg.Partition) // validated
	return s.cutWhenBegun(ctx, dcfg, func(ctx context.Context, began time.Time, note func(string)) error {
		return h.partition(ctx, began, at, dur, note)
	})
}

// cutWhenBegun makes the driver's start (dcfg.Began) start cut in a
// goroutine of its own, with the measured run's start and the run's
// notes; the function it returns ends ctx, so that a cut still under way
// heals, and waits until cut has returned. An error cut returns is a
// note: the run goes on.
func (s *state) cutWhenBegun(ctx context.Context, dcfg *driver.Config, cut func(ctx context.Context, began time.Time, note func(string)) error) (healed func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	note := func(line string) {
		if s.r.Notes != nil {
			fmt.Fprintln(s.r.Notes, line)
		}
	}
	began := dcfg.Began
	dcfg.Began = func(t time.Time) {
		if began != nil {
			began(t)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cut(ctx, t, note); err != nil {
				note("partition: " + err.Error())
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
