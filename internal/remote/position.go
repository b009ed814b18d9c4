package remote

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/tierbench/tierbench/internal/store"
)

// A call carries its caller's commit position across the tier boundary
// (decision 0045), as RUBiS's browsers carry theirs from page to page in
// a cookie (decision 0038): the position of the store.Terminal in the
// call's context goes with the request, when it has one past 0, and a
// tier whose database has read replicas (ServerOptions.Positions) runs
// the call with a terminal at that position, so that its reads on a
// replica are checked for read-your-writes or, under causal reads, wait;
// when the call's writes move the position, the new one comes back with
// the reply and the caller's terminal advances to it. It travels in the
// call's metadata, never in a method's arguments: a gRPC header and
// trailer, an HTTP request and response header, a field of the lean
// protocol's frames. A call whose context carries no terminal sends
// nothing and ignores what comes back.

// positionKey carries a position as PostgreSQL prints an LSN
// (store.FormatLSN): a gRPC metadata key (request header, reply
// trailer) and an HTTP header, both ways.
const positionKey = "tierbench-lsn"

// parsePosition reads a position a call's metadata carried; one that
// does not parse is none (0), as a garbled cookie is.
func parsePosition(v string) uint64 {
	at, err := store.ParseLSN(v)
	if err != nil {
		return 0
	}
	return at
}

// carriedPosition is the position of ctx's terminal, and the terminal
// (nil, 0 when ctx has none).
func carriedPosition(ctx context.Context) (*store.Terminal, uint64) {
	t := store.TerminalOf(ctx)
	if t == nil {
		return nil, 0
	}
	return t, t.Position()
}

// callTerminal is ctx with a terminal at from, the position the call
// carried, for the tier's transactions; returned gives what to send back.
func callTerminal(ctx context.Context, from uint64) (context.Context, *store.Terminal) {
	t := new(store.Terminal)
	t.Advance(from)
	return store.WithTerminal(ctx, t), t
}

// returned is the position a call sends back: its terminal's, when the
// call's writes moved it past from; 0 (nothing) otherwise.
func returned(t *store.Terminal, from uint64) uint64 {
	if at := t.Position(); at > from {
		return at
	}
	return 0
}

// carryPosition is the gRPC server's interceptor on a tier with
// positions: the call runs with the terminal its header carried, and a
// position it moved goes back in the trailer.
func carryPosition(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var from uint64
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(positionKey); len(v) == 1 {
			from = parsePosition(v[0])
		}
	}
	ctx, t := callTerminal(ctx, from)
	resp, err := handler(ctx, req)
	if at := returned(t, from); at > 0 {
		grpc.SetTrailer(ctx, metadata.Pairs(positionKey, store.FormatLSN(at)))
	}
	return resp, err
}
