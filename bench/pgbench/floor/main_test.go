package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var defs = map[string]int64{"items": 3000, "accounts": 2000}

// The floor sends pgbench's own text, each variable as a parameter; a
// script it cannot run that way is refused, not run as something else.
func TestScriptIsThePgbenchScripts(t *testing.T) {
	cases := []struct {
		script string
		sql    string
		vars   []randomVar
	}{
		{"query_by_id.sql", "SELECT current_value, high_value, low_value FROM StockItem WHERE stock_id = $1",
			[]randomVar{{"stock", 1, 3000}}},
		// One variable used four times is one parameter.
		{"query_by_code.sql", "SELECT current_value, high_value, low_value FROM StockItem WHERE stock_code = chr(65 + (($1 - 1) / 17576) % 26) || chr(65 + (($1 - 1) / 676) % 26) || chr(65 + (($1 - 1) / 26) % 26) || chr(65 + ($1 - 1) % 26)",
			[]randomVar{{"stock", 1, 3000}}},
		// Parameters in order of first use, not of declaration.
		{"update_account.sql", "UPDATE SubAccount SET sub_credit = $1 WHERE sub_accno = $2",
			[]randomVar{{"credit", 100000, 5000000}, {"acc", 1, 2000}}},
		{"create_account.sql", "INSERT INTO SubAccount (sub_name, sub_address, sub_credit) VALUES ('New subscriber', 'Market Street, Canberra', $1) RETURNING sub_accno",
			[]randomVar{{"credit", 100000, 5000000}}},
	}
	for _, c := range cases {
		got, err := parseScript(filepath.Join("../stockonline", c.script), defs)
		if err != nil {
			t.Errorf("%s: %v", c.script, err)
			continue
		}
		if got.sql != c.sql {
			t.Errorf("%s: statement\n%q\nwant\n%q", c.script, got.sql, c.sql)
		}
		if !reflect.DeepEqual(got.vars, c.vars) {
			t.Errorf("%s: variables %+v, want %+v", c.script, got.vars, c.vars)
		}
	}
	if sc, err := parseScript("../stockonline/buy_sell.sql", defs); err == nil || !strings.Contains(err.Error(), "meta-command") {
		t.Errorf("buy_sell.sql: read as %+v, error %v; want it refused for its \\if", sc, err)
	}
	dir := t.TempDir()
	for body, want := range map[string]string{
		"\\set stock random(1, :items)\nSELECT 1 WHERE 1 = :stock;\nSELECT 2;\n": "2 statements, want one statement",
		"SELECT 1 WHERE 1 = :stock;\n":                                           "uses :stock, which no",
		"\\set stock random(1, :nosuch)\nSELECT :stock;\n":                       "is not \\set NAME random(LO, HI)",
		"\\set stock random(9, 1)\nSELECT :stock;\n":                             "is not \\set NAME random(LO, HI)",
		"\\set stock random(1, 9)\nSELECT :stock::text;\n":                       "",
	} {
		path := filepath.Join(dir, "s.sql")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := parseScript(path, defs)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", body, err)
		case want == "" && sc.sql != "SELECT $1::text":
			t.Errorf("%q: statement %q, want the cast kept", body, sc.sql)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want one containing %q", body, err, want)
		}
	}
}
