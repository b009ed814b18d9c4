package stockonline

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
)

// The pgbench scripts of bench/pgbench/stockonline must issue the direct
// implementation's statements, or `make bench-pgbench` compares unlike
// work. pgbench spells a few things its own way, which normalize removes:
// :variables and literal strings for parameters, "AS name" column aliases
// for \gset, a RETURNING the sell needs for \aset, and the stock code
// computed from its id with chr().
func TestPgbenchScriptsIssueTheDirectStatements(t *testing.T) {
	files, err := filepath.Glob("../../../bench/pgbench/stockonline/*.sql")
	if err != nil || len(files) != 6 {
		t.Fatalf("pgbench scripts: %v, %v", files, err)
	}
	var scripts []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(line, `\`) {
				continue
			}
			scripts = append(scripts, normalize(line))
		}
	}
	q := &sqlStatements
	for _, s := range []store.Statement{q.createAccount, q.updateAccount, q.queryByID, q.queryByCode, q.buyRead,
		q.buyHolding, q.buyRecord, q.sellHolding, q.sellProbe, q.sellRecord, q.holdings} {
		want := normalize(s.For(store.Postgres))
		found := false
		for _, line := range scripts {
			found = found || line == want
		}
		if !found {
			t.Errorf("statement %s is in no pgbench script:\n  %s", s.Name, want)
		}
	}
}

var (
	pgbenchParam = regexp.MustCompile(`\$\d+|:[a-z]+|'[^']*'`)
	stockCodeOf  = regexp.MustCompile(`chr\(.*\)`)
	columnAlias  = regexp.MustCompile(` AS [a-z]+`)
	metaSuffix   = regexp.MustCompile(` \\[ag]set$`)
)

func normalize(q string) string {
	q = strings.TrimSuffix(strings.TrimSpace(q), ";")
	q = metaSuffix.ReplaceAllString(q, "")
	q = strings.Replace(q, " RETURNING amount AS left", "", 1)
	q = stockCodeOf.ReplaceAllString(q, "?")
	q = columnAlias.ReplaceAllString(q, "")
	q = pgbenchParam.ReplaceAllString(q, "?")
	return strings.Join(strings.Fields(q), " ")
}
