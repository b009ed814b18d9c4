// Package sqlitedrivers is a throw-away measurement module: it benchmarks
// SQLite drivers for database/sql against a Stock-Online-like schema so that
// tierbench can pick its embedded default by measurement (see
// docs/decisions/0002-sqlite-driver.md in the main module).
//
// It is a separate Go module on purpose: the main module must not depend on
// the drivers that lose.
//
// The benchmark bodies live here (a non-test file) so that driver packages
// that cannot be linked into the same test binary can share them: mattn and
// ncruces both register the database/sql name "sqlite3", and sql.Register
// panics on a duplicate, so mattn's benchmarks live in ./mattn.
package sqlitedrivers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Data-set size (Stock-Online-like).
const (
	NumAccounts        = 3000
	NumItems           = 3000
	HoldingsPerAccount = 10
	NumHoldings        = NumAccounts * HoldingsPerAccount

	// ParallelConns is the pool size and (approximately) the goroutine count
	// of the RunParallel benchmarks.
	ParallelConns = 10

	seed1, seed2 = 20260101, 42
)

// Driver describes one database/sql SQLite driver under test.
type Driver struct {
	Name    string // short name used in sub-benchmark names
	SQLName string // name passed to sql.Open
	Module  string // module path, for reporting
	// DSN builds the data source name for a database file with the given
	// busy timeout (ms) and transaction lock mode ("" = driver default,
	// i.e. deferred).
	DSN func(path string, busyMS int, txlock string) string
}

// BenchDSN is the DSN used by the benchmarks: WAL, synchronous=NORMAL,
// busy_timeout=5000, BEGIN IMMEDIATE for write transactions.
func (d Driver) BenchDSN(path string) string { return d.DSN(path, 5000, "immediate") }

// Open opens path with the benchmark DSN and sizes the pool.
func (d Driver) Open(path string) (*sql.DB, error) {
	return d.OpenDSN(d.BenchDSN(path))
}

// OpenDSN opens dsn and sizes the pool for up to ParallelConns connections,
// keeping them all idle (database/sql's default of 2 idle connections would
// make the parallel benchmarks reconnect constantly).
func (d Driver) OpenDSN(dsn string) (*sql.DB, error) {
	db, err := sql.Open(d.SQLName, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(ParallelConns)
	db.SetMaxIdleConns(ParallelConns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// PragmaDSN builds a DSN in the `_pragma=name(value)` style shared by
// modernc.org/sqlite and github.com/ncruces/go-sqlite3.
func PragmaDSN(path string, busyMS int, txlock string) string {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)", path, busyMS)
	if txlock != "" {
		dsn += "&_txlock=" + txlock
	}
	return dsn
}

// Schema is the Stock-Online-like schema.
var Schema = []string{
	`CREATE TABLE SubAccount (sub_accno INTEGER PRIMARY KEY, sub_name TEXT NOT NULL, sub_address TEXT NOT NULL, sub_credit INTEGER NOT NULL)`,
	`CREATE TABLE StockItem (stock_id INTEGER PRIMARY KEY, stock_code TEXT NOT NULL UNIQUE, company_name TEXT NOT NULL, current_value INTEGER NOT NULL, high_value INTEGER NOT NULL, low_value INTEGER NOT NULL)`,
	`CREATE TABLE StockHolding (sub_accno INTEGER NOT NULL, stock_id INTEGER NOT NULL, amount INTEGER NOT NULL, PRIMARY KEY (sub_accno, stock_id))`,
	`CREATE TABLE StockTransaction (trans_id INTEGER PRIMARY KEY, trans_type TEXT NOT NULL, sub_accno INTEGER NOT NULL, stock_id INTEGER NOT NULL, amount INTEGER NOT NULL, price INTEGER NOT NULL, trans_date TEXT NOT NULL)`,
}

// Statements used by the benchmarks.
const (
	SQLPointSelect  = `SELECT current_value, high_value, low_value FROM StockItem WHERE stock_id = ?`
	SQLHoldings     = `SELECT stock_id, amount FROM StockHolding WHERE sub_accno = ? LIMIT 20`
	SQLBuyRead      = `SELECT a.sub_credit, i.current_value FROM SubAccount a, StockItem i WHERE a.sub_accno = ? AND i.stock_id = ?`
	SQLUpsertHold   = `INSERT INTO StockHolding (sub_accno, stock_id, amount) VALUES (?, ?, ?) ON CONFLICT (sub_accno, stock_id) DO UPDATE SET amount = amount + excluded.amount`
	SQLInsertTrans  = `INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) VALUES ('B', ?, ?, ?, ?, ?)`
	SQLInsertHold   = `INSERT INTO StockHolding (sub_accno, stock_id, amount) VALUES (?, ?, ?)`
	SQLInsertAcct   = `INSERT INTO SubAccount (sub_accno, sub_name, sub_address, sub_credit) VALUES (?, ?, ?, ?)`
	SQLInsertItem   = `INSERT INTO StockItem (stock_id, stock_code, company_name, current_value, high_value, low_value) VALUES (?, ?, ?, ?, ?, ?)`
	transDateFormat = "2006-01-02 15:04:05"
)

// Holding is one StockHolding row.
type Holding struct{ Acc, Stock, Amount int64 }

// holdings is the deterministic list of 30000 holdings (10 distinct stocks
// per account), shared by the template build and the bulk-load benchmark.
var holdings = sync.OnceValue(func() []Holding {
	r := rand.New(rand.NewPCG(seed1, seed2+1))
	out := make([]Holding, 0, NumHoldings)
	for acc := int64(1); acc <= NumAccounts; acc++ {
		seen := make(map[int64]bool, HoldingsPerAccount)
		for len(seen) < HoldingsPerAccount {
			s := r.Int64N(NumItems) + 1
			if seen[s] {
				continue
			}
			seen[s] = true
			out = append(out, Holding{acc, s, r.Int64N(1000) + 1})
		}
	}
	return out
})

// Holdings returns the deterministic holdings data set.
func Holdings() []Holding { return holdings() }

// CreateSchema creates the four tables.
func CreateSchema(db *sql.DB) error {
	for _, s := range Schema {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// Populate creates the schema and loads 3000 accounts, 3000 items and
// 30000 holdings in one transaction.
func Populate(db *sql.DB) error {
	if err := CreateSchema(db); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed1, seed2))
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	acct, err := tx.Prepare(SQLInsertAcct)
	if err != nil {
		return err
	}
	for i := int64(1); i <= NumAccounts; i++ {
		if _, err := acct.Exec(i, fmt.Sprintf("Subscriber %05d", i), fmt.Sprintf("%d Market Street, Sydney NSW", i), 1_000_000+r.Int64N(9_000_000)); err != nil {
			return err
		}
	}
	item, err := tx.Prepare(SQLInsertItem)
	if err != nil {
		return err
	}
	for i := int64(1); i <= NumItems; i++ {
		cur := 100 + r.Int64N(9900)
		if _, err := item.Exec(i, fmt.Sprintf("S%05d", i), fmt.Sprintf("Company %05d Ltd", i), cur, cur+r.Int64N(500), max(1, cur-r.Int64N(500))); err != nil {
			return err
		}
	}
	hold, err := tx.Prepare(SQLInsertHold)
	if err != nil {
		return err
	}
	for _, h := range Holdings() {
		if _, err := hold.Exec(h.Acc, h.Stock, h.Amount); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Template databases: each driver populates one file once per process; every
// benchmark run then starts from a fresh copy of it in b.TempDir().
var (
	tmplMu  sync.Mutex
	tmplDir string
	tmpls   = map[string]string{}
)

func template(d Driver) (string, error) {
	tmplMu.Lock()
	defer tmplMu.Unlock()
	if p, ok := tmpls[d.Name]; ok {
		return p, nil
	}
	if tmplDir == "" {
		dir, err := os.MkdirTemp("", "sqlitedrivers-tmpl-")
		if err != nil {
			return "", err
		}
		tmplDir = dir
	}
	p := filepath.Join(tmplDir, d.Name+".db")
	db, err := d.Open(p)
	if err != nil {
		return "", err
	}
	if err := Populate(db); err != nil {
		db.Close()
		return "", err
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		db.Close()
		return "", err
	}
	if err := db.Close(); err != nil {
		return "", err
	}
	tmpls[d.Name] = p
	return p, nil
}

// Cleanup removes the template databases; call it from TestMain.
func Cleanup() {
	tmplMu.Lock()
	defer tmplMu.Unlock()
	if tmplDir != "" {
		os.RemoveAll(tmplDir)
	}
	tmplDir, tmpls = "", map[string]string{}
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// FreshDB returns a populated database (a copy of the driver's template) in
// tb.TempDir(), opened with the benchmark DSN. It is closed by tb.Cleanup.
func FreshDB(tb testing.TB, d Driver) *sql.DB {
	tb.Helper()
	src, err := template(d)
	if err != nil {
		tb.Fatalf("template: %v", err)
	}
	dir := tb.TempDir()
	p := filepath.Join(dir, "stock.db")
	for _, suf := range []string{"", "-wal"} {
		if _, err := os.Stat(src + suf); err == nil {
			if err := copyFile(p+suf, src+suf); err != nil {
				tb.Fatal(err)
			}
		}
	}
	db, err := d.Open(p)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func prepare(tb testing.TB, db *sql.DB, q string) *sql.Stmt {
	tb.Helper()
	s, err := db.Prepare(q)
	if err != nil {
		tb.Fatalf("prepare %q: %v", q, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// parallelism makes RunParallel use ~ParallelConns goroutines.
func parallelism() int {
	p := runtime.GOMAXPROCS(0)
	return (ParallelConns + p - 1) / p
}

var goroutineSeq atomic.Uint64

func goroutineRand() *rand.Rand {
	return rand.New(rand.NewPCG(seed1, seed2+100+goroutineSeq.Add(1)))
}

// --- benchmarks -----------------------------------------------------------

// PointSelect: point select by primary key, 1 goroutine.
func PointSelect(b *testing.B, d Driver) {
	db := FreshDB(b, d)
	st := prepare(b, db, SQLPointSelect)
	r := rand.New(rand.NewPCG(seed1, seed2+10))
	var cur, hi, lo int64
	for b.Loop() {
		if err := st.QueryRow(r.Int64N(NumItems)+1).Scan(&cur, &hi, &lo); err != nil {
			b.Fatal(err)
		}
	}
}

// PointSelectParallel: point select with ~10 goroutines over 10 connections.
func PointSelectParallel(b *testing.B, d Driver) {
	db := FreshDB(b, d)
	st := prepare(b, db, SQLPointSelect)
	b.SetParallelism(parallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := goroutineRand()
		var cur, hi, lo int64
		for pb.Next() {
			if err := st.QueryRow(r.Int64N(NumItems)+1).Scan(&cur, &hi, &lo); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// HoldingsRead: read up to 20 rows of one account's holdings, 1 goroutine.
func HoldingsRead(b *testing.B, d Driver) {
	db := FreshDB(b, d)
	st := prepare(b, db, SQLHoldings)
	r := rand.New(rand.NewPCG(seed1, seed2+20))
	var id, amt int64
	rowsRead := 0
	for b.Loop() {
		rows, err := st.Query(r.Int64N(NumAccounts) + 1)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			if err := rows.Scan(&id, &amt); err != nil {
				b.Fatal(err)
			}
			rowsRead++
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		rows.Close()
	}
	b.ReportMetric(float64(rowsRead)/float64(b.N), "rows/op")
}

type buyStmts struct{ read, upsert, trans *sql.Stmt }

func prepareBuy(tb testing.TB, db *sql.DB) buyStmts {
	return buyStmts{prepare(tb, db, SQLBuyRead), prepare(tb, db, SQLUpsertHold), prepare(tb, db, SQLInsertTrans)}
}

// buyStock runs one BuyStock-like write transaction.
func buyStock(ctx context.Context, db *sql.DB, s buyStmts, r *rand.Rand, date string) error {
	acc, stock, amount := r.Int64N(NumAccounts)+1, r.Int64N(NumItems)+1, r.Int64N(100)+1
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE via _txlock=immediate
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	var credit, price int64
	if err := tx.StmtContext(ctx, s.read).QueryRowContext(ctx, acc, stock).Scan(&credit, &price); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if _, err := tx.StmtContext(ctx, s.upsert).ExecContext(ctx, acc, stock, amount); err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	if _, err := tx.StmtContext(ctx, s.trans).ExecContext(ctx, acc, stock, amount, price, date); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

var benchDate = time.Date(2026, 1, 2, 10, 30, 0, 0, time.UTC).Format(transDateFormat)

// BuyStock: BuyStock-like write transaction, 1 goroutine.
func BuyStock(b *testing.B, d Driver) {
	db := FreshDB(b, d)
	s := prepareBuy(b, db)
	r := rand.New(rand.NewPCG(seed1, seed2+30))
	ctx := context.Background()
	for b.Loop() {
		if err := buyStock(ctx, db, s, r, benchDate); err != nil {
			b.Fatal(err)
		}
	}
}

// BuyStockParallel: BuyStock with ~10 goroutines over 10 connections. All
// writers serialise on SQLite's single write lock; this measures how the
// driver (and its busy handler) cope with that contention.
func BuyStockParallel(b *testing.B, d Driver) {
	db := FreshDB(b, d)
	s := prepareBuy(b, db)
	ctx := context.Background()
	var busy atomic.Int64
	b.SetParallelism(parallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := goroutineRand()
		for pb.Next() {
			if err := buyStock(ctx, db, s, r, benchDate); err != nil {
				if strings.Contains(strings.ToLower(err.Error()), "busy") || strings.Contains(err.Error(), "locked") {
					busy.Add(1)
					continue
				}
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(busy.Load())/float64(b.N), "busy/op")
}

// BulkLoad: insert 30000 holdings in one transaction with a prepared
// statement, into an emptied StockHolding table.
func BulkLoad(b *testing.B, d Driver) {
	db := FreshDB(b, d)
	ins := prepare(b, db, SQLInsertHold)
	hs := Holdings()
	for b.Loop() {
		b.StopTimer()
		if _, err := db.Exec(`DELETE FROM StockHolding`); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		st := tx.Stmt(ins)
		for _, h := range hs {
			if _, err := st.Exec(h.Acc, h.Stock, h.Amount); err != nil {
				tx.Rollback()
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(hs))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// --- configuration checks (used by the tests) ------------------------------

// Pragmas reports journal_mode, busy_timeout and synchronous as seen by one
// pooled connection.
func Pragmas(ctx context.Context, c *sql.Conn) (journal string, busyMS, sync int, err error) {
	if err = c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&journal); err != nil {
		return
	}
	if err = c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busyMS); err != nil {
		return
	}
	err = c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync)
	return
}

// CheckConfig verifies, on ParallelConns distinct pooled connections, that
// the benchmark DSN's pragmas took effect, and logs the SQLite version.
func CheckConfig(t *testing.T, d Driver) {
	db := FreshDB(t, d)
	ctx := context.Background()
	var version string
	if err := db.QueryRow(`SELECT sqlite_version()`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%s): SQLite %s, DSN %s", d.Name, d.Module, version, d.BenchDSN("PATH"))
	conns := make([]*sql.Conn, 0, ParallelConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < ParallelConns; i++ {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		j, busy, sync, err := Pragmas(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if j != "wal" || busy != 5000 || sync != 1 {
			t.Errorf("conn %d: journal_mode=%q busy_timeout=%d synchronous=%d; want wal 5000 1", i, j, busy, sync)
		}
		if i == 0 {
			t.Logf("journal_mode=%s busy_timeout=%d synchronous=%d (checked on %d connections)", j, busy, sync, ParallelConns)
		}
	}
}

// CheckTxLock verifies that BeginTx takes the write lock at BEGIN when the
// DSN has _txlock=immediate, and does not with the default (deferred): a
// second connection with a 50 ms busy timeout must fail to write while an
// otherwise idle transaction is open in the first.
func CheckTxLock(t *testing.T, d Driver) {
	for _, tc := range []struct {
		txlock    string
		wantBlock bool
	}{{"immediate", true}, {"", false}} {
		name := tc.txlock
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lock.db")
			db1, err := d.OpenDSN(d.DSN(p, 5000, tc.txlock))
			if err != nil {
				t.Fatal(err)
			}
			defer db1.Close()
			if _, err := db1.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
				t.Fatal(err)
			}
			db2, err := d.OpenDSN(d.DSN(p, 50, ""))
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			tx, err := db1.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			start := time.Now()
			_, err = db2.Exec(`INSERT INTO t VALUES (1)`)
			blocked := err != nil
			t.Logf("txlock=%s: concurrent write err=%v after %v", name, err, time.Since(start).Round(time.Millisecond))
			if blocked != tc.wantBlock {
				t.Errorf("txlock=%s: concurrent write blocked=%v, want %v (err=%v)", name, blocked, tc.wantBlock, err)
			}
			if err != nil && !strings.Contains(strings.ToLower(err.Error()), "busy") && !strings.Contains(err.Error(), "locked") {
				t.Errorf("unexpected error kind: %v", err)
			}
			if err := tx.Commit(); err != nil && !errors.Is(err, sql.ErrTxDone) {
				t.Fatal(err)
			}
		})
	}
}
