package store

import (
	"strings"
	"testing"
)

// dsnSeeds are the shapes users write, right and wrong, for the fuzzer to
// start from.
var dsnSeeds = []string{
	"sqlite", "sqlite:/tmp/x.db", "sqlite:", "sqlite::memory:", "sqlite:sqlite",
	"postgres://root@127.0.0.1:5432/test", "postgresql://u:secret@h/db", "postgres:///test",
	"postgres://u:p%zz@h/db", "postgres://[::1]:5432/test?sslmode=disable", "postgres://h:99/db#frag",
	"mysql://root@127.0.0.1:3306/test", "mysql://root:pw@127.0.0.1:3306", "mysql://root@h//",
	"mysql://r%20oot:p w@h/test", "oracle://scott:tiger@db/orcl", "", " sqlite", "POSTGRES://h/db",
}

// FuzzParseDSN checks what every --db value gets: no panic; a refusal in
// one line that names the flag; an acceptance whose printed form (the one
// results and logs show) reads back as the same database.
func FuzzParseDSN(f *testing.F) {
	for _, s := range dsnSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDSN(s)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "--db ") {
				t.Fatalf("ParseDSN(%q) error %q: want one line starting with --db", s, msg)
			}
			return
		}
		switch d.Dialect {
		case SQLite:
			if d.Temp != (s == "sqlite") || (!d.Temp && d.Path != strings.TrimPrefix(s, "sqlite:")) || d.URL != nil {
				t.Fatalf("ParseDSN(%q) = %+v: want the path after sqlite:, or a temporary file for sqlite alone", s, d)
			}
		case Postgres, MySQL:
			if d.URL == nil || d.URL.Host == "" {
				t.Fatalf("ParseDSN(%q) = %+v: a server DSN without a host", s, d)
			}
		default:
			t.Fatalf("ParseDSN(%q) gave dialect %q", s, d.Dialect)
		}
		// What a result records must name the same database: reparsing
		// it gives the same dialect, host, database and user, and
		// printing is then a fixed point.
		shown := d.String()
		back, err := ParseDSN(shown)
		if err != nil {
			t.Fatalf("ParseDSN(%q) printed as %q, which does not parse: %v", s, shown, err)
		}
		if back.Dialect != d.Dialect || back.Path != d.Path || back.Temp != d.Temp {
			t.Fatalf("ParseDSN(%q) printed as %q, which reads back as %+v", s, shown, back)
		}
		if d.URL != nil {
			if back.URL.Host != d.URL.Host || back.URL.Path != d.URL.Path || back.URL.User.Username() != d.URL.User.Username() {
				t.Fatalf("ParseDSN(%q) printed as %q names another server, database or user: %v", s, shown, back.URL)
			}
			if _, had := d.URL.User.Password(); had && !strings.Contains(shown, ":xxxxx@") {
				t.Fatalf("ParseDSN(%q) printed as %q: the password is not masked", s, shown)
			}
		}
		if again := back.String(); again != shown {
			t.Fatalf("ParseDSN(%q) printed as %q, then as %q", s, shown, again)
		}
	})
}

// FuzzDSNNeverShowsThePassword builds server DSNs around a password and
// checks that neither the error for a refused one nor the printed form of
// an accepted one contains it: both go to terminals, logs and result files.
func FuzzDSNNeverShowsThePassword(f *testing.F) {
	f.Add("postgres", "root", "s3cr3tpw", "127.0.0.1:5432", "/test")
	f.Add("mysql", "root", "s3cr3tpw", "127.0.0.1:3306", "")
	f.Add("postgres", "u", "pa%zzword", "h", "/db")
	f.Add("postgresql", "u", "pass word", "h", "/db")
	f.Add("mysql", "u", "pass^word", "h:3306", "/db")
	f.Add("postgres", "u", "password", "h:port", "/db")
	f.Add("postgres:", "u", "password", "h", "/db")
	f.Add("oracle", "scott", "tigertiger", "db", "/orcl")
	f.Fuzz(func(t *testing.T, scheme, user, password, host, rest string) {
		// Only a password the DSN really holds in its user information
		// counts: one that the characters around it do not move into the
		// host or path.
		if len(password) < 6 || strings.ContainsAny(user+password, "/?#@") || strings.ContainsAny(scheme, "/?#@") ||
			!strings.ContainsAny(password, plainLetters) {
			return
		}
		dsn := func(pw string) string { return scheme + "://" + user + ":" + pw + "@" + host + rest }
		shown := showDSN(dsn(password))
		if !strings.Contains(shown, password) {
			return
		}
		// The password's text can also come from the rest of the DSN, or
		// from escaping it (Go's \x00, URLs' %20); then it is there as
		// well when another password of the same characters' kinds
		// stands in its place.
		other := strings.Map(func(r rune) rune {
			if i := strings.IndexRune(plainLetters, r); i >= 0 {
				return rune(plainLetters[(i+1)%len(plainLetters)])
			}
			return r
		}, password)
		if !strings.Contains(showDSN(dsn(other)), password) {
			t.Fatalf("DSN %q shown as %q, which holds the password", dsn(password), shown)
		}
	})
}

// plainLetters are letters that no escape (Go's \t, \x.., \u.., URLs'
// %XX) writes.
const plainLetters = "ghijklmopqswyz"

// showDSN is what a user or a result file sees of a DSN: its error, or its
// printed form.
func showDSN(s string) string {
	d, err := ParseDSN(s)
	if err != nil {
		return err.Error()
	}
	return d.String()
}
