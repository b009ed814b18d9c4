package postgres

import (
	"context"
	"testing"

	"os"

	"github.com/jackc/pgx/v5"
)

// The check a thread makes before each statement, against the round trip
// it spares when the connection is dead: `go test -run '^$' -bench
// ConnectionCheck ./internal/store/postgres/`.
func BenchmarkConnectionCheck(b *testing.B) {
	ctx := context.Background()
	// storetest would import this package; the server's own database is
	// enough for a check that reads no table.
	dsn := os.Getenv("TIERBENCH_TEST_POSTGRES")
	if dsn == "" {
		dsn = "postgres://root@127.0.0.1:5432/test"
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Skip("no PostgreSQL:", err)
	}
	defer c.Close(ctx)
	b.Run("peek", func(b *testing.B) {
		for b.Loop() {
			if err := usable(c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("select-1", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Exec(ctx, "select 1"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
