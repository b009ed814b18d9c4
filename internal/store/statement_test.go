package store_test

import (
	"testing"

	"github.com/tierbench/tierbench/internal/store"
)

// A statement's text may start with blanks (a multi-line literal): it is
// still a SELECT, whose lost connection leaves nothing in doubt. Anything
// else may write.
func TestIsSelect(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1":                 true,
		"select n FROM t":          true,
		"\n\t  SELECT n\n\tFROM t": true,
		"INSERT INTO t (id) VALUES (?) RETURNING id":                    false,
		"UPDATE t SET n = n + 1 WHERE id = ?":                           false,
		"WITH d AS (DELETE FROM t RETURNING id) SELECT COUNT(*) FROM d": false,
		"  sel": false,
		"":      false,
	} {
		if got := store.IsSelect(q); got != want {
			t.Errorf("IsSelect(%q) = %v, want %v", q, got, want)
		}
	}
}
