package cli

import (
	"context"
	"io"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/server"
)

// guardReceiver refuses an ECperf delivery receiver other hosts reach
// unless --insecure: it takes deliveries, which write the database, from
// whoever posts them, and an emulator on another host needs it there.
func (m *metricsFlags) guardReceiver(ctx context.Context, cfg config.Run, stderr io.Writer) error {
	receiver := cfg.Value("receiver")
	if receiver == "" {
		return nil
	}
	const what = "the delivery receiver (deliveries write the database)"
	if err := server.Guard(ctx, "--receiver", receiver, what, "", m.insecure, stderr); err != nil {
		return config.Usage(err)
	}
	return nil
}
