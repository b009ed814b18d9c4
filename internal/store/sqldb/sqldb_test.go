package sqldb

import (
	"slices"
	"testing"
)

func TestSplitScript(t *testing.T) {
	script := `-- a comment
DROP TABLE IF EXISTS a;
CREATE TABLE a (
    x INTEGER -- trailing comment kept, harmless
);

ANALYZE`
	want := []string{"DROP TABLE IF EXISTS a", "CREATE TABLE a (\n    x INTEGER -- trailing comment kept, harmless\n)", "ANALYZE"}
	if got := SplitScript(script); !slices.Equal(got, want) {
		t.Errorf("SplitScript = %q, want %q", got, want)
	}
}

func TestInsertSQL(t *testing.T) {
	got := insertSQL("t", []string{"a", "b"}, 2)
	if want := "INSERT INTO t (a, b) VALUES (?, ?), (?, ?)"; got != want {
		t.Errorf("insertSQL = %q, want %q", got, want)
	}
}
