package runner

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/appservers"
	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/inputfile"
	"github.com/tierbench/tierbench/internal/livemetrics"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/server"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/tierproc"
	"github.com/tierbench/tierbench/internal/workload"
)

// The tiers as processes (issue 13): `serve --tier business|web` runs one
// tier alone; a run with --tiers 2 or 3 starts its tiers as children
// (tierproc) and drives them from its own process, which holds only the
// driver and the database connection of the checks.

// The values of serve's --tier.
const (
	TierBusiness = "business"
	TierWeb      = "web"
)

// ServeOptions are what `serve` is asked for beyond the run's
// configuration.
type ServeOptions struct {
	// Tier: "" (the whole middle tier), TierBusiness or TierWeb.
	Tier   string
	Listen string
	// Business is the URL of the business tier a web tier calls.
	Business string
	// TokenFile holds the token the business tier requires of its callers
	// and the web tier sends.
	TokenFile string
	// Insecure serves a tier that authenticates no one at an address
	// other hosts reach (guardListen).
	Insecure bool
	// Metrics, when set (--metrics-listen), counts the requests the tier
	// answers and exports its container's counters.
	Metrics *livemetrics.Server
}

// Serving is what a tier serves, once it listens.
type Serving struct {
	// Tier: "" (the whole middle tier), TierBusiness or TierWeb.
	Tier string
	// What: "rubis", "rubis business tier", "rubis web tier".
	What  string
	URL   string
	Scale int
	Style string
	// Protocol of a business tier.
	Protocol string
	// Entities are the served container's counters now; nil when the
	// tier has no container.
	Entities func() []workload.EntityStats
}

// tiersPath is where a served web tier answers its Tiers (its style and
// the remote calls its pages made) as JSON, for the run that started it.
const tiersPath = "/_tierbench/tiers"

// withTierPaths answers tiersPath beside serve when h knows its tiers,
// and appservers.EntitiesPath when it has a container (its counters and
// db's, to the callers that send token, when there is one); every other
// request goes to serve (h, or h measured) as it is.
func withTierPaths(h, serve http.Handler, token string, db func() store.Stats) http.Handler {
	tr, tiered := h.(workload.TieredRun)
	if !tiered && db == nil {
		return serve
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == tiersPath && tiered:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(tr.Tiers())
		case r.URL.Path == appservers.EntitiesPath && db != nil:
			if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
				http.Error(w, "this tier requires its token (--token-file)", http.StatusUnauthorized)
				return
			}
			var es []workload.EntityStats
			if er, ok := h.(workload.EntityRun); ok {
				es = er.EntityStats()
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(appservers.Encode(es, db()))
		default:
			serve.ServeHTTP(w, r)
		}
	})
}

// readToken reads --token-file: the token is the file's content without
// surrounding white space.
func readToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := inputfile.Read(context.Background(), path, "a token file", 64<<10)
	if err != nil {
		return "", config.Usage(fmt.Errorf("--token-file: %v", err))
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", config.Usage(fmt.Errorf("--token-file %s is empty: it must hold the token the tiers share", path))
	}
	return token, nil
}

// serveBusiness serves w's business tier over the remote layer at
// o.Listen, on the database cfg names.
func (r *Runner) serveBusiness(ctx context.Context, cfg config.Run, w workload.Workload, b workload.BusinessTier, o ServeOptions, ready func(Serving)) error {
	if o.Business != "" {
		return config.Usage(errors.New("--business is the web tier's (--tier web): where its business tier serves"))
	}
	token, err := readToken(o.TokenFile)
	if err != nil {
		return err
	}
	protocol, err := remote.ParseProtocol(tieringOf(cfg).Protocol)
	if err != nil {
		return config.Usage(fmt.Errorf("--%w", err))
	}
	if path, unix := strings.CutPrefix(o.Listen, remote.UnixPrefix); unix {
		// A Unix-domain socket reaches this host's processes alone.
		if protocol != remote.Lean || !filepath.IsAbs(path) {
			return config.Usage(fmt.Errorf("--listen %s: a Unix-domain socket (unix:/PATH, an absolute path) carries --protocol lean only", o.Listen))
		}
	} else if err := r.guardListen(ctx, o, "the "+cfg.Workload+" business tier", true); err != nil {
		return err
	}
	db, cfg, p, err := r.openServed(ctx, cfg, w)
	if err != nil {
		return err
	}
	defer db.Close()
	// Over read replicas each call carries its caller's commit position
	// in and out (decision 0045).
	so := remote.ServerOptions{Token: token, Positions: db.Replicas() > 0}
	if o.Metrics != nil {
		so.Observe = func(method string) func(codes.Code) {
			done := o.Metrics.Call(livemetrics.TierBusiness, method)
			return func(c codes.Code) { done(c.String(), c != codes.OK) }
		}
	}
	// The container's counters, for the run that drives the tier
	// (RegisterCounters) and serve's live metrics.
	var entities func() []workload.EntityStats
	p.ServedEntities = func(read func() []workload.EntityStats) {
		entities = read
		if o.Metrics != nil {
			o.Metrics.Entities(read)
		}
	}
	srv := remote.NewServer(protocol, so)
	remote.RegisterPing(srv)
	closeTier, err := b.ServeBusiness(ctx, db.DB, srv, p)
	if err != nil {
		return fmt.Errorf("start %s's business tier: %w", cfg.Workload, err)
	}
	defer closeTier()
	remote.RegisterCounters(srv, func() ([]byte, error) {
		var es []workload.EntityStats
		if entities != nil {
			es = entities()
		}
		return json.Marshal(appservers.Encode(es, db.Stats()))
	})
	// A load balancer's health check (--balancer); gRPC's is a connection.
	srv.HandleHTTP("GET "+server.HealthPath, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	ln, err := remote.Listen(o.Listen)
	if err != nil {
		return config.Usage(fmt.Errorf("--listen %s: %w", o.Listen, err))
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(Serving{Tier: TierBusiness, What: cfg.Workload + " business tier", URL: remote.URL(protocol, remote.Addr(ln.Addr())), Scale: cfg.Scale, Style: styleOf(cfg), Protocol: string(protocol)})
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	srv.Stop(stopCtx)
	return <-served
}

// serveWeb serves web's pages alone at o.Listen, over the business tier at
// o.Business. It holds no database.
func (r *Runner) serveWeb(ctx context.Context, cfg config.Run, web workload.Web, o ServeOptions, ready func(Serving)) error {
	if o.Business == "" {
		return config.Usage(errors.New("--tier web needs --business URL: where the business tier serves (tierbench serve " + cfg.Workload + " --tier business prints it)"))
	}
	if _, err := r.validated(cfg); err != nil {
		return err
	}
	token, err := readToken(o.TokenFile)
	if err != nil {
		return err
	}
	if err := r.guardListen(ctx, o, "the "+cfg.Workload+" web tier", false); err != nil {
		return err
	}
	conn, protocol, err := dialTier(ctx, "business", o.Business, token, cfg.ServerThreads)
	if err != nil {
		return err
	}
	defer conn.Close()
	withProtocol(&cfg, protocol)
	front, err := web.WebTier(ctx, conn, params(cfg))
	if err != nil {
		return err
	}
	defer front.Close()
	return serveHTTP(ctx, front, o.Listen, token, nil, o.measure(livemetrics.TierWeb), func(url string) {
		if ready != nil {
			ready(Serving{Tier: TierWeb, What: cfg.Workload + " web tier", URL: url, Style: styleOf(cfg), Protocol: string(protocol)})
		}
	})
}

// dialTier connects to the business tier at url (http:// or grpc://,
// the scheme its protocol) with conns connections and asks it whether it
// answers: a tier that does not is an infrastructure failure before
// anything is measured. flag names where url came from, for a bad one.
func dialTier(ctx context.Context, flag, url, token string, conns int) (*remote.Conn, remote.Protocol, error) {
	protocol, addr, err := remote.ParseURL(url)
	if err != nil {
		return nil, "", config.Usage(fmt.Errorf("--%s %w", flag, err))
	}
	pingCtx, cancel := context.WithTimeout(ctx, TargetProbeTimeout)
	defer cancel()
	conn, err := remote.DialReady(pingCtx, protocol, addr, remote.DialOptions{Token: token, Conns: conns})
	if err != nil {
		return nil, "", fmt.Errorf("the business tier at %s does not answer: %w", url, err)
	}
	return conn, protocol, nil
}

// newToken makes the token a run's tiers share, in a file of dir only
// the run's user reads.
func newToken(dir string) (string, string, error) {
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	path := filepath.Join(dir, "tier-token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return token, path, nil
}

// fetchTiers asks the web tier at base for its Tiers.
func fetchTiers(ctx context.Context, base string) (workload.Tiers, error) {
	var t workload.Tiers
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+tiersPath, nil)
	if err != nil {
		return t, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return t, fmt.Errorf("%s%s: %s", base, tiersPath, resp.Status)
	}
	return t, json.NewDecoder(resp.Body).Decode(&t)
}

// TierArgs are the flags of `serve` that give a tier the run's
// middle-tier configuration, each as the run resolved it (the database
// apart: see dbFile).
func TierArgs(cfg config.Run) []string {
	args := []string{"--server-threads", fmt.Sprint(cfg.ServerThreads), "--isolation", cfg.Isolation.String(),
		"--persistence", cfg.Persistence.String()}
	if _, ok := workload.OptionsOf(cfg).(workload.Tiered); ok {
		// A site served whole (TPC-App's) has no --protocol.
		args = append(args, "--protocol", tieringOf(cfg).Protocol)
	}
	if t, ok := workload.OptionsOf(cfg).(workload.ServerArgs); ok {
		args = append(args, t.TierArgs(cfg)...)
	}
	if cfg.Dispatch != "" {
		args = append(args, "--dispatch", cfg.Dispatch.String())
	}
	if cfg.ReplicaReads != "" {
		// The replicas themselves go in the database's file (dbFile).
		args = append(args, "--replica-reads", string(cfg.ReplicaReads))
	}
	if cfg.LockGranularity == store.TableLocks {
		args = append(args, "--lock-granularity", cfg.LockGranularity.String())
	}
	if cfg.Persistence.Container() {
		for _, kv := range []struct {
			flag  string
			value fmt.Stringer
		}{{"commit-option", cfg.CommitOption}, {"cache", cfg.Cache}, {"pool", cfg.Pool}, {"concurrency", cfg.Concurrency},
			{"refresh-interval", cfg.RefreshInterval}, {"lock-timeout", cfg.LockTimeout}} {
			if v := kv.value.String(); v != "" {
				args = append(args, "--"+kv.flag, v)
			}
		}
		for _, e := range cfg.Entity {
			args = append(args, "--entity", e.String())
		}
		// The shared cache's URL goes apart (sharedRun.tierArgs): it
		// names the run's keys, which every app server must share.
		for _, kv := range [][2]string{{"coherence", cfg.Coherence.String()}, {"coherence-broker", cfg.CoherenceBroker}} {
			if kv[1] != "" {
				args = append(args, "--"+kv[0], kv[1])
			}
		}
	}
	return args
}

// dbFile writes the run's database and its read replicas, passwords and
// all, as the db and replica keys of a configuration file (-f) only the
// run's user reads: on a command line a password would show in every
// user's process list.
func dbFile(dir string, cfg config.Run) (string, error) {
	unmasked := func(d store.DSN) string {
		if d.URL != nil {
			return d.URL.String()
		}
		return d.String()
	}
	keys := map[string]any{"db": unmasked(cfg.DB)}
	if len(cfg.Replicas) > 0 {
		var replicas []string
		for _, d := range cfg.Replicas {
			replicas = append(replicas, unmasked(d))
		}
		keys["replica"] = replicas
	}
	b, err := yaml.Marshal(keys)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "tier-db.yaml")
	return path, os.WriteFile(path, b, 0o600)
}

// tierDied is the cause of a run ended by a tier's death.
type tierDied struct{ err error }

func (e tierDied) Error() string { return e.err.Error() }
func (e tierDied) Unwrap() error { return e.err }

// watchProcs ends the run (stop, with a tierDied cause) when one of
// procs dies, until quit.
func watchProcs(procs []*tierproc.Proc, quit <-chan struct{}, stop context.CancelCauseFunc) {
	for _, p := range procs {
		go func() {
			select {
			case <-p.Done():
				stop(tierDied{p.Died()})
			case <-quit:
			}
		}()
	}
}

// DriveOptions are what `drive` is asked for beyond the run's
// configuration.
type DriveOptions struct {
	// TokenFile holds the token a business tier requires.
	TokenFile string
	// CheckDB, when set, is the database behind the driven business tier:
	// the driver reads it before and after, and runs the workload's
	// checks.
	CheckDB *store.DSN
	// Share and StartAt make the drive one agent's part of a drive spread
	// over several (driver.Config).
	Share   *driver.Share
	StartAt time.Time
}

// driveServed runs w's terminals against its business tier served at
// target (http:// or grpc://, as `serve` prints it).
func (r *Runner) driveServed(ctx context.Context, cfg config.Run, w workload.Served, target string, o DriveOptions) (*result.Result, error) {
	if _, err := r.validated(cfg); err != nil {
		return nil, err
	}
	if cfg.Duration > 0 {
		cfg.Iterations = 0
	}
	token, err := readToken(o.TokenFile)
	if err != nil {
		return nil, err
	}
	cfg.DB = store.DSN{} // the business tier's, unless --db names it for the checks
	var checkDB *store.DB
	if o.CheckDB != nil {
		cfg.DB = *o.CheckDB
		if checkDB, err = r.open(ctx, cfg, w, true, useDrive); err != nil {
			return nil, err
		}
		defer checkDB.Close()
	}
	targets := strings.Split(target, ",")
	var conns []*remote.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var protocol remote.Protocol
	for _, target := range targets {
		conn, p, err := dialTier(ctx, "target", target, token, cfg.ServerThreads)
		if err != nil {
			return nil, err
		}
		if protocol != "" && p != protocol {
			return nil, config.Usage(fmt.Errorf("--target %s: its protocol is %s, the first target's %s: one drive speaks one protocol", target, p, protocol))
		}
		conns, protocol = append(conns, conn), p
	}
	withProtocol(&cfg, protocol)
	s := &state{r: r, cfg: cfg, info: w.Info(), began: time.Now(), web: true, target: target, checked: checkDB, share: o.Share, startAt: o.StartAt}
	s.begin(phaseStart)
	s.watched = &tier{name: "the business tier at " + target, lost: func() int64 { _, f := s.rec.Completed(); return f },
		probe: func(ctx context.Context) error {
			// Lost when none of the targets answers.
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			var errs []error
			for _, conn := range conns {
				err := remote.Ping(ctx, conn)
				if err == nil {
					return nil
				}
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		}}
	p := params(cfg)
	var runs []workload.Run
	for _, conn := range conns {
		run, err := w.RemoteClients(ctx, conn, p)
		if err != nil {
			return s.fail(ctx, phaseStart, fmt.Errorf("start %s's clients: %w", cfg.Workload, err), "nothing was measured")
		}
		runs = append(runs, run)
	}
	t := driven(runs)
	t.processes = 1 + len(targets)
	for i, conn := range conns {
		t.servers = append(t.servers, &appServer{name: targetName(i, len(targets)), url: targets[i], read: businessCounters(conn),
			probe: func(ctx context.Context) error { return remote.Ping(ctx, conn) }})
	}
	if checkDB != nil {
		if t.checker, err = w.Checker(ctx, checkDB, p); err != nil {
			return s.fail(ctx, phaseStart, fmt.Errorf("read %s's database before the run: %w", cfg.Workload, err), "nothing was measured")
		}
	}
	t.readStart(ctx, true)
	return s.drive(ctx, t)
}

// tieringOf is the run's --tiers and --protocol: its options', or one
// process.
func tieringOf(cfg config.Run) workload.Tiering {
	return workload.TieringOf(workload.OptionsOf(cfg))
}

// styleOf is the style of the run's middle tier; "" for a workload with
// one way to build it.
func styleOf(cfg config.Run) string {
	if t, ok := workload.OptionsOf(cfg).(workload.Tiered); ok {
		return t.StyleOf(cfg)
	}
	return ""
}

// withProtocol sets the protocol a tier resolved (its --business or
// --target URL's) into the run's options.
func withProtocol(cfg *config.Run, p remote.Protocol) {
	if t, ok := workload.OptionsOf(*cfg).(workload.Tiered); ok {
		cfg.Options = t.WithProtocol(string(p))
	}
}
