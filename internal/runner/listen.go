package runner

import (
	"context"
	"io"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/server"
)

// guardListen refuses to serve what at an address other hosts reach
// unless it authenticates its callers (a business tier, with --token-file)
// or the user says --insecure (server.Guard). Pages and web services have
// no authentication of their own.
func (r *Runner) guardListen(ctx context.Context, o ServeOptions, what string, business bool) error {
	if business && o.TokenFile != "" {
		return nil
	}
	fix := "give --token-file FILE (callers then send the token it holds), listen on loopback (127.0.0.1)"
	if !business {
		fix, what = "listen on loopback (127.0.0.1)", what+" (it takes no token)"
	}
	warn := r.Notes
	if warn == nil {
		warn = io.Discard
	}
	if err := server.Guard(ctx, "--listen", o.Listen, what, fix, o.Insecure, warn); err != nil {
		return config.Usage(err)
	}
	return nil
}
