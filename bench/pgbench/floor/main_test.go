package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The floor sends pgbench's own text, with its one variable as $1; a script
// it cannot run that way is refused, not run as something else.
func TestStatementIsThePgbenchScripts(t *testing.T) {
	got, err := statementOf("../stockonline/query_by_id.sql")
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT current_value, high_value, low_value FROM StockItem WHERE stock_id = $1"; got != want {
		t.Errorf("statement %q, want %q", got, want)
	}
	for _, script := range []string{"buy_sell.sql", "update_account.sql", "holding_statement.sql"} {
		if sql, err := statementOf(filepath.Join("../stockonline", script)); err == nil {
			t.Errorf("%s: read as %q, want it refused (more than one statement or variable, or not :stock)", script, sql)
		}
	}
	two := filepath.Join(t.TempDir(), "two.sql")
	if err := os.WriteFile(two, []byte("SELECT 1 WHERE 1 = :stock;\nSELECT 2;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := statementOf(two); err == nil || !strings.Contains(err.Error(), "one statement") {
		t.Errorf("two statements: error %v, want one that asks for one statement", err)
	}
}
