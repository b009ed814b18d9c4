package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/placement"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
)

// placed is a run's placement under way: its private server started and
// this process pinned.
type placed struct {
	plan    placement.Plan
	server  *placement.Server
	restore func() error
	// hosted: --placement hosts, the run's hosts.
	hosted *hosted
	// settings are the --pg-setting parameters as the server reports them.
	settings map[string]string
}

// place starts the private PostgreSQL server of --placement on the plan's
// database CPUs, points cfg at it and pins this process to the plan's
// application CPUs. The caller ends it with stop, on every path.
func (r *Runner) place(ctx context.Context, cfg *config.Run) (*placed, error) {
	mode := placement.Mode(cfg.Placement)
	cpus, err := placement.Allowed()
	if err != nil {
		return nil, err
	}
	plan, err := placement.Split(mode, cpus)
	if err != nil {
		return nil, config.Usage(err)
	}
	if mode == placement.Hosts {
		return r.placeHosts(ctx, cfg, plan)
	}
	srv, err := placement.Start(ctx, "", plan.DB, cfg.PGSettings...)
	if err != nil {
		return nil, placementError(mode, err)
	}
	p := &placed{plan: plan, server: srv}
	if cfg.DB, err = store.ParseDSN(srv.URL()); err != nil {
		p.stop()
		return nil, err
	}
	if r.Notes != nil {
		fmt.Fprintf(r.Notes, "placement %s: private PostgreSQL %s on 127.0.0.1:%d pinned to %s, tierbench to %s\n",
			mode, srv.Major(), srv.Port(), plan.DB.Words(), plan.App.Words())
	}
	if p.restore, err = placement.Pin(plan.App); err != nil {
		p.stop()
		return nil, fmt.Errorf("--placement %s: %w", mode, err)
	}
	return p, nil
}

// placeHosts starts the server on the database's host of the plan the
// command line made (Runner.Hosts) and points cfg at it.
func (r *Runner) placeHosts(ctx context.Context, cfg *config.Run, plan placement.Plan) (*placed, error) {
	if r.Hosts == nil {
		return nil, config.Usage(errors.New("--placement hosts needs its hosts made by the command line (tierbench run, tierbench sweep), which runs the run again on the driver's host"))
	}
	h := newHosted(r.Hosts)
	srv, dsn, err := h.startDB(ctx, plan.DB, cfg.PGSettings)
	if err != nil {
		h.close()
		return nil, placementError(placement.Hosts, err)
	}
	p := &placed{plan: plan, server: srv, hosted: h}
	if cfg.DB, err = store.ParseDSN(dsn); err != nil {
		p.stop()
		return nil, err
	}
	if r.Notes != nil {
		db := r.Hosts.Host("db")
		link := r.Hosts.Link.String()
		if link == "" {
			link = "no rate or delay set"
		}
		fmt.Fprintf(r.Notes, "placement hosts: private PostgreSQL %s on %s:%d (namespace %s); link: %s\n",
			srv.Major(), db.Address, srv.Port(), db.Namespace, link)
	}
	return p, nil
}

// placementError is a failed start of the private server: a setting it
// refused as PostgreSQL's own message says it (an infrastructure failure,
// exit 3), anything else under the placement's name.
func placementError(mode placement.Mode, err error) error {
	if refused := (*placement.ErrSetting)(nil); errors.As(err, &refused) {
		return err
	}
	return fmt.Errorf("--placement %s: %w", mode, err)
}

// stop gives this process its CPUs back, stops the server, removing its
// files, and the hosts' proxies.
func (p *placed) stop() error {
	var err error
	if p.restore != nil {
		err = p.restore()
	}
	err = errors.Join(err, p.server.Stop())
	if p.hosted != nil {
		err = errors.Join(err, p.hosted.close())
	}
	return err
}

// environment records the placement in a result's provenance.
func (p *placed) environment(env *result.Environment) {
	if p == nil {
		return
	}
	env.Placement = string(p.plan.Mode)
	env.PGSettings = p.settings
	if p.hosted != nil {
		p.hosted.environment(env)
		return
	}
	env.AppCPUs, env.DBCPUs = p.plan.App.String(), p.plan.DB.String()
}

// readSettings asks the running server for the value of each --pg-setting
// parameter, as it took it ("256MB", "off"): what the result records.
func (p *placed) readSettings(ctx context.Context, db *store.DB) error {
	if p == nil || len(p.server.Settings()) == 0 {
		return nil
	}
	st, err := db.Prepare(ctx, store.Statement{Name: "placement-current-setting", SQL: "SELECT current_setting(?)"})
	if err != nil {
		return err
	}
	p.settings = make(map[string]string)
	for _, kv := range p.server.Settings() {
		name, _, _ := placement.ParseSetting(kv)
		var v string
		if err := db.QueryRow(ctx, st, name).Scan(&v); err != nil {
			return fmt.Errorf("--pg-setting %s: read it back: %w", kv, err)
		}
		p.settings[name] = v
	}
	return nil
}

// refusePlacement: --placement belongs to run, whose database lives as
// long as the run; a load, a served tier or a drive would lose it.
func refusePlacement(cfg config.Run, command string) error {
	if cfg.Placement == "" {
		return nil
	}
	return config.Usage(fmt.Errorf("--placement applies to tierbench run (its private server lives as long as the run), not %s", command))
}
