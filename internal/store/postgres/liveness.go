package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// sockState is what a look at an idle connection's socket found.
type sockState int

const (
	sockUnknown sockState = iota // cannot tell: assume it works
	sockIdle                     // open, nothing to read: as it should be
	sockPending                  // open, with something to read
	sockClosed                   // the server closed it, or it was reset
)

// errServerClosed: the server closed the connection while it sat idle
// (it was killed or restarted, or ended the session).
var errServerClosed = fmt.Errorf("the server closed the connection: %w", io.EOF)

// usable reports whether an idle connection still reaches its server,
// without a round trip, so that a connection the server closed while it
// was idle (a restart, a crash) is replaced before a statement is sent on
// it, rather than failing the statement. A connection found dead is
// closed, so that the pool discards it on release.
func usable(c *pgx.Conn) error {
	if c.IsClosed() {
		return errServerClosed
	}
	switch peek(c.PgConn()) {
	case sockClosed:
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c.Close(ctx)
		return errServerClosed
	case sockPending:
		// An idle connection has nothing to read unless the server sent
		// a notice, or the error that ended the session before closing
		// it (an administrator's shutdown, an idle timeout). CheckConn
		// reads what is there: pgconn closes the connection on a FATAL
		// error. (It is deprecated in favour of Ping, a round trip.)
		if err := c.PgConn().CheckConn(); err != nil || c.IsClosed() {
			return errors.Join(errServerClosed, err)
		}
	}
	return nil
}

// peekKey is where a connection keeps its peeker, in the CustomData pgconn
// holds for its user.
const peekKey = "tierbench.peeker"

// peek looks at pc's socket (peeker).
func peek(pc *pgconn.PgConn) sockState {
	data := pc.CustomData()
	p, ok := data[peekKey].(*peeker)
	if !ok {
		p = newPeeker(pc.Conn())
		data[peekKey] = p
	}
	return p.peek()
}
