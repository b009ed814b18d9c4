package container

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tierbench/tierbench/internal/store"
)

// statements are a home's SQL, generated from its Type (table, column and
// finder texts come from the workload's declarations, never from input)
// and prepared once; the stores of modified-column sets are prepared on
// first use.
type statements struct {
	db *store.DB
	t  *Type
	// optimistic: stores check and increment the version column.
	optimistic bool

	load, loadLocking     *store.Stmt // the row's fields by key (CMP find, and load)
	exists, existsLocking *store.Stmt // the key by key (BMP find)
	all                   *store.Stmt // every row: warm-up
	insert, updateAll     *store.Stmt
	del                   *store.Stmt
	finders               map[string]*finderSQL

	mu      sync.Mutex
	updates map[uint64]*store.Stmt
}

type finderSQL struct {
	f                 Finder
	rows, rowsLocking *store.Stmt // keys and fields (CMP)
	keys, keysLocking *store.Stmt // keys only (BMP)
}

func itoa(n int) string { return strconv.Itoa(n) }

// lowerIdent is an unquoted identifier as PostgreSQL stores it.
func lowerIdent(s string) string { return strings.ToLower(s) }

func names(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

func prepareStatements(ctx context.Context, db *store.DB, t *Type, s Settings) (*statements, error) {
	st := &statements{db: db, t: t, optimistic: s.Concurrency == Optimistic && t.Version != "", updates: make(map[uint64]*store.Stmt), finders: make(map[string]*finderSQL)}
	keyCols := strings.Join(names(t.Key), ", ")
	whereKey := make([]string, len(t.Key))
	for i, c := range t.Key {
		whereKey[i] = c.Name + " = ?"
	}
	byKey := " WHERE " + strings.Join(whereKey, " AND ")
	fieldCols := strings.Join(names(t.Fields), ", ")
	if t.Version != "" {
		fieldCols += ", " + t.Version
	}
	locking := ""
	if db.Dialect() != store.SQLite {
		// SQLite serializes writers at BEGIN IMMEDIATE: no row locks.
		locking = " FOR UPDATE"
	}
	prep := func(dst **store.Stmt, name, sql string) error {
		p, err := db.Prepare(ctx, store.Statement{Name: t.Name + "-" + name, SQL: sql})
		*dst = p
		return err
	}
	insertCols := append(names(t.Key), names(t.Fields)...)
	texts := []struct {
		dst  **store.Stmt
		name string
		sql  string
	}{
		{&st.load, "load", "SELECT " + fieldCols + " FROM " + t.Table + byKey},
		{&st.loadLocking, "load-locking", "SELECT " + fieldCols + " FROM " + t.Table + byKey + locking},
		{&st.exists, "find", "SELECT " + keyCols + " FROM " + t.Table + byKey},
		{&st.existsLocking, "find-locking", "SELECT " + keyCols + " FROM " + t.Table + byKey + locking},
		{&st.all, "all", "SELECT " + keyCols + ", " + fieldCols + " FROM " + t.Table},
		{&st.insert, "insert", "INSERT INTO " + t.Table + " (" + strings.Join(insertCols, ", ") + ") VALUES (" + placeholders(len(insertCols)) + ")"},
		{&st.del, "remove", "DELETE FROM " + t.Table + byKey + st.versionCheck()},
	}
	for _, x := range texts {
		if err := prep(x.dst, x.name, x.sql); err != nil {
			return nil, err
		}
	}
	if len(t.Fields) > 0 {
		var all uint64
		for f := range t.Fields {
			all |= 1 << f
		}
		var err error
		if st.updateAll, err = st.update(ctx, all); err != nil {
			return nil, err
		}
	}
	for _, f := range t.Finders {
		fs := &finderSQL{f: f}
		tail := " WHERE " + f.Where
		if f.OrderBy != "" {
			tail += " ORDER BY " + f.OrderBy
		}
		if f.Limit > 0 {
			tail += " LIMIT " + itoa(f.Limit)
		}
		for _, x := range []struct {
			dst  **store.Stmt
			name string
			sql  string
		}{
			{&fs.rows, "rows", "SELECT " + keyCols + ", " + fieldCols + " FROM " + t.Table + tail},
			{&fs.rowsLocking, "rows-locking", "SELECT " + keyCols + ", " + fieldCols + " FROM " + t.Table + tail + locking},
			{&fs.keys, "keys", "SELECT " + keyCols + " FROM " + t.Table + tail},
			{&fs.keysLocking, "keys-locking", "SELECT " + keyCols + " FROM " + t.Table + tail + locking},
		} {
			if err := prep(x.dst, "finder-"+f.Name+"-"+x.name, x.sql); err != nil {
				return nil, err
			}
		}
		st.finders[f.Name] = fs
	}
	return st, nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func (st *statements) versionCheck() string {
	if st.optimistic {
		return " AND " + st.t.Version + " = ?"
	}
	return ""
}

// update is the store of the fields in mask: CMP and BMP-checked store
// only the modified columns, BMP all of them.
func (st *statements) update(ctx context.Context, mask uint64) (*store.Stmt, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.updates[mask]; ok {
		return s, nil
	}
	var set []string
	for f, c := range st.t.Fields {
		if mask&(1<<f) != 0 {
			set = append(set, c.Name+" = ?")
		}
	}
	if st.optimistic {
		set = append(set, st.t.Version+" = "+st.t.Version+" + 1")
	}
	where := make([]string, len(st.t.Key))
	for i, c := range st.t.Key {
		where[i] = c.Name + " = ?"
	}
	sql := "UPDATE " + st.t.Table + " SET " + strings.Join(set, ", ") + " WHERE " + strings.Join(where, " AND ") + st.versionCheck()
	s, err := st.db.Prepare(ctx, store.Statement{Name: fmt.Sprintf("%s-store-%x", st.t.Name, mask), SQL: sql})
	if err != nil {
		return nil, err
	}
	st.updates[mask] = s
	return s, nil
}
