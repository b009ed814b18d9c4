package postgres

import "github.com/tierbench/tierbench/internal/store"

// FastStats counts what a server thread's statements did: ran through
// pgconn (Fast) or pgx (Fallback), and how many it prepared.
type FastStats struct{ Fast, Fallback, Prepared int }

// ThreadStats is thread i's FastStats; read it only between the thread's
// statements.
func ThreadStats(b store.Backend, i int) FastStats {
	f := b.(*Backend).threads[i].f
	return FastStats{Fast: f.fast, Fallback: f.fallback, Prepared: f.prepared}
}

// ThreadPID is the server process of thread i's connection, 0 before its
// first statement.
func ThreadPID(b store.Backend, i int) uint32 {
	t := b.(*Backend).threads[i]
	if t.c == nil {
		return 0
	}
	return t.c.Conn().PgConn().PID()
}

// UsePgx makes every server thread run its statements through pgx, the
// path before the fast one: the baseline of the benchmarks.
func UsePgx(b store.Backend) {
	for _, t := range b.(*Backend).threads {
		t.f = nil
	}
}
