package store

import (
	"context"
	"fmt"
)

// connectionLimit reads how many connections the server admits a user
// like ours: PostgreSQL's max_connections less the slots it keeps for
// superusers, MariaDB/MySQL's max_connections.
var connectionLimit = Statement{Name: "connection-limit", Dialects: map[Dialect]string{
	Postgres: "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int",
	MySQL:    "SELECT @@max_connections",
}}

// ConnectionLimit is the number of connections the database server
// admits, and how it arrives at it, for a message; 0 when there is no
// limit (SQLite).
func (db *DB) ConnectionLimit(ctx context.Context) (limit int, how string, err error) {
	if db.Dialect() == SQLite {
		return 0, "", nil
	}
	s, err := db.Prepare(ctx, connectionLimit)
	if err != nil {
		return 0, "", err
	}
	if err := db.QueryRow(ctx, s).Scan(&limit); err != nil {
		return 0, "", fmt.Errorf("connection limit: %w", err)
	}
	if db.Dialect() == Postgres {
		return limit, "max_connections less superuser_reserved_connections", nil
	}
	return limit, "max_connections", nil
}
