package cli

import (
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/store/storetest"
)

// TestReplicaFlagsRefused: --replica and --replica-reads that make no
// sense end with exit 2 and one message naming what is wrong, before
// anything is loaded; a replica that does not answer with exit 3 naming it.
func TestReplicaFlagsRefused(t *testing.T) {
	pg := "postgres://root@127.0.0.1:5432/test"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"replica of sqlite", []string{"--replica", "postgres://postgres@127.0.0.1:5443/test"}, 2, "--replica needs a PostgreSQL primary in --db (postgres://…): read replicas are its hot standbys; --db is sqlite"},
		{"replica of mysql", []string{"--db", "mysql://root@127.0.0.1:3306/test", "--replica", "postgres://postgres@127.0.0.1:5443/test"}, 2, "--db is mysql"},
		{"replica is the primary", []string{"--db", pg, "--replica", pg}, 2, "--replica postgres://root@127.0.0.1:5432/test is --db itself (127.0.0.1:5432): give the primary's standbys"},
		{"replica given twice", []string{"--db", pg, "--replica", "postgres://p@127.0.0.1:5443/test", "--replica", "postgres://p@127.0.0.1:5443/test"}, 2, "--replica postgres://p@127.0.0.1:5443/test is given twice"},
		{"replica not postgres", []string{"--db", pg, "--replica", "mysql://root@127.0.0.1:3306/test"}, 2, "--replica mysql://root@127.0.0.1:3306/test: a replica is a PostgreSQL hot standby"},
		{"replica not a dsn", []string{"--db", pg, "--replica", "standby1"}, 2, `--replica "standby1"`},
		{"causal without replicas", []string{"--db", pg, "--replica-reads", "causal"}, 2, "--replica-reads causal needs --replica"},
		{"unknown replica reads", []string{"--db", pg, "--replica-reads", "strong"}, 2, `--replica-reads "strong": allowed: eventual (`},
		{"serializable on a standby", []string{"--db", pg, "--replica", "postgres://p@127.0.0.1:5443/test", "--isolation", "serializable"}, 2, "a hot standby runs no serializable transactions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"run", "stockonline", "--iterations", "1"}, tt.args...)...)
			first := strings.SplitN(strings.TrimSpace(stderr), "\n", 2)[0]
			if code != tt.code || !strings.Contains(first, tt.want) {
				t.Errorf("exit %d, first line %q; want %d and %q; stderr:\n%s", code, first, tt.code, tt.want, stderr)
			}
		})
	}

	// Against a real primary: a replica that does not answer, and one
	// that is a primary under another name.
	dsn := storetest.Fresh(t, storetest.Postgres(t))
	other := strings.Replace(dsn, "127.0.0.1", "localhost", 1)
	if other == dsn {
		t.Skipf("the PostgreSQL DSN %s names no 127.0.0.1 to name otherwise", dsn)
	}
	for _, tt := range []struct {
		name    string
		replica string
		code    int
		want    []string
	}{
		{"unreachable replica", "postgres://root@127.0.0.1:1/test?connect_timeout=2", 3, []string{"--replica postgres://root@127.0.0.1:1/test", "database unreachable"}},
		{"replica that is a primary", other, 2, []string{"is not a hot standby (pg_is_in_recovery() is false)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "run", "stockonline", "--iterations", "1", "--clients", "1", "--db", dsn, "--replica", tt.replica)
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
		})
	}
}
