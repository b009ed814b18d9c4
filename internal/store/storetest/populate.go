package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

// Populate fills dsn, a fresh empty database that this package made
// (SQLite, Postgres, MySQL, Each), with a private copy of the population
// named key: load runs once per backend and server per test binary, into
// a database of its own (the origin), and every call copies the origin.
// A workload's population takes seconds of the test's CPU to generate and
// the server's to index; a copy is made by the server from its own tables
// (PostgreSQL, MariaDB) or is a file copy (SQLite), in a fraction of that.
//
// The copy has the origin's rows, columns, defaults, keys, unique and
// check constraints and indexes under their own names, and its sequences
// (SERIAL, identity, AUTO_INCREMENT) at the origin's position, each its
// own: writing a copy never reaches the origin or another copy. Statistics
// are gathered again (ANALYZE on PostgreSQL). Foreign keys, views and
// sequences owned by no column are not copied: a population with one is
// refused.
//
// key must name everything load depends on (workload, scale, seed, time
// base, options), since two calls with one key share one origin. The
// origins are dropped when the test binary ends, which the package's
// TestMain must arrange by calling Main.
func Populate(t testing.TB, dsn, key string, load func(ctx context.Context, db *store.DB) error) {
	t.Helper()
	d := store.MustParseDSN(dsn)
	o, err := originOf(d, key, load)
	if err != nil {
		t.Fatalf("population %q on %s: %v", key, d.Dialect, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), copyTimeout)
	defer cancel()
	if err := o.copyTo(ctx, d); err != nil {
		t.Fatalf("copy of population %q into %s: %v", key, store.Redact(dsn), err)
	}
}

// copyTimeout bounds a copy, which takes seconds at most: one waiting on
// a lock fails its test with the cause instead of running into the
// binary's timeout, which would report nothing of it.
const copyTimeout = 5 * time.Minute

// Main runs a package's tests with run (testsvc.MainWaiting, or m.Run when
// nil), then drops the origins Populate made, and returns run's code. A
// package whose tests call Populate calls it from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(storetest.Main(m, testsvc.MainWaiting)) }
func Main(m *testing.M, run func(*testing.M) int) int {
	if run == nil {
		run = (*testing.M).Run
	}
	origins.Lock()
	origins.main = true
	origins.Unlock()
	code := run(m)
	origins.Lock()
	defer origins.Unlock()
	for _, o := range origins.byKey {
		<-o.ready // a load still running when the tests ended (a timeout)
		if o.drop == nil {
			continue
		}
		if err := o.drop(); err != nil {
			fmt.Fprintf(os.Stderr, "storetest: dropping the population %q: %v\n", o.key, err)
			code = max(code, 1)
		}
	}
	origins.byKey = nil
	return code
}

// origins are the test binary's loaded populations. They are package state
// because they outlive every test that uses them (a test's cleanup would
// drop an origin the next test still needs); Main drops them.
var origins struct {
	sync.Mutex
	main  bool
	byKey map[string]*origin
}

// origin is a loaded population and how to copy it. ready closes once the
// load has ended, well or not.
type origin struct {
	key   string
	ready chan struct{}
	err   error
	// drop removes the origin; nil until it exists.
	drop func() error
	// copyTo fills a fresh database of the origin's backend and server.
	copyTo func(ctx context.Context, dst store.DSN) error
}

// originOf is key's origin on dsn's backend and server, loaded by the
// first caller while the others wait.
func originOf(dsn store.DSN, key string, load func(context.Context, *store.DB) error) (*origin, error) {
	server := ""
	if dsn.URL != nil {
		server = dsn.URL.Host
	}
	id := fmt.Sprintf("%s|%s|%s", dsn.Dialect, server, key)
	origins.Lock()
	if !origins.main {
		origins.Unlock()
		return nil, errors.New("the package's TestMain must call storetest.Main, which drops the populations when the tests end")
	}
	o, found := origins.byKey[id]
	if !found {
		o = &origin{key: key, ready: make(chan struct{})}
		if origins.byKey == nil {
			origins.byKey = make(map[string]*origin)
		}
		origins.byKey[id] = o
	}
	origins.Unlock()
	if found {
		<-o.ready
		return o, o.err
	}
	defer close(o.ready)
	o.err = o.make(dsn, load)
	return o, o.err
}

// make creates the origin beside dsn, loads it and reads what a copy
// needs to know of it.
func (o *origin) make(dsn store.DSN, load func(context.Context, *store.DB) error) error {
	ctx := context.Background()
	name := uniqueName()
	var at string // the origin's DSN
	switch dsn.Dialect {
	case store.SQLite:
		dir, err := os.MkdirTemp("", "tierbench-population-")
		if err != nil {
			return err
		}
		o.drop = func() error { return os.RemoveAll(dir) }
		at = "sqlite:" + filepath.Join(dir, "origin.db")
	case store.Postgres:
		base := serverURL(dsn)
		if err := adminErr(base, "CREATE SCHEMA "+name); err != nil {
			return err
		}
		o.drop = func() error { return adminErr(base, "DROP SCHEMA "+name+" CASCADE") }
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		at = u.String()
	case store.MySQL:
		base := dsn.URL.String()
		if err := adminErr(base, "CREATE DATABASE "+name); err != nil {
			return err
		}
		u, _ := url.Parse(base)
		u.Path = "/" + name
		at = u.String()
		// Dropped from a session on itself: the test's database, through
		// which it was made, is gone by then.
		o.drop = func() error { return adminErr(at, "DROP DATABASE "+name) }
	default:
		return fmt.Errorf("no copy for %s", dsn.Dialect)
	}
	db, err := Backends().Open(ctx, store.MustParseDSN(at), store.Options{Threads: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := load(ctx, db); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	switch dsn.Dialect {
	case store.SQLite:
		o.copyTo, err = sqliteCopier(ctx, db, store.MustParseDSN(at).Path)
	case store.Postgres:
		o.copyTo, err = postgresCopier(ctx, db, name)
	case store.MySQL:
		o.copyTo, err = mysqlCopier(ctx, db, name)
	}
	return err
}

// serverURL is a PostgreSQL DSN's server without the schema it names.
func serverURL(dsn store.DSN) string {
	u := *dsn.URL
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String()
}

// sqliteCopier checkpoints the origin's write-ahead log into its file;
// a copy is then that file, copied.
func sqliteCopier(ctx context.Context, db *store.DB, path string) (func(context.Context, store.DSN) error, error) {
	if err := db.ExecScript(ctx, "PRAGMA wal_checkpoint(TRUNCATE);"); err != nil {
		return nil, err
	}
	return func(_ context.Context, dst store.DSN) error {
		if dst.Path == "" {
			return errors.New("a copy needs a file path (sqlite:PATH)")
		}
		if _, err := os.Stat(dst.Path); err == nil {
			return fmt.Errorf("%s exists: a copy goes into a fresh database", dst.Path)
		}
		return copyFile(path, dst.Path)
	}, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pgTable is what a PostgreSQL copy needs to know of one of the origin's
// tables.
type pgTable struct {
	name    string
	columns []string // those not GENERATED ALWAYS AS (expression)
	// constraints are the primary key, unique and exclusion constraints
	// (name, definition); checks and NOT NULL come with LIKE.
	constraints [][2]string
	indexes     []string // CREATE INDEX statements of the other indexes
	sequences   []pgSequence
}

// pgSequence is a column's sequence: an identity column's (LIKE makes the
// copy its own) or a SERIAL's (LIKE would share the origin's: the copy
// gets one of its own, made here), and the origin's position in it.
type pgSequence struct {
	column, name, create string // create: a SERIAL's CREATE SEQUENCE options
	identity             bool
	lastValue            int64
	isCalled             bool
}

// postgresCopier reads the origin schema's catalog once; a copy is then one
// script, one round trip and one transaction on the server.
func postgresCopier(ctx context.Context, db *store.DB, schema string) (func(context.Context, store.DSN) error, error) {
	q := catalog{ctx: ctx, db: db}
	kinds := q.strings("SELECT relname::text || ' (' || relkind::text || ')' FROM pg_class WHERE relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) AND relkind NOT IN ('r', 'i', 'S', 't') ORDER BY 1", schema)
	fks := q.strings("SELECT conrelid::regclass::text || ' ' || conname::text FROM pg_constraint WHERE connamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) AND contype = 'f' ORDER BY 1", schema)
	loose := q.strings(`SELECT s.relname FROM pg_class s WHERE s.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) AND s.relkind = 'S'
		AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.refobjsubid > 0) ORDER BY 1`, schema)
	if q.err != nil {
		return nil, q.err
	}
	if len(kinds)+len(fks)+len(loose) > 0 {
		return nil, fmt.Errorf("a population of tables, their indexes and their columns' sequences is copied; this one also has %s",
			strings.Join(append(append(append([]string{}, kinds...), prefixed("foreign key ", fks)...), prefixed("sequence ", loose)...), ", "))
	}
	var tables []pgTable
	for _, name := range q.strings("SELECT relname FROM pg_class WHERE relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) AND relkind = 'r' ORDER BY relname", schema) {
		rel := schema + "." + quoteIdent(name)
		t := pgTable{name: name}
		t.columns = q.strings("SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = (?::text)::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum", rel)
		for _, c := range q.strings("SELECT quote_ident(conname) || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = (?::text)::regclass AND contype IN ('p', 'u', 'x') ORDER BY conname", rel) {
			n, def, _ := strings.Cut(c, " ")
			t.constraints = append(t.constraints, [2]string{n, def})
		}
		for _, def := range q.strings(`SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = (?::text)::regclass
			AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid) ORDER BY i.indexrelid::regclass::text`, rel) {
			on := " ON " + schema + "."
			if !strings.Contains(def, on) {
				return nil, fmt.Errorf("index %q: no %q to point at the copy", def, on)
			}
			t.indexes = append(t.indexes, def)
		}
		for _, col := range q.strings("SELECT attname::text || ' ' || attidentity::text FROM pg_attribute WHERE attrelid = (?::text)::regclass AND attnum > 0 AND NOT attisdropped AND pg_get_serial_sequence(?::text, attname::text) IS NOT NULL ORDER BY attnum", rel, rel) {
			column, ident, _ := strings.Cut(col, " ")
			s := pgSequence{column: column, identity: ident != ""}
			s.name = q.string("SELECT pg_get_serial_sequence(?::text, ?::text)", rel, column)
			if q.err != nil {
				break
			}
			q.row("SELECT COALESCE(last_value, start_value), last_value IS NOT NULL FROM pg_sequences WHERE schemaname || '.' || sequencename = ?", []any{&s.lastValue, &s.isCalled}, s.name)
			s.create = q.string(`SELECT format('AS %s INCREMENT %s MINVALUE %s MAXVALUE %s START %s CACHE %s %s', data_type::regtype, increment_by, min_value, max_value, start_value, cache_size, CASE WHEN cycle THEN 'CYCLE' ELSE 'NO CYCLE' END)
				FROM pg_sequences WHERE schemaname || '.' || sequencename = ?`, s.name)
			t.sequences = append(t.sequences, s)
		}
		tables = append(tables, t)
	}
	if q.err != nil {
		return nil, q.err
	}
	return func(ctx context.Context, dst store.DSN) error {
		to := dst.URL.Query().Get("search_path")
		if to == "" || strings.Contains(to, ",") {
			return fmt.Errorf("a copy goes into the one schema the DSN's search_path names, not %q", to)
		}
		db, err := Backends().Open(ctx, dst, store.Options{Threads: 1})
		if err != nil {
			return err
		}
		defer db.Close()
		return db.ExecScript(ctx, postgresCopyScript(schema, to, tables))
	}, nil
}

// postgresCopyScript copies the tables of schema from into schema to:
// the rows before the indexes, which are then built once rather than row
// by row.
func postgresCopyScript(from, to string, tables []pgTable) string {
	var b strings.Builder
	names := make([]string, len(tables))
	for i, t := range tables {
		src, dst := from+"."+quoteIdent(t.name), to+"."+quoteIdent(t.name)
		names[i] = dst
		cols := strings.Join(t.columns, ", ")
		fmt.Fprintf(&b, "CREATE TABLE %s (LIKE %s INCLUDING ALL EXCLUDING INDEXES);\n", dst, src)
		fmt.Fprintf(&b, "INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %s;\n", dst, cols, cols, src)
		for _, c := range t.constraints {
			fmt.Fprintf(&b, "ALTER TABLE %s ADD CONSTRAINT %s %s;\n", dst, c[0], c[1])
		}
		for _, def := range t.indexes {
			b.WriteString(strings.Replace(def, " ON "+from+".", " ON "+to+".", 1) + ";\n")
		}
		for _, s := range t.sequences {
			seq := fmt.Sprintf("pg_get_serial_sequence('%s', '%s')", strings.ReplaceAll(dst, "'", "''"), strings.ReplaceAll(s.column, "'", "''"))
			if !s.identity {
				// LIKE copied the default, nextval of the origin's sequence.
				_, bare, _ := strings.Cut(s.name, ".")
				own := to + "." + bare
				fmt.Fprintf(&b, "CREATE SEQUENCE %s %s OWNED BY %s.%s;\n", own, s.create, dst, quoteIdent(s.column))
				fmt.Fprintf(&b, "ALTER TABLE %s ALTER COLUMN %s SET DEFAULT nextval('%s'::regclass);\n", dst, quoteIdent(s.column), strings.ReplaceAll(own, "'", "''"))
			}
			fmt.Fprintf(&b, "SELECT setval(%s, %d, %t);\n", seq, s.lastValue, s.isCalled)
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, "ANALYZE %s;\n", strings.Join(names, ", "))
	}
	return b.String()
}

// quoteIdent quotes a PostgreSQL or MySQL identifier where it needs it.
func quoteIdent(s string) string {
	plain := s != ""
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// mysqlTable is what a MariaDB/MySQL copy needs to know of one of the
// origin's tables.
type mysqlTable struct {
	name    string
	columns []string // those not generated
	// autoIncrement is the table's next AUTO_INCREMENT value, 0 if none:
	// CREATE TABLE … LIKE starts the copy's at 1, and an INSERT of the
	// rows moves it past the largest key only, not to where the origin's
	// stood.
	autoIncrement int64
}

// mysqlCopier reads the origin database's catalog once; a copy then
// creates each table LIKE the origin's (keys and indexes with their names)
// and fills it with INSERT … SELECT on the server.
func mysqlCopier(ctx context.Context, db *store.DB, database string) (func(context.Context, store.DSN) error, error) {
	q := catalog{ctx: ctx, db: db}
	other := q.strings("SELECT CONCAT(table_name, ' (', table_type, ')') FROM information_schema.TABLES WHERE table_schema = ? AND table_type <> 'BASE TABLE' ORDER BY 1", database)
	fks := q.strings("SELECT CONCAT(table_name, ' ', constraint_name) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE constraint_schema = ? ORDER BY 1", database)
	if q.err != nil {
		return nil, q.err
	}
	if len(other)+len(fks) > 0 {
		return nil, fmt.Errorf("a population of tables and their indexes is copied; this one also has %s",
			strings.Join(append(append([]string{}, other...), prefixed("foreign key ", fks)...), ", "))
	}
	var tables []mysqlTable
	for _, name := range q.strings("SELECT table_name FROM information_schema.TABLES WHERE table_schema = ? ORDER BY table_name", database) {
		t := mysqlTable{name: name}
		t.columns = q.strings("SELECT CONCAT('`', REPLACE(column_name, '`', '``'), '`') FROM information_schema.COLUMNS WHERE table_schema = ? AND table_name = ? AND extra NOT LIKE '%GENERATED%' ORDER BY ordinal_position", database, name)
		q.row("SELECT COALESCE(auto_increment, 0) FROM information_schema.TABLES WHERE table_schema = ? AND table_name = ?", []any{&t.autoIncrement}, database, name)
		tables = append(tables, t)
	}
	if q.err != nil {
		return nil, q.err
	}
	return func(ctx context.Context, dst store.DSN) error {
		to := strings.Trim(dst.URL.Path, "/")
		db, err := Backends().Open(ctx, dst, store.Options{Threads: 1})
		if err != nil {
			return err
		}
		defer db.Close()
		return db.ExecScript(ctx, mysqlCopyScript(database, to, tables))
	}, nil
}

func mysqlCopyScript(from, to string, tables []mysqlTable) string {
	var b strings.Builder
	for _, t := range tables {
		name := "`" + strings.ReplaceAll(t.name, "`", "``") + "`"
		src, dst := from+"."+name, to+"."+name
		cols := strings.Join(t.columns, ", ")
		fmt.Fprintf(&b, "CREATE TABLE %s LIKE %s;\n", dst, src)
		fmt.Fprintf(&b, "INSERT INTO %s (%s) SELECT %s FROM %s;\n", dst, cols, cols, src)
		if t.autoIncrement > 0 {
			fmt.Fprintf(&b, "ALTER TABLE %s AUTO_INCREMENT = %d;\n", dst, t.autoIncrement)
		}
	}
	return b.String()
}

func prefixed(p string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = p + s
	}
	return out
}

// catalog reads an origin's catalog, keeping the first error: a copier
// asks many small questions and gives up on the first that fails.
type catalog struct {
	ctx context.Context
	db  *store.DB
	err error
}

func (c *catalog) row(sql string, dest []any, args ...any) {
	if c.err != nil {
		return
	}
	s, err := c.db.Prepare(c.ctx, store.Statement{Name: "catalog", SQL: sql})
	if err == nil {
		err = c.db.QueryRow(c.ctx, s, args...).Scan(dest...)
	}
	if err != nil {
		c.err = fmt.Errorf("%s: %w", strings.Join(strings.Fields(sql), " "), err)
	}
}

func (c *catalog) string(sql string, args ...any) string {
	var s string
	c.row(sql, []any{&s}, args...)
	return s
}

func (c *catalog) strings(sql string, args ...any) []string {
	if c.err != nil {
		return nil
	}
	s, err := c.db.Prepare(c.ctx, store.Statement{Name: "catalog", SQL: sql})
	var out []string
	if err == nil {
		out, err = store.Collect(c.ctx, c.db, s, func(v *string) []any { return []any{v} }, args...)
	}
	if err != nil {
		c.err = fmt.Errorf("%s: %w", strings.Join(strings.Fields(sql), " "), err)
	}
	return out
}
