package stockonline

import (
	"embed"
	"fmt"

	"github.com/tierbench/tierbench/internal/store"
)

//go:embed schema/*.sql
var schemaFiles embed.FS

// schemaScript returns schema/<dialect><suffix>.sql: the DDL ("") or what
// runs once the population is in ("_after_load").
func schemaScript(d store.Dialect, suffix string) (string, error) {
	b, err := schemaFiles.ReadFile(fmt.Sprintf("schema/%s%s.sql", d, suffix))
	if err != nil {
		return "", fmt.Errorf("stockonline has no schema for %s: %w", d, err)
	}
	return string(b), nil
}
