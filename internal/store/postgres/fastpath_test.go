package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/postgres"
	"github.com/tierbench/tierbench/internal/store/storetest"
)

// bundle is a test's database on a fresh schema, with the backend under
// its DB, whose threads the tests look into.
type bundle struct {
	db *store.DB
	be store.Backend
	q  storetest.Querier
}

func setup(t testing.TB, threads int, ddl string) bundle {
	t.Helper()
	return setupOn(t, storetest.Postgres(t), threads, ddl) // skips when PostgreSQL is unreachable
}

func setupOn(t testing.TB, dsn string, threads int, ddl string) bundle {
	t.Helper()
	var be store.Backend
	backends := &store.Backends{}
	backends.Add(store.Postgres, func(ctx context.Context, d store.DSN, o store.Options) (store.Backend, error) {
		b, err := postgres.Open(ctx, d, o)
		be = b
		return b, err
	})
	db, err := backends.Open(context.Background(), store.MustParseDSN(dsn), store.Options{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.ExecScript(context.Background(), ddl); err != nil {
		t.Fatal(err)
	}
	return bundle{db: db, be: be, q: storetest.Querier{T: t, DB: db}}
}

const typesDDL = `CREATE TABLE types (id BIGINT PRIMARY KEY, i2 SMALLINT, i4 INTEGER, i8 BIGINT,
	f4 REAL, f8 DOUBLE PRECISION, b BOOLEAN, ts TIMESTAMP, tz TIMESTAMPTZ, bin BYTEA,
	tx TEXT, vc VARCHAR(32), bc CHAR(6), nu NUMERIC(20,6), d DATE)`

const (
	insertTypes = "INSERT INTO types (id, i2, i4, i8, f4, f8, b, ts, tz, bin, tx, vc, bc, nu) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	selectTypes = "SELECT i2, i4, i8, f4, f8, b, ts, tz, bin, tx, vc, bc, nu FROM types WHERE id = ?"
)

// typed is a row of types as the workloads read one.
type typed struct {
	i2     int32
	i4     int
	i8     int64
	f4, f8 float64
	b      bool
	ts, tz time.Time
	bin    []byte
	tx     string
	vc, bc string
	nu     float64
}

func (r *typed) dest() []any {
	return []any{&r.i2, &r.i4, &r.i8, &r.f4, &r.f8, &r.b, &r.ts, &r.tz, &r.bin, &r.tx, &r.vc, &r.bc, &r.nu}
}

// The same rows written and read through the fast path and through pgx
// (the shared session) must read back alike, and as written.
func TestFastPathRoundTripsEveryType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := setup(t, 1, typesDDL)
	insert, sel := x.q.Stmt(insertTypes), x.q.Stmt(selectTypes)
	east := time.FixedZone("UTC+5", 5*3600)
	west := time.FixedZone("UTC-3", -3*3600)
	rows := [][]any{
		{int64(1), int(math.MinInt16), int32(math.MinInt32), int64(math.MinInt64), 1.5, -1.5e300, true,
			time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, east), // before the Unix epoch, wall clock east of UTC
			time.Date(2026, 11, 28, 4, 9, 53, 123_456_000, time.UTC),
			[]byte{0, 1, 2, 255}, "Grüße, 東京 🚀", "", "ab", 1234.5678},
		{int64(2), int32(math.MaxInt16), int64(math.MaxInt32), int64(math.MaxInt64), -0.25, 5e-324, false,
			time.Date(2000, 1, 1, 0, 0, 0, 1000, time.UTC),
			time.Date(1900, 6, 15, 12, 0, 0, 500_000_000, west),
			[]byte{}, "", "ümlaut", "xyz", int64(-42)},
	}
	want := []typed{
		{i2: math.MinInt16, i4: math.MinInt32, i8: math.MinInt64, f4: 1.5, f8: -1.5e300, b: true,
			ts:  time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
			tz:  time.Date(2026, 11, 28, 4, 9, 53, 123_456_000, time.UTC),
			bin: []byte{0, 1, 2, 255}, tx: "Grüße, 東京 🚀", vc: "", bc: "ab    ", nu: 1234.5678},
		{i2: math.MaxInt16, i4: math.MaxInt32, i8: math.MaxInt64, f4: -0.25, f8: 5e-324, b: false,
			ts:  time.Date(2000, 1, 1, 0, 0, 0, 1000, time.UTC),
			tz:  time.Date(1900, 6, 15, 15, 0, 0, 500_000_000, time.UTC),
			bin: []byte{}, tx: "", vc: "ümlaut", bc: "xyz   ", nu: -42},
	}
	th := x.db.Thread(0)
	for i, args := range rows {
		if _, err := th.Exec(ctx, insert, args...); err != nil {
			t.Fatalf("row %d through the fast path: %v", i, err)
		}
		viaPgx := append([]any{args[0].(int64) + 100}, args[1:]...)
		if _, err := x.db.Exec(ctx, insert, viaPgx...); err != nil {
			t.Fatalf("row %d through pgx: %v", i, err)
		}
	}
	if st := postgres.ThreadStats(x.be, 0); st.Fast != 2 || st.Fallback != 0 {
		t.Fatalf("inserts: %+v; want 2 fast, no fallback", st)
	}
	for i := range rows {
		for _, id := range []int64{int64(i + 1), int64(i + 101)} {
			var fast, slow typed
			if err := th.QueryRow(ctx, sel, id).Scan(fast.dest()...); err != nil {
				t.Fatalf("row %d through the fast path: %v", id, err)
			}
			if err := x.db.QueryRow(ctx, sel, id).Scan(slow.dest()...); err != nil {
				t.Fatalf("row %d through pgx: %v", id, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Errorf("row %d:\nfast path %+v\npgx       %+v", id, fast, slow)
			}
			w := want[i]
			if !fast.ts.Equal(w.ts) || !fast.tz.Equal(w.tz) {
				t.Errorf("row %d: timestamps %v, %v; want %v, %v", id, fast.ts, fast.tz, w.ts, w.tz)
			}
			fast.ts, fast.tz, w.ts, w.tz = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			if !reflect.DeepEqual(fast, w) {
				t.Errorf("row %d:\nread %+v\nwant %+v", id, fast, w)
			}
		}
	}
	if st := postgres.ThreadStats(x.be, 0); st.Fast != 6 || st.Fallback != 0 {
		t.Errorf("after the reads: %+v; want 6 fast, no fallback", st)
	}
}

// NULLs: into *[]byte they are nil, through either path; into other
// destinations both paths fail alike.
func TestFastPathNulls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := setup(t, 1, typesDDL)
	insert := x.q.Stmt(insertTypes)
	args := []any{int64(1), nil, nil, nil, nil, nil, nil, nil, nil, []byte(nil), nil, nil, nil, nil}
	if _, err := x.db.Thread(0).Exec(ctx, insert, args...); err != nil {
		t.Fatal(err)
	}
	bytes := x.q.Stmt("SELECT bin, tx, vc FROM types WHERE id = ?")
	scan := func(s *store.Session) ([]byte, []byte, []byte, error) {
		b1, b2, b3 := []byte("not nil"), []byte("not nil"), []byte("not nil")
		err := s.QueryRow(ctx, bytes, 1).Scan(&b1, &b2, &b3)
		return b1, b2, b3, err
	}
	b1, b2, b3, err := scan(x.db.Thread(0))
	if err != nil || b1 != nil || b2 != nil || b3 != nil {
		t.Errorf("NULLs into *[]byte through the fast path: %q %q %q, %v; want nil, nil, nil", b1, b2, b3, err)
	}
	sel := x.q.Stmt(selectTypes)
	var fast, slow typed
	ferr := x.db.Thread(0).QueryRow(ctx, sel, 1).Scan(fast.dest()...)
	serr := x.db.QueryRow(ctx, sel, 1).Scan(slow.dest()...)
	if ferr == nil || serr == nil || ferr.Error() != serr.Error() {
		t.Errorf("NULL into *int32: fast path %v, pgx %v; want the same error", ferr, serr)
	}
	if st := postgres.ThreadStats(x.be, 0); st.Fast != 3 || st.Fallback != 0 {
		t.Errorf("%+v; want 3 fast, no fallback", st)
	}
}

// An argument or column the codec does not know runs, or is decoded,
// through pgx, with pgx's result.
func TestFastPathFallsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := setup(t, 1, typesDDL)
	th := x.db.Thread(0)
	insertDate := x.q.Stmt("INSERT INTO types (id, d, i8, tx) VALUES (?, ?, ?, ?)")
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	// A DATE parameter, and a uint64 argument: not the codec's.
	if _, err := th.Exec(ctx, insertDate, 1, day, uint64(7), "x"); err != nil {
		t.Fatal(err)
	}
	if st := postgres.ThreadStats(x.be, 0); st.Fast != 0 || st.Fallback != 1 {
		t.Fatalf("insert of a date: %+v; want 1 fallback", st)
	}
	// Destinations the codec does not fill: pgx's type map does.
	sel := x.q.Stmt("SELECT d, i8, tx, i4 FROM types WHERE id = ?")
	type out struct {
		d  time.Time
		u  uint64
		tx sql.NullString
		i4 sql.NullInt64
	}
	var fast, slow out
	if err := th.QueryRow(ctx, sel, 1).Scan(&fast.d, &fast.u, &fast.tx, &fast.i4); err != nil {
		t.Fatal(err)
	}
	if err := x.db.QueryRow(ctx, sel, 1).Scan(&slow.d, &slow.u, &slow.tx, &slow.i4); err != nil {
		t.Fatal(err)
	}
	want := out{d: day, u: 7, tx: sql.NullString{String: "x", Valid: true}}
	if !reflect.DeepEqual(fast, slow) || !reflect.DeepEqual(fast, want) {
		t.Errorf("fast path %+v, pgx %+v; want %+v", fast, slow, want)
	}
	if st := postgres.ThreadStats(x.be, 0); st.Fast != 1 || st.Fallback != 1 {
		t.Errorf("%+v; want the select on the fast path", st)
	}
	// An int32 destination for a value out of its range: pgx's error.
	big := x.q.Stmt("SELECT i8 FROM types WHERE id = ?")
	if _, err := th.Exec(ctx, x.q.Stmt("UPDATE types SET i8 = ? WHERE id = ?"), int64(math.MaxInt32)+1, 1); err != nil {
		t.Fatal(err)
	}
	var f32, s32 int32
	ferr := th.QueryRow(ctx, big, 1).Scan(&f32)
	serr := x.db.QueryRow(ctx, big, 1).Scan(&s32)
	if ferr == nil || serr == nil || ferr.Error() != serr.Error() {
		t.Errorf("int32 overflow: fast path %v, pgx %v; want the same error", ferr, serr)
	}
	// An int4 parameter out of range: pgx reports it.
	small := x.q.Stmt("UPDATE types SET i4 = ? WHERE id = ?")
	_, ferr = th.Exec(ctx, small, int64(math.MaxInt32)+1, 1)
	_, serr = x.db.Exec(ctx, small, int64(math.MaxInt32)+1, 1)
	if ferr == nil || serr == nil || ferr.Error() != serr.Error() {
		t.Errorf("int4 overflow: fast path %v, pgx %v; want the same error", ferr, serr)
	}
}

func TestFastPathQueryAndNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := setup(t, 1, "CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT NOT NULL)")
	th := x.db.Thread(0)
	ins := x.q.Stmt("INSERT INTO kv (k, v) VALUES (?, ?)")
	for k := int64(1); k <= 5; k++ {
		if _, err := th.Exec(ctx, ins, k, fmt.Sprint("v", k)); err != nil {
			t.Fatal(err)
		}
	}
	type kv struct {
		k int64
		v string
	}
	got, err := store.Collect(ctx, th, x.q.Stmt("SELECT k, v FROM kv WHERE k >= ? ORDER BY k"), func(r *kv) []any { return []any{&r.k, &r.v} }, 3)
	if err != nil || fmt.Sprint(got) != "[{3 v3} {4 v4} {5 v5}]" {
		t.Errorf("query: %v, %v", got, err)
	}
	var v string
	if err := th.QueryRow(ctx, x.q.Stmt("SELECT v FROM kv WHERE k = ?"), 99).Scan(&v); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing row: %v, want ErrNotFound", err)
	}
	// A server error in the middle of the rows ends them with it.
	rows, err := th.Query(ctx, x.q.Stmt("SELECT 10 / (g - 3) FROM generate_series(1, 5) g"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var q int64
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err == nil || n != 2 {
		t.Errorf("division by zero at the third row: %d rows, %v; want 2 and an error", n, err)
	}
	if st := postgres.ThreadStats(x.be, 0); st.Fast != 8 || st.Fallback != 0 {
		t.Errorf("%+v; want 8 fast, no fallback", st)
	}
	// The thread's connection is usable after all that.
	if err := th.QueryRow(ctx, x.q.Stmt("SELECT v FROM kv WHERE k = ?"), 1).Scan(&v); err != nil || v != "v1" {
		t.Errorf("after the failed query: %q, %v", v, err)
	}
}

// A thread whose connection the server ended gets another, on which its
// statements are prepared again.
func TestFastPathPreparesAgainOnANewConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := setup(t, 1, "CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT NOT NULL)")
	th := x.db.Thread(0)
	sel := x.q.Stmt("SELECT COUNT(*) FROM kv WHERE k > ?")
	var n int64
	if err := th.QueryRow(ctx, sel, 0).Scan(&n); err != nil {
		t.Fatal(err)
	}
	before := postgres.ThreadStats(x.be, 0)
	pid := postgres.ThreadPID(x.be, 0)
	if before.Prepared != 1 || pid == 0 {
		t.Fatalf("%+v, pid %d; want 1 statement prepared on a connection", before, pid)
	}
	if err := x.q.Row("SELECT pg_terminate_backend(?)", int64(pid)).Scan(new(bool)); err != nil {
		t.Fatal(err)
	}
	gone := x.q.Stmt("SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ?")
	for deadline := time.Now().Add(10 * time.Second); x.q.IntOf(gone, int64(pid)) != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("server process %d still there after 10 s", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling the server
	}
	if err := th.QueryRow(ctx, sel, 0).Scan(&n); err != nil {
		t.Fatalf("after the connection was ended: %v", err)
	}
	after := postgres.ThreadStats(x.be, 0)
	if npid := postgres.ThreadPID(x.be, 0); npid == pid || after.Prepared != 2 || after.Fast != 2 {
		t.Errorf("pid %d → %d, %+v; want a new connection, the statement prepared again, 2 fast", pid, npid, after)
	}
}

// Commits on a thread: queued statements pipelined with the COMMIT, row
// counts checked before it, and rolled back when one does not hold or a
// statement fails.
func TestFastPathCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := setup(t, 1, "CREATE TABLE c (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
	th := x.db.Thread(0)
	ins := x.q.Stmt("INSERT INTO c (id, n) VALUES (?, ?)")
	inc := x.q.Stmt("UPDATE c SET n = n + 1 WHERE id = ?")
	count := x.q.Stmt("SELECT COUNT(*) FROM c")
	if err := th.InTx(ctx, func(tx *store.Tx) error {
		tx.Queue(ins, 1, 0)
		tx.Queue(ins, 2, 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if st := postgres.ThreadStats(x.be, 0); st.Fast != 2 || st.Fallback != 0 {
		t.Errorf("pipelined commit: %+v; want its 2 statements fast", st)
	}
	// A count that does not hold: ErrStale, and nothing of the transaction.
	err := th.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, inc, 1); err != nil {
			return err
		}
		tx.Queue(ins, 3, 0)
		tx.QueueExpect(inc, 1, 2)  // holds
		tx.QueueExpect(inc, 1, 99) // no such row
		return nil
	})
	if !errors.Is(err, store.ErrStale) {
		t.Fatalf("commit with a stale count: %v, want ErrStale", err)
	}
	if n := x.q.IntOf(count); n != 2 {
		t.Errorf("%d rows, want 2: the queued insert must have rolled back", n)
	}
	if n := x.q.Int("SELECT SUM(n) FROM c"); n != 0 {
		t.Errorf("sum %d, want 0: the increments must have rolled back", n)
	}
	// A queued statement that fails: its error, and a rollback.
	err = th.InTx(ctx, func(tx *store.Tx) error {
		tx.Queue(inc, 1)
		tx.Queue(ins, 1, 0) // duplicate key
		return nil
	})
	if !errors.Is(err, store.ErrUniqueViolation) {
		t.Fatalf("commit with a duplicate key: %v, want ErrUniqueViolation", err)
	}
	if n := x.q.Int("SELECT SUM(n) FROM c"); n != 0 {
		t.Errorf("sum %d, want 0: the increment must have rolled back", n)
	}
	// Counts that hold, then a commit of its own.
	if err := th.InTx(ctx, func(tx *store.Tx) error {
		tx.QueueExpect(inc, 1, 1)
		tx.QueueExpect(inc, 1, 2)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := x.q.Int("SELECT SUM(n) FROM c"); n != 2 {
		t.Errorf("sum %d, want 2", n)
	}
	// An argument the codec does not encode sends the whole batch through
	// pgx.
	if err := th.InTx(ctx, func(tx *store.Tx) error {
		tx.Queue(ins, 4, 0)
		tx.Queue(ins, uint16(5), 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := x.q.IntOf(count); n != 4 {
		t.Errorf("%d rows, want 4", n)
	}
	st := postgres.ThreadStats(x.be, 0)
	if st.Fallback != 2 || st.Fast != 2+1+3+2+2 {
		t.Errorf("%+v; want 10 fast, the last batch's 2 through pgx", st)
	}
	if s := x.db.Stats(); s.Commits != 3 || s.Rollbacks != 2 {
		t.Errorf("%d commits, %d rollbacks; want 3, 2", s.Commits, s.Rollbacks)
	}
}

// The fast path allocates less than pgx for the same statement on the
// same connection. The connection is plain TCP: over TLS, crypto/tls
// grows its record buffer as the bytes happen to arrive, one allocation
// more on a loaded machine (CI's) and none here, which says nothing of
// either path.
func TestFastPathAllocatesLess(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(storetest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	x := setupOn(t, u.String(), 2, "CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT NOT NULL, n BIGINT NOT NULL)")
	x.q.Exec("INSERT INTO kv (k, v, n) VALUES (1, 'one', 10)")
	sel := x.q.Stmt("SELECT v, n FROM kv WHERE k = ?")
	allocs := func(th *store.Session) float64 {
		var v string
		var n int64
		dest := []any{&v, &n}
		args := []any{int64(1)}
		return testing.AllocsPerRun(200, func() {
			if err := th.QueryRow(ctx, sel, args...).Scan(dest...); err != nil {
				t.Fatal(err)
			}
		})
	}
	fast := allocs(x.db.Thread(0))
	postgres.UsePgx(x.be)
	slow := allocs(x.db.Thread(1))
	t.Logf("allocations per primary-key select: fast path %.0f, pgx %.0f", fast, slow)
	// pgconn's command tag and the scanned string.
	if (fast > 2 && !raceEnabled) || fast >= slow {
		t.Errorf("fast path %.0f allocations, pgx %.0f; want at most 2 and fewer than pgx", fast, slow)
	}
}
