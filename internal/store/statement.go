package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Statement is SQL a workload declares once and runs many times. SQL is
// written with ? placeholders (rewritten to $n for PostgreSQL); a dialect
// whose SQL differs gives its own text in Dialects, with the same
// placeholder convention.
type Statement struct {
	Name     string
	SQL      string
	Dialects map[Dialect]string
	// Returning is the key column an INSERT hands back to InsertID:
	// RETURNING it where the dialect has RETURNING; on MySQL, which lacks
	// it, the key is the driver's LAST_INSERT_ID.
	Returning string
}

// InsertReturning is an INSERT whose new key InsertID returns.
func InsertReturning(name, insert, key string) Statement {
	return Statement{Name: name, SQL: insert, Returning: key}
}

// For returns the statement's text for dialect d, placeholders in the
// dialect's own form.
func (s Statement) For(d Dialect) string {
	text := s.SQL
	if own, ok := s.Dialects[d]; ok {
		text = own
	}
	if s.Returning != "" && !s.byLastInsertID(d) {
		text += " RETURNING " + s.Returning
	}
	if d == Postgres {
		return numberPlaceholders(text)
	}
	return text
}

func (s Statement) byLastInsertID(d Dialect) bool { return s.Returning != "" && d == MySQL }

// Stmt is a Statement prepared on a DB.
type Stmt struct {
	name string
	p    Prepared
	// returning, lastInsertID: how InsertID reads the new key (see
	// Statement.Returning).
	returning, lastInsertID bool
}

// Name identifies the statement in messages.
func (s *Stmt) Name() string { return s.name }

// Prepare readies a statement for repeated use. Workloads prepare all of
// theirs once at the start of a run.
func (db *DB) Prepare(ctx context.Context, s Statement) (*Stmt, error) {
	p, err := db.backend.Prepare(ctx, s.For(db.dsn.Dialect))
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", s.Name, db.classify(err))
	}
	return &Stmt{name: s.Name, p: p, returning: s.Returning != "", lastInsertID: s.byLastInsertID(db.dsn.Dialect)}, nil
}

// Inserter is where InsertID runs its statement: a DB, a Session or a Tx.
type Inserter interface {
	Exec(ctx context.Context, s *Stmt, args ...any) (Result, error)
	QueryRow(ctx context.Context, s *Stmt, args ...any) Row
}

// InsertID runs s, prepared from an InsertReturning statement, on q and
// returns the new row's key.
func InsertID(ctx context.Context, q Inserter, s *Stmt, args ...any) (int64, error) {
	if !s.returning {
		return 0, fmt.Errorf("insert %s: the statement returns no key (declare it with InsertReturning)", s.name)
	}
	if s.lastInsertID {
		res, err := q.Exec(ctx, s, args...)
		return res.LastInsertID, err
	}
	var id int64
	err := q.QueryRow(ctx, s, args...).Scan(&id)
	return id, err
}

// IsSelect reports whether q, a statement's text in any dialect, is a
// SELECT: outside a transaction it writes nothing, so a connection lost
// under it leaves nothing in doubt (a backend runs it again or fails it),
// where any other statement may have committed in its own implicit
// transaction. A WITH may write (PostgreSQL) and counts as a write.
func IsSelect(q string) bool {
	q = strings.TrimSpace(q)
	return len(q) >= 6 && strings.EqualFold(q[:6], "select")
}

// numberPlaceholders rewrites ? to $1, $2, … outside quoted strings.
func numberPlaceholders(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	inQuote := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			inQuote = !inQuote
			b.WriteByte(c)
		case c == '?' && !inQuote:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
