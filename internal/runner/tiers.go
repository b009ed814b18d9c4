package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/remote"
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
}

// Serving is what a tier serves, once it listens.
type Serving struct {
	// What: "rubis", "rubis business tier", "rubis web tier".
	What  string
	URL   string
	Scale int
	Style string
	// Protocol of a business tier.
	Protocol string
}

// tiersPath is where a served web tier answers its Tiers (its style and
// the remote calls its pages made) as JSON, for the run that started it.
const tiersPath = "/_tierbench/tiers"

// withTierPaths adds tiersPath to h when h knows its tiers.
func withTierPaths(h http.Handler) http.Handler {
	tr, ok := h.(workload.TieredRun)
	if !ok {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET "+tiersPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(tr.Tiers())
	})
	return mux
}

// readToken reads --token-file: the token is the file's content without
// surrounding white space.
func readToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
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
	protocol, err := remote.ParseProtocol(cfg.Protocol)
	if err != nil {
		return config.Usage(fmt.Errorf("--%w", err))
	}
	db, cfg, p, err := r.openServed(ctx, cfg, w)
	if err != nil {
		return err
	}
	defer db.Close()
	srv := remote.NewServer(protocol, remote.ServerOptions{Token: token})
	remote.RegisterPing(srv)
	closeTier, err := b.ServeBusiness(ctx, db, srv, p)
	if err != nil {
		return fmt.Errorf("start %s's business tier: %w", cfg.Workload, err)
	}
	defer closeTier()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return config.Usage(fmt.Errorf("--listen %s: %w", o.Listen, err))
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(Serving{What: cfg.Workload + " business tier", URL: remote.URL(protocol, ln.Addr().String()), Scale: cfg.Scale, Style: cfg.StyleOf(), Protocol: string(protocol)})
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
	protocol, addr, err := remote.ParseURL(o.Business)
	if err != nil {
		return config.Usage(fmt.Errorf("--business %w", err))
	}
	cfg.Protocol = string(protocol)
	if _, err := r.validated(cfg); err != nil {
		return err
	}
	token, err := readToken(o.TokenFile)
	if err != nil {
		return err
	}
	conn, err := remote.Dial(protocol, addr, remote.DialOptions{Token: token, Conns: cfg.ServerThreads})
	if err != nil {
		return config.Usage(fmt.Errorf("--business %w", err))
	}
	defer conn.Close()
	pingCtx, cancel := context.WithTimeout(ctx, TargetProbeTimeout)
	err = remote.Ping(pingCtx, conn)
	cancel()
	if err != nil {
		return fmt.Errorf("the business tier at %s does not answer: %w", o.Business, err)
	}
	front, err := web.WebTier(ctx, conn, workload.RunParams{Config: cfg, Threads: cfg.ServerThreads, Scale: cfg.Scale})
	if err != nil {
		return err
	}
	defer front.Close()
	return serveHTTP(ctx, front, o.Listen, func(url string) {
		if ready != nil {
			ready(Serving{What: cfg.Workload + " web tier", URL: url, Style: cfg.StyleOf(), Protocol: string(protocol)})
		}
	})
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
