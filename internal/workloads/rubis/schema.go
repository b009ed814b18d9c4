package rubis

import (
	"embed"
	"fmt"
	"strings"

	"github.com/tierbench/tierbench/internal/store"
)

//go:embed schema/*.sql
var schemaFiles embed.FS

// afterLoadMarker divides a dialect's script: the tables before it, what
// runs once the population is in (indexes, sequences, statistics) after it.
const afterLoadMarker = "-- @after-load\n"

// schemaParts returns schema/<dialect>.sql cut at the marker: ddl drops the
// RUBiS tables that exist and creates them empty, after builds what the
// load should not maintain row by row.
func schemaParts(d store.Dialect) (ddl, after string, err error) {
	b, err := schemaFiles.ReadFile(fmt.Sprintf("schema/%s.sql", d))
	if err != nil {
		return "", "", fmt.Errorf("rubis has no schema for %s: %w", d, err)
	}
	ddl, after, ok := strings.Cut(string(b), afterLoadMarker)
	if !ok {
		return "", "", fmt.Errorf("rubis schema for %s: no %q line", d, strings.TrimSpace(afterLoadMarker))
	}
	return ddl, after, nil
}
