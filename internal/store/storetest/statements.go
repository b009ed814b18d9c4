package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
)

// exerciseStatements: statements outside transactions return their rows
// and are counted, a unique violation is classified, a bulk insert
// writes every row.
func exerciseStatements(t *testing.T, newDSN func(testing.TB) string, setup setupFunc) {
	ctx := context.Background()
	t.Run("statements round trip and are counted", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		before := db.Stats()
		for i := int64(1); i <= 3; i++ {
			r, err := db.Exec(ctx, s.insert, i, fmt.Sprintf("row %d", i), i*10)
			if err != nil || r.RowsAffected != 1 {
				t.Fatalf("insert %d: %v, %d rows", i, err, r.RowsAffected)
			}
		}
		var name string
		var n int64
		if err := db.QueryRow(ctx, s.byID, 2).Scan(&name, &n); err != nil || name != "row 2" || n != 20 {
			t.Fatalf("select 2 = %q %d %v; want row 2, 20", name, n, err)
		}
		// Two placeholders, and a quoted '?' that is not one.
		rows, err := db.Query(ctx, s.between, 15, 35)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var x string
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil || fmt.Sprint(got) != "[row 2? row 3?]" {
			t.Fatalf("between 15 and 35 = %v, %v; want [row 2? row 3?]", got, err)
		}
		err = db.QueryRow(ctx, s.byID, 99).Scan(&name, &n)
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("select of a missing row: %v, want ErrNotFound", err)
		}
		if st := db.Stats().Sub(before); st.Statements != 6 || st.Transactions != 0 {
			t.Errorf("counted %d statements, %d transactions; want 6, 0", st.Statements, st.Transactions)
		}
	})

	t.Run("unique violation is classified and counted", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		if _, err := db.Exec(ctx, s.insert, 1, "a", 1); err != nil {
			t.Fatal(err)
		}
		_, err := db.Exec(ctx, s.insert, 1, "b", 2)
		if !errors.Is(err, store.ErrUniqueViolation) {
			t.Fatalf("duplicate key: %v, want ErrUniqueViolation", err)
		}
		if store.Retryable(err) {
			t.Error("a unique violation must not be retryable")
		}
		if got := db.Stats().UniqueViolations; got != 1 {
			t.Errorf("unique violations counted = %d, want 1", got)
		}
	})

	t.Run("bulk insert writes every row", func(t *testing.T) {
		db, s := setup(t, store.Options{Threads: 2})
		const rows = 1234 // not a multiple of any backend's batch
		n, err := db.BulkInsert(ctx, "conf", []string{"id", "name", "n"}, &counting{n: rows})
		if err != nil || n != rows {
			t.Fatalf("bulk insert: %d rows, %v; want %d", n, err, rows)
		}
		var got, sum int64
		if err := db.QueryRow(ctx, s.count).Scan(&got); err != nil || got != rows {
			t.Fatalf("count after bulk insert = %d, %v; want %d", got, err, rows)
		}
		if err := db.QueryRow(ctx, s.sum).Scan(&sum); err != nil || sum != rows*(rows+1)/2 {
			t.Fatalf("sum after bulk insert = %d, %v; want %d", sum, err, rows*(rows+1)/2)
		}
	})
}

// counting yields rows (i, "name i", i) for i = 1..n.
type counting struct {
	n, i int64
	row  [3]any
}

func (c *counting) Next() bool {
	if c.i == c.n {
		return false
	}
	c.i++
	c.row = [3]any{c.i, fmt.Sprintf("name %d", c.i), c.i}
	return true
}

func (c *counting) Values() []any { return c.row[:] }
