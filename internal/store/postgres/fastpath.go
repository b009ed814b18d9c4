package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tierbench/tierbench/internal/store"
)

// fastPath runs a server thread's statements on its pinned connection
// through pgconn, pgx's lower layer, sparing each the Conn's argument
// planning, row and type-map work (about a microsecond of client CPU a
// round trip). It encodes and decodes the types the workloads use itself
// (codec.go); a statement with an argument it cannot encode runs through
// pgx instead, and a column it cannot decode is decoded by pgx's type map,
// so behaviour never differs, only cost. It belongs to one thread.
type fastPath struct {
	id int // the thread's, in statement names
	// pc is the connection stmts were prepared on: a replaced
	// connection has none of them.
	pc    *pgconn.PgConn
	stmts map[string]*fastStmt
	seq   int

	// Reused by every statement: the encoded arguments and their slices.
	buf    []byte
	ends   []int
	values [][]byte

	row  fastRow
	rows fastRows

	// What ran how, for tests.
	fast, fallback, prepared int
}

func newFastPath(id int) *fastPath {
	f := &fastPath{id: id, stmts: make(map[string]*fastStmt), buf: make([]byte, 0, 256)}
	f.row.f = f
	f.rows.f = f
	return f
}

// fastStmt is a statement prepared on the thread's connection.
type fastStmt struct {
	desc          *pgconn.StatementDescription
	params        []kind
	paramFormats  []int16
	fields        []kind
	resultFormats []int16
}

// stmt is sql's statement on c, prepared on first use.
func (f *fastPath) stmt(ctx context.Context, c *pgx.Conn, sql string) (*fastStmt, error) {
	pc := c.PgConn()
	if pc != f.pc {
		clear(f.stmts)
		f.pc = pc
	}
	if st, ok := f.stmts[sql]; ok {
		return st, nil
	}
	// Names are never reused, so that a name cannot meet one prepared
	// earlier on the same connection whatever happened since.
	f.seq++
	name := "tierbench_" + strconv.Itoa(f.id) + "_" + strconv.Itoa(f.seq)
	desc, err := pc.Prepare(ctx, name, sql, nil)
	if err != nil {
		return nil, err
	}
	f.prepared++
	st := &fastStmt{desc: desc}
	for _, oid := range desc.ParamOIDs {
		k := kindOf(oid)
		st.params = append(st.params, k)
		st.paramFormats = append(st.paramFormats, k.format())
	}
	for _, fd := range desc.Fields {
		k := kindOf(fd.DataTypeOID)
		st.fields = append(st.fields, k)
		st.resultFormats = append(st.resultFormats, k.format())
	}
	f.stmts[sql] = st
	return st, nil
}

// forget drops sql's statement after an error that says the server's
// copy is gone or no longer matches its description (a table altered
// since): the next use prepares it again.
func (f *fastPath) forget(sql string, err error) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "0A000" || pe.Code == "26000") {
		delete(f.stmts, sql)
	}
}

// encode puts args into f.values, reporting false when one is of a type
// it does not encode for its parameter.
func (f *fastPath) encode(st *fastStmt, args []any) bool {
	if len(args) != len(st.params) {
		return false // pgx reports the mismatch
	}
	f.buf = f.buf[:0]
	f.ends = f.ends[:0]
	for i, a := range args {
		var null, ok bool
		f.buf, null, ok = appendParam(f.buf, st.params[i], a)
		if !ok {
			return false
		}
		end := len(f.buf)
		if null {
			end = -1
		}
		f.ends = append(f.ends, end)
	}
	// Sliced only now: appending may have moved buf. f.buf is never nil,
	// so an empty value is an empty slice, not a NULL.
	f.values = f.values[:0]
	start := 0
	for _, end := range f.ends {
		if end < 0 {
			f.values = append(f.values, nil)
			continue
		}
		f.values = append(f.values, f.buf[start:end:end])
		start = end
	}
	return true
}

// scan decodes a row into dest as pgx's Rows.Scan does, with its errors.
func (f *fastPath) scan(c *pgx.Conn, st *fastStmt, values [][]byte, dest []any) error {
	if len(st.fields) != len(values) {
		return fmt.Errorf("number of field descriptions must equal number of values, got %d and %d", len(st.fields), len(values))
	}
	if len(st.fields) != len(dest) {
		return fmt.Errorf("number of field descriptions must equal number of destinations, got %d and %d", len(st.fields), len(dest))
	}
	for i, d := range dest {
		if d == nil || decode(st.fields[i], values[i], d) {
			continue
		}
		fd := &st.desc.Fields[i]
		if err := c.TypeMap().Scan(fd.DataTypeOID, st.resultFormats[i], values[i], d); err != nil {
			return pgx.ScanArgError{ColumnIndex: i, FieldName: fd.Name, Err: err}
		}
	}
	return nil
}

// pgxOnly reports a destination that pgx hands the whole row rather than
// a column.
func pgxOnly(dest []any) bool {
	if len(dest) != 1 {
		return false
	}
	switch dest[0].(type) {
	case pgx.RowScanner:
		return true
	}
	return false
}

func (f *fastPath) exec(ctx context.Context, c *pgx.Conn, sql string, args []any) (store.Result, error) {
	st, err := f.stmt(ctx, c, sql)
	if err != nil {
		return store.Result{}, errNotSent{err}
	}
	if !f.encode(st, args) {
		f.fallback++
		tag, err := c.Exec(ctx, sql, args...)
		return store.Result{RowsAffected: tag.RowsAffected()}, err
	}
	f.fast++
	tag, err := c.PgConn().ExecStatement(ctx, st.desc, f.values, st.paramFormats, st.resultFormats).Close()
	if err != nil {
		f.forget(sql, err)
	}
	return store.Result{RowsAffected: tag.RowsAffected()}, err
}

// queryRow defers the statement to Scan, which knows the destinations,
// as pgx defers reading its answer.
func (f *fastPath) queryRow(ctx context.Context, c *pgx.Conn, sql string, args []any) store.Scanner {
	f.row = fastRow{f: f, ctx: ctx, c: c, sql: sql, args: args}
	return &f.row
}

// fastRow is the thread's single-row result; a thread reads each before
// it runs another statement, so one is enough.
type fastRow struct {
	f    *fastPath
	ctx  context.Context
	c    *pgx.Conn
	sql  string
	args []any
}

func (r *fastRow) Scan(dest ...any) error {
	f, c := r.f, r.c
	st, err := f.stmt(r.ctx, c, r.sql)
	if err != nil {
		return errNotSent{err}
	}
	if pgxOnly(dest) || !f.encode(st, r.args) {
		f.fallback++
		return c.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	}
	f.fast++
	rr := c.PgConn().ExecStatement(r.ctx, st.desc, f.values, st.paramFormats, st.resultFormats)
	found := rr.NextRow()
	var scanErr error
	if found {
		scanErr = f.scan(c, st, rr.Values(), dest)
	}
	_, err = rr.Close()
	if err != nil {
		f.forget(r.sql, err)
	}
	switch {
	case scanErr != nil:
		return scanErr
	case err != nil:
		return err
	case !found:
		return pgx.ErrNoRows // classified as store.ErrNotFound
	}
	return nil
}

func (f *fastPath) query(ctx context.Context, c *pgx.Conn, sql string, args []any) (store.BackendRows, error) {
	st, err := f.stmt(ctx, c, sql)
	if err != nil {
		return nil, err
	}
	if !f.encode(st, args) {
		f.fallback++
		return query(c.Query(ctx, sql, args...))
	}
	f.fast++
	f.rows = fastRows{
		f: f, c: c, st: st, sql: sql,
		rr: c.PgConn().ExecStatement(ctx, st.desc, f.values, st.paramFormats, st.resultFormats),
	}
	return &f.rows, nil
}

// fastRows is the thread's multi-row result, read to its end or closed
// before the thread's next statement, like pgx's Rows.
type fastRows struct {
	f      *fastPath
	c      *pgx.Conn
	st     *fastStmt
	sql    string
	rr     *pgconn.ResultReader
	err    error
	closed bool
}

func (r *fastRows) Next() bool {
	if r.closed {
		return false
	}
	if r.rr.NextRow() {
		return true
	}
	r.Close()
	return false
}

func (r *fastRows) Scan(dest ...any) error {
	var err error
	if pgxOnly(dest) {
		err = errors.New("postgres: a whole-row scanner on a thread's multi-row query")
	} else {
		err = r.f.scan(r.c, r.st, r.rr.Values(), dest)
	}
	if err != nil {
		// As pgx does: a failed scan ends the rows with its error.
		if r.err == nil {
			r.err = err
		}
		r.Close()
	}
	return err
}

func (r *fastRows) Err() error { return r.err }

func (r *fastRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	if _, err := r.rr.Close(); err != nil {
		r.f.forget(r.sql, err)
		if r.err == nil {
			r.err = err
		}
	}
}

// run runs a transaction's own statement (BEGIN, COMMIT, ROLLBACK),
// prepared like the others. Not in the simple protocol, as pgx's Exec
// sends a statement without arguments: pgconn reads the simple protocol's
// answer through a MultiResultReader, which loses the error of a broken
// connection (errLostAfterSend), and a COMMIT must tell that apart from
// one never sent. A failure to prepare is errNotSent: nothing of the
// statement went out.
func (f *fastPath) run(ctx context.Context, c *pgx.Conn, sql string) error {
	st, err := f.stmt(ctx, c, sql)
	if err != nil {
		return errNotSent{err}
	}
	_, err = c.PgConn().ExecStatement(ctx, st.desc, nil, nil, nil).Close()
	return err
}

// errNotSent is a commit that failed before any of it went out (preparing
// its statements): not in doubt, whatever the cause.
type errNotSent struct{ err error }

func (e errNotSent) Error() string { return e.err.Error() }
func (e errNotSent) Unwrap() error { return e.err }

// batch is tx.batch through pgconn: [BEGIN,] the queued statements [,
// COMMIT] in one ExecBatch, one write and one Sync, as pgx sends them. It
// reports sent false, having sent nothing, when a queued statement has an
// argument the codec does not encode: the whole batch then goes through
// pgx.
func (f *fastPath) batch(ctx context.Context, t *tx, queued []store.Queued, commit bool) (sent bool, err error) {
	c := t.c
	// pgconn.Batch cannot be emptied for reuse: a commit allocates its
	// buffer and queues (a handful of allocations, against pgx's dozens).
	var b pgconn.Batch
	if !t.began {
		if err := f.batchNoArgs(ctx, c, &b, "begin"); err != nil {
			return true, err
		}
	}
	for _, q := range queued {
		st, err := f.stmt(ctx, c, q.P.(string))
		if err != nil {
			return true, errNotSent{err}
		}
		if !f.encode(st, q.Args) {
			f.fallback += len(queued)
			return false, nil
		}
		// The Bind is encoded now, so f.values may be reused next.
		b.ExecStatement(st.desc, f.values, st.paramFormats, st.resultFormats)
	}
	if commit {
		if err := f.batchNoArgs(ctx, c, &b, "commit"); err != nil {
			return true, err
		}
	}
	f.fast += len(queued)
	pc := c.PgConn()
	// Whether ExecBatch will send: it can only fail to lock a connection
	// that is closed or busy, or find ctx done (see sentLost).
	sending := !pc.IsClosed() && !pc.IsBusy() && ctx.Err() == nil
	mrr := pc.ExecBatch(ctx, &b)
	err = func() error {
		if !t.began {
			if err := nextResult(mrr); err != nil {
				return err
			}
			t.began = true
		}
		for _, q := range queued {
			if !mrr.NextResult() {
				if err := mrr.Close(); err != nil {
					f.forget(q.P.(string), err)
					return err
				}
				return errors.New("postgres: batch ended before its statements")
			}
			tag, err := mrr.ResultReader().Close()
			if err != nil {
				return err
			}
			if err := q.Check(store.Result{RowsAffected: tag.RowsAffected()}); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := mrr.Close(); err == nil {
		err = cerr
	}
	if sending {
		err = sentLost(err)
	}
	return true, err
}

// errLostAfterSend is a connection found broken while a batch's answers
// were read. pgconn's MultiResultReader drops the read's own error there
// (NextResult ignores the error of its peek, which closes the connection)
// and reports instead that the connection is closed, an error it deems
// safe to retry, as if nothing had been sent. The batch had gone out: its
// COMMIT may have been carried out.
type errLostAfterSend struct{ err error }

func (e errLostAfterSend) Error() string {
	return "the connection broke while the batch's answers were read: " + e.err.Error()
}
func (e errLostAfterSend) Unwrap() error     { return e.err }
func (e errLostAfterSend) SafeToRetry() bool { return false }

// sentLost corrects the error of a batch that was sent: one safe to retry
// (nothing sent) can only be pgconn's closed connection (errLostAfterSend).
func sentLost(err error) error {
	if err == nil || !pgconn.SafeToRetry(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return errLostAfterSend{err}
}

// batchNoArgs queues a transaction's own statement, prepared like the
// others so that the batch's every entry is a Bind.
func (f *fastPath) batchNoArgs(ctx context.Context, c *pgx.Conn, b *pgconn.Batch, sql string) error {
	st, err := f.stmt(ctx, c, sql)
	if err != nil {
		return errNotSent{err}
	}
	b.ExecStatement(st.desc, nil, nil, nil)
	return nil
}

// nextResult reads a result that must be there and carries no rows.
func nextResult(mrr *pgconn.MultiResultReader) error {
	if !mrr.NextResult() {
		if err := mrr.Close(); err != nil {
			return err
		}
		return errors.New("postgres: batch ended early")
	}
	_, err := mrr.ResultReader().Close()
	return err
}
