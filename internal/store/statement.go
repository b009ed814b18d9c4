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
}

// For returns the statement's text for dialect d, placeholders in the
// dialect's own form.
func (s Statement) For(d Dialect) string {
	text := s.SQL
	if own, ok := s.Dialects[d]; ok {
		text = own
	}
	if d == Postgres {
		return numberPlaceholders(text)
	}
	return text
}

// Stmt is a Statement prepared on a DB.
type Stmt struct {
	name string
	p    Prepared
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
	return &Stmt{name: s.Name, p: p}, nil
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
