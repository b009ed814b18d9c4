package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/livemetrics"
)

// metricsFlags are --metrics-listen and --metrics-linger, which run, drive
// and serve share.
type metricsFlags struct {
	listen string
	linger time.Duration
}

func addMetricsFlags(fs *pflag.FlagSet, m *metricsFlags, lingers bool) {
	fs.StringVar(&m.listen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics while the command runs: PORT or :PORT (loopback), HOST:PORT (e.g. 0.0.0.0:9464 for every interface) (default: none)")
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
	srv, err := livemetrics.Listen(m.listen, workloadName)
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
