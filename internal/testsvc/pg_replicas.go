package testsvc

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// PGCluster is a private PostgreSQL primary with hot standbys fed by
// streaming replication, on loopback, as deploy/local/pg-replicas starts
// one, but in a temporary directory and on free ports. Database test
// exists on the primary (and so on the standbys).
type PGCluster struct {
	Primary  *PG
	Standbys []*PG
}

// PGReplicas initialises a primary (Postgres's settings; PostgreSQL's
// defaults, wal_level replica and 10 WAL senders, stream), creates database test on it, and makes n standbys by
// pg_basebackup -R (streaming, hot_standby_feedback on so that replay
// does not cancel their reads, each named standbyI in the primary's
// pg_stat_replication), each waited for until it serves reads in recovery.
// Every server runs as OS user postgres when the test runs as root and is
// killed by PID when the test ends. Without PostgreSQL's binaries the
// test skips.
func PGReplicas(t testing.TB, n int) *PGCluster {
	t.Helper()
	primary := Postgres(t)
	primary.Exec(t, "CREATE DATABASE test")
	c := &PGCluster{Primary: primary}
	for i := 1; i <= n; i++ {
		c.Standbys = append(c.Standbys, c.standby(t, i))
	}
	return c
}

// standby makes and starts standby i of c's primary.
func (c *PGCluster) standby(t testing.TB, i int) *PG {
	t.Helper()
	p := c.Primary
	name := fmt.Sprintf("standby%d", i)
	dir := serverDir(t, "tierbench-pg-"+name+"-", p.cred)
	s := &PG{bin: p.bin, data: filepath.Join(dir, "data")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runTool(ctx, dir, p.cred, filepath.Join(p.bin, "pg_basebackup"),
		"-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", p.port, name),
		"-D", s.data, "-R", "-X", "stream", "-c", "fast", "--no-sync")
	if err != nil {
		t.Fatalf("testsvc: pg_basebackup of %s: %v\n%s", name, err, out)
	}
	s.server = pgServer(t, s, dir, p.cred, name, "-c", "hot_standby=on", "-c", "hot_standby_feedback=on")
	ready := s.server.ready
	s.server.ready = func(ctx context.Context) error {
		if err := ready(ctx); err != nil {
			return err
		}
		// Streaming: the primary lists it.
		v, err := p.exec(ctx, "SELECT count(*) > 0 FROM pg_stat_replication WHERE application_name = '"+name+"' AND state = 'streaming'")
		if err == nil && v != "t" {
			err = fmt.Errorf("%s not streaming yet", name)
		}
		return err
	}
	s.startFirst(func() { s.port = FreePort(t) })
	return s
}

// exec runs sql on pg's postgres database and returns the first column
// of its first row ("" when none).
func (pg *PG) exec(ctx context.Context, sql string) (string, error) {
	c, err := pgconn.Connect(ctx, pg.DSN())
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	r, err := c.Exec(ctx, sql).ReadAll()
	if err != nil {
		return "", err
	}
	if len(r) == 0 || len(r[0].Rows) == 0 || len(r[0].Rows[0]) == 0 {
		return "", nil
	}
	return string(r[0].Rows[0][0]), nil
}

// Exec runs sql on the server's postgres database as user postgres and
// returns the first column of its first row, if any ("" when none):
// pg_wal_replay_pause() on a standby, say.
func (pg *PG) Exec(t testing.TB, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := pg.exec(ctx, sql)
	if err != nil {
		t.Fatalf("testsvc: %s: %v", sql, err)
	}
	return v
}
