package ecperf

import (
	"embed"
	"fmt"
	"strings"

	"github.com/tierbench/tierbench/internal/store"
)

//go:embed schema/*.sql
var schemaFiles embed.FS

// afterLoadMarker divides a dialect's script: the DDL before it, what runs
// once the population is in (sequences, statistics) after it.
const afterLoadMarker = "-- @after-load\n"

// schemaScript is the DDL of schema/<dialect>.sql: it drops the ECperf
// tables that exist and creates them all empty.
func schemaScript(d store.Dialect) (string, error) {
	ddl, _, err := schemaParts(d)
	return ddl, err
}

// afterLoadScript is what runs once the loader's rows are in: identity
// sequences moved past the loaded keys, planner statistics.
func afterLoadScript(d store.Dialect) (string, error) {
	_, after, err := schemaParts(d)
	return after, err
}

func schemaParts(d store.Dialect) (ddl, after string, err error) {
	b, err := schemaFiles.ReadFile(fmt.Sprintf("schema/%s.sql", d))
	if err != nil {
		return "", "", fmt.Errorf("ecperf has no schema for %s: %w", d, err)
	}
	ddl, after, ok := strings.Cut(string(b), afterLoadMarker)
	if !ok {
		return "", "", fmt.Errorf("ecperf schema for %s: no %q line", d, strings.TrimSpace(afterLoadMarker))
	}
	return ddl, after, nil
}
