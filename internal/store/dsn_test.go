package store

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseDSN(t *testing.T) {
	tests := []struct {
		in      string
		dialect Dialect
		str     string
		wantErr string
	}{
		{in: "sqlite", dialect: SQLite, str: "sqlite"},
		{in: "sqlite:/tmp/x.db", dialect: SQLite, str: "sqlite:/tmp/x.db"},
		{in: "postgres://root@127.0.0.1:5432/test", dialect: Postgres, str: "postgres://root@127.0.0.1:5432/test"},
		{in: "postgresql://u:secret@h/db", dialect: Postgres, str: "postgresql://u:xxxxx@h/db"},
		{in: "mysql://root@127.0.0.1:3306/test", dialect: MySQL, str: "mysql://root@127.0.0.1:3306/test"},
		{in: "mysql://root:pw@127.0.0.1:4306,127.0.0.1:4307,127.0.0.1:4308/test", dialect: MySQL, str: "mysql://root:xxxxx@127.0.0.1:4306,127.0.0.1:4307,127.0.0.1:4308/test"},
		{in: "postgres://root@127.0.0.1:5442,127.0.0.1:5443/test", wantErr: "names 2 hosts: several hosts are a multi-master cluster"},
		{in: "mysql://root@127.0.0.1:4306,,127.0.0.1:4308/test", wantErr: "an empty host in the list"},
		{in: "mysql://root@127.0.0.1:x,127.0.0.1:4307/test", wantErr: `port "x", not a number`},
		{in: "mysql://root@127.0.0.1:4306,127.0.0.1:4306/test", wantErr: "names host 127.0.0.1:4306 twice"},
		{in: "sqlite:", wantErr: "give a file path"},
		{in: "sqlite::memory:", wantErr: "in-memory"},
		{in: "mysql://root@127.0.0.1:3306", wantErr: "name the database"},
		{in: "postgres:///test", wantErr: "no host"},
		{in: "oracle://scott:tiger@db/orcl", wantErr: "allowed: sqlite, sqlite:PATH"},
		{in: "oracle://scott:tiger@db/orcl", wantErr: "scott:xxxxx"},
		{in: "", wantErr: "not a DSN"},
	}
	for _, tt := range tests {
		d, err := ParseDSN(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDSN(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "tiger") {
				t.Errorf("ParseDSN(%q) error leaks the password: %v", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tt.in, err)
			continue
		}
		if d.Dialect != tt.dialect || d.String() != tt.str {
			t.Errorf("ParseDSN(%q) = %s %q, want %s %q", tt.in, d.Dialect, d.String(), tt.dialect, tt.str)
		}
	}
}

func TestDSNHosts(t *testing.T) {
	d := MustParseDSN("mysql://root@127.0.0.1:4306,127.0.0.1:4307,h3:4308/test")
	if got := strings.Join(d.Hosts(), " "); got != "127.0.0.1:4306 127.0.0.1:4307 h3:4308" {
		t.Errorf("Hosts() = %q", got)
	}
	var back DSN
	text, _ := d.MarshalText()
	if err := back.UnmarshalText(text); err != nil || back.String() != d.String() {
		t.Errorf("round trip through a result file: %q, %v; want %q", back.String(), err, d.String())
	}
	if got := MustParseDSN("sqlite").Hosts(); got != nil {
		t.Errorf("sqlite Hosts() = %q, want none", got)
	}
}

func TestNumberPlaceholders(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT a FROM t WHERE x = ? AND y = ?", "SELECT a FROM t WHERE x = $1 AND y = $2"},
		{"SELECT '?' || a FROM t WHERE x = ?", "SELECT '?' || a FROM t WHERE x = $1"},
		{"INSERT INTO t VALUES (?, 'it''s ?', ?)", "INSERT INTO t VALUES ($1, 'it''s ?', $2)"},
	}
	for _, tt := range tests {
		if got := numberPlaceholders(tt.in); got != tt.want {
			t.Errorf("numberPlaceholders(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStatementForDialect(t *testing.T) {
	s := Statement{Name: "x", SQL: "SELECT ? ", Dialects: map[Dialect]string{MySQL: "SELECT ? /* mysql */"}}
	for d, want := range map[Dialect]string{SQLite: "SELECT ? ", Postgres: "SELECT $1 ", MySQL: "SELECT ? /* mysql */"} {
		if got := s.For(d); got != want {
			t.Errorf("For(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestParseIsolation(t *testing.T) {
	for _, ok := range []string{"read-committed", "repeatable-read", "serializable"} {
		if _, err := ParseIsolation(ok); err != nil {
			t.Errorf("ParseIsolation(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "READ COMMITTED", "snapshot"} {
		if _, err := ParseIsolation(bad); err == nil || !strings.Contains(err.Error(), IsolationLevels) {
			t.Errorf("ParseIsolation(%q) = %v, want an error listing %s", bad, err, IsolationLevels)
		}
	}
}

func TestBackoffGrowsToItsCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range []struct {
		retry int
		cap   time.Duration
	}{{1, 100 * time.Microsecond}, {2, 200 * time.Microsecond}, {7, 6400 * time.Microsecond}, {8, 10 * time.Millisecond}, {50, 10 * time.Millisecond}} {
		var most time.Duration
		for range 2000 {
			d := Backoff(rng, tt.retry)
			if d < 0 || d >= tt.cap {
				t.Fatalf("retry %d: backoff %v outside [0, %v)", tt.retry, d, tt.cap)
			}
			most = max(most, d)
		}
		if most < tt.cap*9/10 {
			t.Errorf("retry %d: longest of 2000 backoffs %v, want near %v", tt.retry, most, tt.cap)
		}
		if d := Backoff(nil, tt.retry); d < 0 || d >= tt.cap {
			t.Errorf("retry %d, global stream: %v outside [0, %v)", tt.retry, d, tt.cap)
		}
	}
}
