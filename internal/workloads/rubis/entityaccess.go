package rubis

import (
	"context"
	"fmt"
	"time"

	"github.com/tierbench/tierbench/internal/container"
)

// How Facade reaches the entity beans: through entityTx and entityRef,
// whether the beans are in process (the facade on the business tier, the
// local style: localEntities, over the container itself) or on a business
// tier of their own (the entity style: remoteEntities, entitytier.go,
// where every method below that can fail is one remote call). The
// interactions are written once, in facade.go, over these.

// entityHome names an entity type: its index in entityTypes.
type entityHome uint8

const (
	homeUsers entityHome = iota
	homeItems
	homeOldItems
	homeBids
	homeComments
	homeBuyNow
	homeCategories
	homeRegions
	numHomes
)

func (h entityHome) String() string { return entityTypes[h].Name }

// entityTx is a container transaction as its client sees it.
//
// A getter or setter of a remote bean can fail (the call did), and the
// interactions read fields as values, as EJB code reads them: a failed
// field access leaves the zero value and its error in the transaction
// (Err), every later call of the transaction fails with it without being
// made, and the interaction's result is that error whatever it made of the
// zero value (Facade.once).
type entityTx interface {
	// Find is the bean with the key; container.ErrNotFound if none.
	Find(h entityHome, key container.Key) (entityRef, error)
	// FindOne runs a single-bean finder; container.ErrNotFound when no
	// row matches.
	FindOne(h entityHome, finder string, args ...any) (entityRef, error)
	// FindMany runs a collection finder.
	FindMany(h entityHome, finder string, args ...any) ([]entityRef, error)
	// Create makes a bean, its key given or, for a sequence-keyed type,
	// allocated.
	Create(h entityHome, key container.Key) (entityRef, error)
	// Commit ends the transaction, its changes stored; on error it is
	// rolled back.
	Commit() error
	// Rollback ends the transaction, nothing of it stored; after Commit
	// it does nothing.
	Rollback()
	// Err is the first failure of a getter or setter, nil if none.
	Err() error
}

// entityRef is a bean found or created in a transaction: its key, and its
// fields by index (the constants of entities.go). *container.Instance is
// one as it is.
type entityRef interface {
	Key() container.Key
	Int(f int) int64
	Float(f int) float64
	String(f int) string
	Time(f int) time.Time
	SetInt(f int, v int64)
	SetFloat(f int, v float64)
	SetString(f int, v string)
	SetTime(f int, v time.Time)
}

// entities begin transactions: on the container's thread thread, or (a
// remote business tier) on a thread the tier lends.
type entities interface {
	begin(ctx context.Context, thread int, write bool) (entityTx, error)
}

var (
	_ entityRef = (*container.Instance)(nil)
	_ entityTx  = localTx{}
)

// localEntities are the beans of a container in this process.
type localEntities struct {
	ctr   *container.Container
	homes *[numHomes]*container.Home
}

func newLocalEntities(ctr *container.Container) (localEntities, error) {
	l := localEntities{ctr: ctr, homes: new([numHomes]*container.Home)}
	for h := range numHomes {
		if l.homes[h] = ctr.Home(h.String()); l.homes[h] == nil {
			return localEntities{}, fmt.Errorf("rubis: the container has no entity type %s", h)
		}
	}
	return l, nil
}

func (l localEntities) begin(ctx context.Context, thread int, write bool) (entityTx, error) {
	begin := l.ctr.BeginReadOnly
	if write {
		begin = l.ctr.Begin
	}
	tx, err := begin(ctx, thread)
	if err != nil {
		return nil, err
	}
	return localTx{tx: tx, homes: l.homes}, nil
}

// localTx is a container transaction itself; its beans are the
// container's instances.
type localTx struct {
	tx    *container.Tx
	homes *[numHomes]*container.Home
}

func (l localTx) Find(h entityHome, key container.Key) (entityRef, error) {
	i, err := l.tx.Find(l.homes[h], key)
	if err != nil {
		return nil, err
	}
	return i, nil
}

func (l localTx) FindOne(h entityHome, finder string, args ...any) (entityRef, error) {
	i, err := l.tx.FindOne(l.homes[h], finder, args...)
	if err != nil {
		return nil, err
	}
	return i, nil
}

func (l localTx) FindMany(h entityHome, finder string, args ...any) ([]entityRef, error) {
	found, err := l.tx.FindMany(l.homes[h], finder, nil, args...)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	out := make([]entityRef, len(found))
	for n, i := range found {
		out[n] = i
	}
	return out, nil
}

func (l localTx) Create(h entityHome, key container.Key) (entityRef, error) {
	i, err := l.tx.Create(l.homes[h], key)
	if err != nil {
		return nil, err
	}
	return i, nil
}

func (l localTx) Commit() error { return l.tx.Commit() }
func (l localTx) Rollback()     { l.tx.Rollback() }
func (l localTx) Err() error    { return nil }
