package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
)

// markerVersion is the version of the load marker's own layout and of the
// loaders' schemas: bump it when a workload's schema changes, so that
// --no-load refuses a database loaded by an older tierbench.
const markerVersion = 1

// The load marker is a row a completed load writes last, naming what was
// loaded. A load first removes its workload's row, so a load that stops
// half-way (a failure, an interrupt, a killed process) leaves none, and
// --no-load refuses to measure that database.
const markerTable = `CREATE TABLE IF NOT EXISTS tierbench_load (
	workload VARCHAR(32) NOT NULL PRIMARY KEY,
	scale BIGINT NOT NULL,
	seed BIGINT NOT NULL,
	schema_version BIGINT NOT NULL,
	completed_at VARCHAR(40) NOT NULL)`

var (
	markerClear = store.Statement{Name: "marker-clear", SQL: "DELETE FROM tierbench_load WHERE workload = ?"}
	markerWrite = store.Statement{Name: "marker-write", SQL: "INSERT INTO tierbench_load (workload, scale, seed, schema_version, completed_at) VALUES (?, ?, ?, ?, ?)"}
	markerRead  = store.Statement{Name: "marker-read", SQL: "SELECT scale, seed, schema_version, completed_at FROM tierbench_load WHERE workload = ?"}
)

// marker is what a completed load recorded.
type marker struct {
	scale, seed, version int64
	completedAt          string
}

func exec(ctx context.Context, db *store.DB, s store.Statement, args ...any) error {
	p, err := db.Prepare(ctx, s)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, p, args...)
	return err
}

// clearMarker says, before a load touches anything, that the workload's
// data is incomplete.
func clearMarker(ctx context.Context, db *store.DB, workload string) error {
	if err := db.ExecScript(ctx, markerTable); err != nil {
		return fmt.Errorf("load marker: %w", err)
	}
	if err := exec(ctx, db, markerClear, workload); err != nil {
		return fmt.Errorf("load marker: %w", err)
	}
	return nil
}

// writeMarker records a completed load.
func writeMarker(ctx context.Context, db *store.DB, cfg config.Run) error {
	err := exec(ctx, db, markerWrite, cfg.Workload, int64(cfg.Scale), int64(cfg.Seed), int64(markerVersion), time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("load marker: %w", err)
	}
	return nil
}

// anyScale, as cfg.Scale, accepts a load at whatever scale.
const anyScale = 0

// checkMarker refuses a database that has no complete load of the
// workload at the configured scale; who is what needs one (--no-load,
// serve), for the message.
func checkMarker(ctx context.Context, db *store.DB, cfg config.Run, who string) (marker, error) {
	var m marker
	load := fmt.Sprintf("tierbench load %s --db %s --scale %d", cfg.Workload, cfg.DB, max(cfg.Scale, 1))
	p, err := db.Prepare(ctx, markerRead)
	if err == nil {
		err = db.QueryRow(ctx, p, cfg.Workload).Scan(&m.scale, &m.seed, &m.version, &m.completedAt)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return m, config.Usage(fmt.Errorf("%s: the database holds no complete load of %s (never loaded, or a load was cut short, leaving it incomplete); load it first: %s", who, cfg.Workload, load))
	case err != nil:
		// No marker table: never loaded by tierbench (or by one older than
		// the marker).
		return m, config.Usage(fmt.Errorf("%s: the database has no tierbench load marker, so it is not known to hold a complete %s population; load it first: %s", who, cfg.Workload, load))
	case m.version != markerVersion:
		return m, config.Usage(fmt.Errorf("%s: the database was loaded with schema version %d, this tierbench has %d; load it again: %s", who, m.version, markerVersion, load))
	case cfg.Scale != anyScale && m.scale != int64(cfg.Scale):
		return m, config.Usage(fmt.Errorf("%s: the database holds %s at scale %d, the run asks for scale %d; give --scale %d, or load it again: %s", who, cfg.Workload, m.scale, cfg.Scale, m.scale, load))
	}
	return m, nil
}
