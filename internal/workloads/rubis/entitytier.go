package rubis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workloads/rubis/rubispb"
)

// The entity style (--style entity): the entity beans live on the business
// tier, and the web tier's Facade (NewRemoteEntityFacade) reaches them
// through the Entities service of rubispb, field by field, as an EJB 1.1
// web tier reached entity beans through their remote interfaces: each finder, each
// getter and setter, each create and remove is one remote call, and so are
// Begin, Commit and Rollback (a servlet's UserTransaction). The business
// tier answers with its container (ServeEntities).

// entityIdle is how long a transaction may go without a call before the
// business tier rolls it back and takes its thread back. A web tier makes
// a transaction's calls one after the other with nothing but its own code
// in between, microseconds; a transaction idle this long has a caller that
// went away (stopped, killed, cut off) and would otherwise keep its server
// thread and its locks for ever. The rule is the same for both protocols:
// the end of the caller's connection is not one (HTTP calls of one
// transaction go over whichever pooled connection is free).
const entityIdle = 10 * time.Second

// EntityTier is the business tier of the entity style: it answers the
// Entities service with a container, field by field, for a web tier whose
// Facade navigates the beans remotely. A transaction holds one of the
// tier's server threads from Begin to Commit or Rollback.
type EntityTier struct {
	rubispb.UnimplementedEntitiesServer
	ctr     *container.Container
	homes   map[string]*container.Home
	threads *remote.Threads
	idle    time.Duration

	mu     sync.Mutex
	last   int64 // the last transaction id given
	open   map[int64]*openTx
	closed bool
}

// openTx is a transaction between its Begin and its end; its mutex makes
// its calls one at a time, and keeps the reaper out while one runs.
type openTx struct {
	mu     sync.Mutex
	id     int64
	tx     *container.Tx
	thread int
	cancel context.CancelFunc
	// refs are the beans the transaction's calls found or created, by
	// handle (their index).
	refs  []*container.Instance
	used  time.Time // the end of its last call
	timer *time.Timer
	ended bool
	// position is the terminal the Begin call carried (nil: none), which
	// the transaction runs with; its Commit call carries the position
	// the commit moved it to back to the caller.
	position *store.Terminal
}

// ServeEntities registers on s the Entities service answered by ctr, a
// container of RUBiS's entity types, with threads server threads (see
// remote.Threads). A transaction idle for entityIdle is rolled back. Close
// the result when the server has stopped: it rolls back what is still
// open.
func ServeEntities(s grpc.ServiceRegistrar, ctr *container.Container, threads int) *EntityTier {
	return serveEntities(s, ctr, threads, entityIdle)
}

func serveEntities(s grpc.ServiceRegistrar, ctr *container.Container, threads int, idle time.Duration) *EntityTier {
	e := &EntityTier{ctr: ctr, homes: make(map[string]*container.Home), threads: remote.NewThreads(threads), idle: idle,
		open: make(map[int64]*openTx)}
	for _, h := range ctr.Homes() {
		e.homes[h.Type().Name] = h
	}
	rubispb.RegisterEntitiesServer(s, e)
	return e
}

// Open is the number of transactions open: each holds a server thread.
func (e *EntityTier) Open() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.open)
}

// Close rolls back every open transaction; a later Begin is refused.
func (e *EntityTier) Close() {
	e.mu.Lock()
	e.closed = true
	open := make([]*openTx, 0, len(e.open))
	for _, o := range e.open {
		open = append(open, o)
	}
	e.mu.Unlock()
	for _, o := range open {
		o.mu.Lock()
		e.end(o, false)
		o.mu.Unlock()
	}
}

func (e *EntityTier) Begin(ctx context.Context, r *rubispb.BeginRequest) (*rubispb.BeginReply, error) {
	thread, err := e.threads.Take(ctx)
	if err != nil {
		return nil, err
	}
	// The transaction outlives this call: its statements run under a
	// context of its own, ended with it, with the caller's commit
	// position (remote.ServerOptions.Positions) for its reads on a
	// replica and its commit's.
	txCtx := context.Background()
	position := store.TerminalOf(ctx)
	if position != nil {
		txCtx = store.WithTerminal(txCtx, position)
	}
	txCtx, cancel := context.WithCancel(txCtx)
	begin := e.ctr.Begin
	if r.GetReadOnly() {
		begin = e.ctr.BeginReadOnly
	}
	tx, err := begin(txCtx, thread)
	if err != nil {
		cancel()
		e.threads.Give(thread)
		return nil, entityStatus(err)
	}
	o := &openTx{tx: tx, thread: thread, cancel: cancel, used: time.Now(), position: position}
	o.mu.Lock()
	defer o.mu.Unlock()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		o.ended = true
		tx.Rollback()
		cancel()
		e.threads.Give(thread)
		return nil, status.Error(codes.Unavailable, "the business tier is stopping")
	}
	e.last++
	o.id = e.last
	e.open[o.id] = o
	e.mu.Unlock()
	o.timer = time.AfterFunc(e.idle, func() { e.reap(o) })
	return &rubispb.BeginReply{Tx: o.id}, nil
}

// reap rolls o back if it has been idle for e.idle, else looks again when
// it will have been.
func (e *EntityTier) reap(o *openTx) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended {
		return
	}
	if left := e.idle - time.Since(o.used); left > 0 {
		o.timer.Reset(left)
		return
	}
	e.end(o, false)
}

// end commits or rolls back o, forgets it and gives its thread back; o.mu
// is held.
func (e *EntityTier) end(o *openTx, commit bool) error {
	if o.ended {
		return nil
	}
	o.ended = true
	if o.timer != nil {
		o.timer.Stop()
	}
	e.mu.Lock()
	delete(e.open, o.id)
	e.mu.Unlock()
	var err error
	if commit {
		err = o.tx.Commit()
	} else {
		o.tx.Rollback()
	}
	o.cancel()
	o.refs = nil
	e.threads.Give(o.thread)
	return err
}

// with runs fn on the open transaction id, as one call.
func (e *EntityTier) with(id int64, fn func(o *openTx) error) error {
	e.mu.Lock()
	o := e.open[id]
	e.mu.Unlock()
	if o == nil {
		return e.notOpen(id)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended {
		return e.notOpen(id)
	}
	err := fn(o)
	o.used = time.Now()
	return entityStatus(err)
}

// notOpen: the transaction ended (a call after its end, or the reaper
// rolled it back). Nothing of it was committed, so the caller may run it
// again: Aborted.
func (e *EntityTier) notOpen(id int64) error {
	// A serialization failure to the caller: its transaction was rolled
	// back under it, and running it again is what it should do.
	return remote.FailureStatus(store.Classified(store.ErrSerialization,
		fmt.Errorf("transaction %d is not open: ended, or rolled back after %v without a call", id, e.idle)))
}

// entityStatus is the status err crosses the layer as: ErrNotFound as
// NotFound, a status as itself, anything else as remote.FailureStatus.
func entityStatus(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, container.ErrNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return remote.FailureStatus(err)
}

func (e *EntityTier) home(name string) (*container.Home, error) {
	h := e.homes[name]
	if h == nil {
		return nil, status.Errorf(codes.InvalidArgument, "no entity type %q", name)
	}
	return h, nil
}

// add gives i a handle in o.
func (o *openTx) add(i *container.Instance) *rubispb.Ref {
	o.refs = append(o.refs, i)
	return &rubispb.Ref{Ref: int64(len(o.refs) - 1), Key: keyToPB(i.Key())}
}

// field is the bean of handle ref and the kind of its field f.
func (o *openTx) field(ref int64, f int32) (*container.Instance, container.Kind, error) {
	if ref < 0 || ref >= int64(len(o.refs)) {
		return nil, 0, status.Errorf(codes.InvalidArgument, "transaction %d has no bean %d", o.id, ref)
	}
	t := o.refs[ref].Type()
	if f < 0 || int(f) >= len(t.Fields) {
		return nil, 0, status.Errorf(codes.InvalidArgument, "%s has no field %d", t.Name, f)
	}
	return o.refs[ref], t.Fields[f].Kind, nil
}

func (e *EntityTier) Commit(ctx context.Context, r *rubispb.TxRequest) (*rubispb.TxReply, error) {
	err := e.with(r.GetTx(), func(o *openTx) error {
		err := e.end(o, true)
		if t := store.TerminalOf(ctx); t != nil && o.position != nil {
			t.Advance(o.position.Position())
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &rubispb.TxReply{}, nil
}

func (e *EntityTier) Rollback(_ context.Context, r *rubispb.TxRequest) (*rubispb.TxReply, error) {
	err := e.with(r.GetTx(), func(o *openTx) error { return e.end(o, false) })
	if err != nil {
		return nil, err
	}
	return &rubispb.TxReply{}, nil
}

func (e *EntityTier) Find(_ context.Context, r *rubispb.FindRequest) (*rubispb.Ref, error) {
	h, err := e.home(r.GetType())
	if err != nil {
		return nil, err
	}
	var ref *rubispb.Ref
	err = e.with(r.GetTx(), func(o *openTx) error {
		i, err := o.tx.Find(h, keyFromPB(r.GetKey()))
		if err != nil {
			return err
		}
		ref = o.add(i)
		return nil
	})
	return ref, err
}

func (e *EntityTier) FindBy(_ context.Context, r *rubispb.FindByRequest) (*rubispb.Refs, error) {
	h, err := e.home(r.GetType())
	if err != nil {
		return nil, err
	}
	args := make([]any, len(r.GetArgs()))
	for n, v := range r.GetArgs() {
		if args[n], err = valueFromPB(v); err != nil {
			return nil, err
		}
	}
	refs := &rubispb.Refs{}
	err = e.with(r.GetTx(), func(o *openTx) error {
		found, err := o.tx.FindMany(h, r.GetFinder(), nil, args...)
		if err != nil {
			return err
		}
		for _, i := range found {
			refs.Refs = append(refs.Refs, o.add(i))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

func (e *EntityTier) Create(_ context.Context, r *rubispb.CreateRequest) (*rubispb.Ref, error) {
	h, err := e.home(r.GetType())
	if err != nil {
		return nil, err
	}
	var ref *rubispb.Ref
	err = e.with(r.GetTx(), func(o *openTx) error {
		i, err := o.tx.Create(h, keyFromPB(r.GetKey()))
		if err != nil {
			return err
		}
		ref = o.add(i)
		return nil
	})
	return ref, err
}

func (e *EntityTier) Get(_ context.Context, r *rubispb.RefRequest) (*rubispb.Value, error) {
	var v *rubispb.Value
	err := e.with(r.GetTx(), func(o *openTx) error {
		i, kind, err := o.field(r.GetRef(), r.GetField())
		if err != nil {
			return err
		}
		f := int(r.GetField())
		switch kind {
		case container.Float:
			v = floatValue(i.Float(f))
		case container.String:
			v = stringValue(i.String(f))
		case container.Time:
			v = timeValue(i.Time(f))
		default:
			v = intValue(i.Int(f))
		}
		return nil
	})
	return v, err
}

func (e *EntityTier) Set(_ context.Context, r *rubispb.SetRequest) (*rubispb.TxReply, error) {
	err := e.with(r.GetTx(), func(o *openTx) error {
		i, kind, err := o.field(r.GetRef(), r.GetField())
		if err != nil {
			return err
		}
		f := int(r.GetField())
		switch v := r.GetValue().GetKind().(type) {
		case *rubispb.Value_Int:
			if kind == container.Int {
				i.SetInt(f, v.Int)
				return nil
			}
		case *rubispb.Value_Float:
			if kind == container.Float {
				i.SetFloat(f, v.Float)
				return nil
			}
		case *rubispb.Value_String_:
			if kind == container.String {
				i.SetString(f, v.String_)
				return nil
			}
		case *rubispb.Value_Time:
			if kind == container.Time {
				i.SetTime(f, v.Time.AsTime())
				return nil
			}
		}
		return status.Errorf(codes.InvalidArgument, "field %d of %s: a value of another kind", f, o.refs[r.GetRef()].Type().Name)
	})
	if err != nil {
		return nil, err
	}
	return &rubispb.TxReply{}, nil
}

func keyToPB(k container.Key) *rubispb.Key { return &rubispb.Key{A: k.A, B: k.B, S: k.S} }
func keyFromPB(p *rubispb.Key) container.Key {
	return container.Key{A: p.GetA(), B: p.GetB(), S: p.GetS()}
}

// A field's or a finder argument's value, of each kind the container
// has. A time is always present (the zero time too, as year 1).
func intValue(v int64) *rubispb.Value { return &rubispb.Value{Kind: &rubispb.Value_Int{Int: v}} }
func floatValue(v float64) *rubispb.Value {
	return &rubispb.Value{Kind: &rubispb.Value_Float{Float: v}}
}
func stringValue(v string) *rubispb.Value {
	return &rubispb.Value{Kind: &rubispb.Value_String_{String_: v}}
}
func timeValue(v time.Time) *rubispb.Value {
	return &rubispb.Value{Kind: &rubispb.Value_Time{Time: timestamppb.New(v)}}
}

// valueToPB is a finder's argument as a Value: the kinds the container's
// finders take.
func valueToPB(v any) (*rubispb.Value, error) {
	switch v := v.(type) {
	case int:
		return intValue(int64(v)), nil
	case int64:
		return intValue(v), nil
	case float64:
		return floatValue(v), nil
	case string:
		return stringValue(v), nil
	case time.Time:
		return timeValue(v), nil
	}
	return nil, fmt.Errorf("a finder argument of type %T: want int, int64, float64, string or time.Time", v)
}

func valueFromPB(p *rubispb.Value) (any, error) {
	switch v := p.GetKind().(type) {
	case *rubispb.Value_Int:
		return v.Int, nil
	case *rubispb.Value_Float:
		return v.Float, nil
	case *rubispb.Value_String_:
		return v.String_, nil
	case *rubispb.Value_Time:
		return v.Time.AsTime(), nil
	}
	return nil, status.Error(codes.InvalidArgument, "a finder argument without a value")
}

// NewRemoteEntityFacade is the entity style's web tier: the interactions of Facade
// over the entity beans of the business tier behind conn (which
// ServeEntities answers). The thread argument of its methods is not sent:
// the business tier lends a thread to each transaction.
func NewRemoteEntityFacade(conn grpc.ClientConnInterface) *Facade {
	return &Facade{ents: remoteEntities{rubispb.NewEntitiesClient(conn)}, now: time.Now}
}

type remoteEntities struct{ c rubispb.EntitiesClient }

func (r remoteEntities) begin(ctx context.Context, _ int, write bool) (entityTx, error) {
	reply, err := r.c.Begin(ctx, &rubispb.BeginRequest{ReadOnly: !write})
	if err != nil {
		return nil, entityError("Begin", err)
	}
	return &remoteTx{c: r.c, ctx: ctx, id: reply.GetTx()}, nil
}

// entityError is the error of a call that failed as the web tier's code
// reads it: NotFound is container.ErrNotFound, as a find in process
// returns it; a failure of the bean's keeps its store class
// (remote.FailureError: an abort is retryable, a commit in doubt is in
// doubt); the error is wrapped with the method's name.
func entityError(method string, err error) error {
	if status.Code(err) == codes.NotFound {
		return container.ErrNotFound
	}
	return remote.FailureError(fmt.Errorf("remote %s: %w", method, err))
}

// remoteTx is a transaction on the business tier, named by its id.
type remoteTx struct {
	c   rubispb.EntitiesClient
	ctx context.Context
	id  int64
	err error // the first failed getter or setter
	// done: Commit or Rollback was called; the tier has ended it.
	done bool
}

var _ entityTx = (*remoteTx)(nil)

func (t *remoteTx) Err() error { return t.err }

// failed is the error a call of t must not be made for.
func (t *remoteTx) failed() error {
	if t.err != nil {
		return t.err
	}
	if t.done {
		return errors.New("rubis: a call in a transaction already ended")
	}
	return nil
}

func (t *remoteTx) ref(p *rubispb.Ref) *remoteRef {
	return &remoteRef{tx: t, ref: p.GetRef(), key: keyFromPB(p.GetKey())}
}

func (t *remoteTx) Find(h entityHome, key container.Key) (entityRef, error) {
	if err := t.failed(); err != nil {
		return nil, err
	}
	p, err := t.c.Find(t.ctx, &rubispb.FindRequest{Tx: t.id, Type: h.String(), Key: keyToPB(key)})
	if err != nil {
		return nil, entityError("Find", err)
	}
	return t.ref(p), nil
}

func (t *remoteTx) FindOne(h entityHome, finder string, args ...any) (entityRef, error) {
	found, err := t.FindMany(h, finder, args...)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, container.ErrNotFound
	}
	return found[0], nil
}

func (t *remoteTx) FindMany(h entityHome, finder string, args ...any) ([]entityRef, error) {
	if err := t.failed(); err != nil {
		return nil, err
	}
	req := &rubispb.FindByRequest{Tx: t.id, Type: h.String(), Finder: finder, Args: make([]*rubispb.Value, len(args))}
	for n, a := range args {
		v, err := valueToPB(a)
		if err != nil {
			return nil, err
		}
		req.Args[n] = v
	}
	p, err := t.c.FindBy(t.ctx, req)
	if err != nil {
		return nil, entityError("FindBy", err)
	}
	if len(p.GetRefs()) == 0 {
		return nil, nil
	}
	out := make([]entityRef, len(p.GetRefs()))
	for n, r := range p.GetRefs() {
		out[n] = t.ref(r)
	}
	return out, nil
}

func (t *remoteTx) Create(h entityHome, key container.Key) (entityRef, error) {
	if err := t.failed(); err != nil {
		return nil, err
	}
	p, err := t.c.Create(t.ctx, &rubispb.CreateRequest{Tx: t.id, Type: h.String(), Key: keyToPB(key)})
	if err != nil {
		return nil, entityError("Create", err)
	}
	return t.ref(p), nil
}

func (t *remoteTx) Commit() error {
	if t.err != nil {
		t.Rollback()
		return t.err
	}
	if t.done {
		return errors.New("rubis: Commit of a transaction already ended")
	}
	t.done = true
	if _, err := t.c.Commit(t.ctx, &rubispb.TxRequest{Tx: t.id}); err != nil {
		return entityError("Commit", err)
	}
	return nil
}

// Rollback ends the transaction unless Commit or Rollback did. Its own
// failure is not reported: the tier rolls back a transaction it does not
// hear from (entityIdle).
func (t *remoteTx) Rollback() {
	if t.done {
		return
	}
	t.done = true
	// Sent even when the page's context has ended (the browser left, the
	// run stops): that is when a rollback is due, and otherwise the
	// transaction would hold its thread and locks until the idle reaper.
	t.c.Rollback(context.WithoutCancel(t.ctx), &rubispb.TxRequest{Tx: t.id})
}

// remoteRef is a bean of a remote transaction: its key is at hand, each
// field one call. A failed call leaves the zero value and the error in the
// transaction (entityTx).
type remoteRef struct {
	tx  *remoteTx
	ref int64
	key container.Key
}

func (r *remoteRef) Key() container.Key { return r.key }

func (r *remoteRef) get(f int) *rubispb.Value {
	t := r.tx
	if t.failed() != nil {
		return nil
	}
	v, err := t.c.Get(t.ctx, &rubispb.RefRequest{Tx: t.id, Ref: r.ref, Field: int32(f)})
	if err != nil {
		t.err = entityError("Get", err)
		return nil
	}
	return v
}

func (r *remoteRef) set(f int, v *rubispb.Value) {
	t := r.tx
	if t.failed() != nil {
		return
	}
	if _, err := t.c.Set(t.ctx, &rubispb.SetRequest{Tx: t.id, Ref: r.ref, Field: int32(f), Value: v}); err != nil {
		t.err = entityError("Set", err)
	}
}

func (r *remoteRef) Int(f int) int64     { return r.get(f).GetInt() }
func (r *remoteRef) Float(f int) float64 { return r.get(f).GetFloat() }
func (r *remoteRef) String(f int) string { return r.get(f).GetString_() }

func (r *remoteRef) Time(f int) time.Time       { return timeFromPB(r.get(f).GetTime()) }
func (r *remoteRef) SetInt(f int, v int64)      { r.set(f, intValue(v)) }
func (r *remoteRef) SetFloat(f int, v float64)  { r.set(f, floatValue(v)) }
func (r *remoteRef) SetString(f int, v string)  { r.set(f, stringValue(v)) }
func (r *remoteRef) SetTime(f int, v time.Time) { r.set(f, timeValue(v)) }
