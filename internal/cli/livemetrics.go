package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/inputfile"
	"github.com/tierbench/tierbench/internal/livemetrics"
	"github.com/tierbench/tierbench/internal/server"
)

// metricsFlags are --metrics-listen and --metrics-linger, which run, drive
// and serve share.
type metricsFlags struct {
	listen string
	linger time.Duration
	// tokenFile holds the bearer token a scraper must send.
	tokenFile string
	// insecure lets the command serve what authenticates no one at an
	// address other hosts reach (serve's --listen too), with a warning.
	insecure bool
}

func addMetricsFlags(fs *pflag.FlagSet, m *metricsFlags, lingers bool) {
	fs.StringVar(&m.listen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics while the command runs: PORT or :PORT (loopback), HOST:PORT (e.g. 0.0.0.0:9464 for every interface) (default: none)")
	fs.StringVar(&m.tokenFile, "metrics-token-file", "", "with --metrics-listen: a scrape must send the token FILE holds (Authorization: Bearer; Prometheus's authorization.credentials_file); needed on an address other hosts reach, unless --insecure")
	fs.BoolVar(&m.insecure, "insecure", false, "serve at an address other hosts reach without authentication (--metrics-listen without --metrics-token-file; serve's --listen without --token-file; run ecperf's --receiver), with a warning")
	if lingers {
		fs.DurationVar(&m.linger, "metrics-linger", 0, "with --metrics-listen: keep serving the final figures this long after the run, so that the last scrape sees them (e.g. 30s for a 15 s scrape interval)")
	}
}

// start serves the metrics when asked to; a nil server is no metrics. A
// bad or busy address is the user's to change (exit 2).
func (m *metricsFlags) start(stderr io.Writer, workloadName string) (*livemetrics.Server, error) {
	if m.listen == "" {
		if m.linger > 0 {
			return nil, config.Usage(fmt.Errorf("--metrics-linger %v: needs --metrics-listen", m.linger))
		}
		return nil, nil
	}
	if m.linger < 0 {
		return nil, config.Usage(fmt.Errorf("--metrics-linger %v: want 0 or more", m.linger))
	}
	var token string
	if m.tokenFile != "" {
		b, err := inputfile.Read(context.Background(), m.tokenFile, "a token file", 64<<10)
		if err != nil {
			return nil, config.Usage(fmt.Errorf("--metrics-token-file: %v", err))
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, config.Usage(fmt.Errorf("--metrics-token-file %s is empty: it must hold the token scrapers send", m.tokenFile))
		}
	}
	bind, err := livemetrics.BindAddress(m.listen)
	if err != nil {
		return nil, config.Usage(err)
	}
	if token == "" {
		const fix = "give --metrics-token-file FILE (scrapers then send its token as a bearer token), listen on loopback (a bare PORT)"
		if err := server.Guard(context.Background(), "--metrics-listen", bind, "the metrics", fix, m.insecure, stderr); err != nil {
			return nil, config.Usage(err)
		}
	}
	srv, err := livemetrics.Listen(bind, workloadName, token)
	if err != nil {
		return nil, config.Usage(err)
	}
	fmt.Fprintf(stderr, "metrics: %s\n", srv.URL())
	return srv, nil
}

// finish marks the run done, lingers (an interrupt ends the wait), and
// stops serving.
func (m *metricsFlags) finish(ctx context.Context, srv *livemetrics.Server) {
	if srv == nil {
		return
	}
	srv.SetStage(livemetrics.StageDone)
	linger := time.NewTimer(m.linger)
	defer linger.Stop()
	select {
	case <-linger.C:
	case <-ctx.Done():
	}
	srv.Close()
}
