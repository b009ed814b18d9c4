package store

import (
	"context"
	"errors"
)

// Ping asks the database for one row over a shared connection. It is the
// runner's health probe, not workload: neither the statement nor its
// failure is counted. A database that is down answers with an error of
// its class (ErrConnectionLost, …).
func (db *DB) Ping(ctx context.Context) error {
	err := db.backend.ExecScript(ctx, "SELECT 1")
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return db.backend.Classify(err)
}
