package store

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Dialect names a family of SQL databases that share one backend.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql"
)

// DSNForms is the list of accepted DSN shapes, for error messages and help.
const DSNForms = "sqlite, sqlite:PATH, postgres://USER@HOST:PORT/DB, mysql://USER[:PASS]@HOST:PORT[,HOST:PORT...]/DB"

// DSN is a parsed --db value.
type DSN struct {
	Dialect Dialect
	// Path is the SQLite database file; empty with Temp for a fresh temporary file.
	Path string
	Temp bool
	// URL is the server URL for postgres and mysql.
	URL *url.URL
}

// ParseDSN accepts the forms in DSNForms.
func ParseDSN(s string) (DSN, error) {
	switch {
	case s == "sqlite":
		return DSN{Dialect: SQLite, Temp: true}, nil
	case strings.HasPrefix(s, "sqlite:"):
		path := strings.TrimPrefix(s, "sqlite:")
		if path == "" || path == ":memory:" {
			return DSN{}, fmt.Errorf("--db %q: give a file path after sqlite: (an in-memory database cannot be shared by the run's connections); allowed: %s", s, DSNForms)
		}
		return DSN{Dialect: SQLite, Path: path}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		u, err := parseServerURL(s)
		if err != nil {
			return DSN{}, err
		}
		if hosts := strings.Split(u.Host, ","); len(hosts) > 1 {
			return DSN{}, fmt.Errorf("--db %q names %d hosts: several hosts are a multi-master cluster, which tierbench runs on mysql (MariaDB Galera) alone; PostgreSQL has one primary: name it in --db (read replicas are --replica's)", Redact(s), len(hosts))
		}
		return DSN{Dialect: Postgres, URL: u}, nil
	case strings.HasPrefix(s, "mysql://"):
		u, err := parseServerURL(s)
		if err != nil {
			return DSN{}, err
		}
		if strings.Trim(u.Path, "/") == "" {
			return DSN{}, fmt.Errorf("--db %q: name the database, as in mysql://root@127.0.0.1:3306/test", Redact(s))
		}
		return DSN{Dialect: MySQL, URL: u}, nil
	}
	return DSN{}, fmt.Errorf("--db %q is not a DSN tierbench knows; allowed: %s", Redact(s), DSNForms)
}

func parseServerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--db %q: %v; allowed: %s", Redact(s), unwrapURLError(err), DSNForms)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("--db %q: no host; allowed: %s", Redact(s), DSNForms)
	}
	seen := map[string]bool{}
	for _, h := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, ""
		}
		switch {
		case host == "":
			return nil, fmt.Errorf("--db %q: an empty host in the list %q; give HOST:PORT,HOST:PORT,...", Redact(s), u.Host)
		case port != "" && !allDigits(port):
			return nil, fmt.Errorf("--db %q: host %q has port %q, not a number", Redact(s), h, port)
		case seen[h]:
			return nil, fmt.Errorf("--db %q names host %s twice", Redact(s), h)
		}
		seen[h] = true
	}
	return u, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Hosts are the server's HOST[:PORT] addresses, in the order given: one,
// or a cluster's nodes (mysql://u@h1:p1,h2:p2,h3:p3/db). Nil for SQLite.
func (d DSN) Hosts() []string {
	if d.URL == nil {
		return nil
	}
	return strings.Split(d.URL.Host, ",")
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// String gives the DSN with any password replaced, fit for results and logs.
func (d DSN) String() string {
	switch {
	case d.Dialect == SQLite && d.Temp:
		return "sqlite"
	case d.Dialect == SQLite:
		return "sqlite:" + d.Path
	case d.URL != nil:
		return Redact(d.URL.String())
	}
	return string(d.Dialect)
}

// Redact replaces the password of a URL-shaped DSN with "xxxxx", also in
// one that is mistyped (the error that reports it shows it).
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		// Refused, or read as something other than a server URL, as
		// url.Parse reads "postgres:://u:pw@h".
		return redactText(s)
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	u.User = url.UserPassword(u.User.Username(), "xxxxx")
	return u.String()
}

// redactText masks a password by the text alone, finding it where
// url.Parse would in a server URL: in the authority after "://" (which
// ends at the first /, ? or #), before its last @, after the first colon.
func redactText(s string) string {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndex(authority, "@")
	colon := strings.Index(authority[:max(at, 0)], ":")
	if at < 0 || colon < 0 {
		return s
	}
	start := len(s) - len(rest)
	return s[:start+colon+1] + "xxxxx" + s[start+at:]
}

// MustParseDSN is ParseDSN for DSNs known to be good (tests, constants).
func MustParseDSN(s string) DSN {
	d, err := ParseDSN(s)
	if err != nil {
		panic(err)
	}
	return d
}

// MarshalText writes the DSN with its password masked: a configuration
// written out (in a result file) never carries it.
func (d DSN) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads what MarshalText wrote; empty is no database (a
// drive-only run's configuration).
func (d *DSN) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = DSN{}
		return nil
	}
	return d.Set(string(b))
}

// Set parses --db.
func (d *DSN) Set(s string) (err error) {
	*d, err = ParseDSN(s)
	return err
}

// Type names the flag's value in help.
func (d *DSN) Type() string { return "dsn" }
