package stockonline

import (
	"context"
	"errors"
	"time"

	"github.com/tierbench/tierbench/internal/container"
)

// bean is one server thread's instance of the session facade on the entity
// container (section 3.6): the seven transactions as container-managed
// transactions over Account, Item, Holding and Transaction.
type bean struct {
	ctr                                 *container.Container
	thread                              int
	account, item, holding, transaction *container.Home
	found                               []*container.Instance
	// code and accountID are the finders' arguments, passed through
	// codeArgs and accountArgs (pointers to them) so that a finder call
	// allocates no interface for its argument.
	code                  string
	accountID             int64
	codeArgs, accountArgs []any
}

var _ facade = (*bean)(nil)

func newBeans(ctr *container.Container, threads int) []facade {
	beans := make([]facade, threads)
	for i := range beans {
		beans[i] = &bean{
			ctr: ctr, thread: i,
			account: ctr.Home(accountType.Name), item: ctr.Home(itemType.Name),
			holding: ctr.Home(holdingType.Name), transaction: ctr.Home(transactionType.Name),
		}
		b := beans[i].(*bean)
		b.codeArgs, b.accountArgs = []any{&b.code}, []any{&b.accountID}
	}
	return beans
}

// fail rolls tx back and returns err, translating "no such entity" into the
// business exception the operation names for it.
func fail(tx *container.Tx, err, notFound error) error {
	tx.Rollback()
	if errors.Is(err, container.ErrNotFound) && notFound != nil {
		return notFound
	}
	return err
}

func (b *bean) createAccount(ctx context.Context, name, address string, credit int64) (int64, error) {
	tx, err := b.ctr.Begin(ctx, b.thread)
	if err != nil {
		return 0, err
	}
	a, err := tx.Create(b.account, container.Key{})
	if err != nil {
		return 0, fail(tx, err, nil)
	}
	a.SetString(accountName, name)
	a.SetString(accountAddress, address)
	a.SetInt(accountCredit, credit)
	key := a.Key().A
	return key, tx.Commit()
}

func (b *bean) updateAccount(ctx context.Context, account, credit int64) error {
	tx, err := b.ctr.Begin(ctx, b.thread)
	if err != nil {
		return err
	}
	a, err := tx.Find(b.account, container.Key{A: account})
	if err != nil {
		return fail(tx, err, ErrUnknownAccount)
	}
	a.SetInt(accountCredit, credit)
	return tx.Commit()
}

func (b *bean) queryByID(ctx context.Context, stock int64) (quote, error) {
	tx, err := b.ctr.BeginReadOnly(ctx, b.thread)
	if err != nil {
		return quote{}, err
	}
	i, err := tx.Find(b.item, container.Key{A: stock})
	if err != nil {
		return quote{}, fail(tx, err, ErrUnknownStock)
	}
	q := quoteOf(i)
	return q, tx.Commit()
}

func (b *bean) queryByCode(ctx context.Context, code string) (quote, error) {
	tx, err := b.ctr.BeginReadOnly(ctx, b.thread)
	if err != nil {
		return quote{}, err
	}
	b.code = code
	i, err := tx.FindOne(b.item, "byCode", b.codeArgs...)
	if err != nil {
		return quote{}, fail(tx, err, ErrUnknownStock)
	}
	q := quoteOf(i)
	return q, tx.Commit()
}

func quoteOf(i *container.Instance) quote {
	return quote{current: i.Int(itemCurrent), high: i.Int(itemHigh), low: i.Int(itemLow)}
}

// buy follows section 3.3: read the account's credit limit and the stock's
// price, add to the holding or create it, record the transaction.
func (b *bean) buy(ctx context.Context, t trade) error {
	tx, err := b.ctr.Begin(ctx, b.thread)
	if err != nil {
		return err
	}
	a, err := tx.Find(b.account, container.Key{A: t.account})
	if err != nil {
		return fail(tx, err, ErrUnknownAccount)
	}
	i, err := tx.Find(b.item, container.Key{A: t.stock})
	if err != nil {
		return fail(tx, err, ErrUnknownStock)
	}
	price := i.Int(itemCurrent)
	if a.Int(accountCredit) < price*t.amount {
		return fail(tx, ErrInsufficientCredit, nil)
	}
	key := container.Key{A: t.account, B: t.stock}
	h, err := tx.Find(b.holding, key)
	switch {
	case errors.Is(err, container.ErrNotFound):
		if h, err = tx.Create(b.holding, key); err != nil {
			return fail(tx, err, nil)
		}
		h.SetInt(holdingAmount, t.amount)
	case err != nil:
		return fail(tx, err, nil)
	default:
		h.SetInt(holdingAmount, h.Int(holdingAmount)+t.amount)
	}
	if err := b.record(tx, "B", t, price); err != nil {
		return fail(tx, err, nil)
	}
	return tx.Commit()
}

// sell follows section 3.3: check the holding suffices, read the price,
// reduce the holding (a sold-out holding keeps its row), record.
func (b *bean) sell(ctx context.Context, t trade) error {
	tx, err := b.ctr.Begin(ctx, b.thread)
	if err != nil {
		return err
	}
	h, err := tx.Find(b.holding, container.Key{A: t.account, B: t.stock})
	if err != nil {
		return fail(tx, err, ErrNoHolding)
	}
	if h.Int(holdingAmount) < t.amount {
		return fail(tx, ErrInsufficientHolding, nil)
	}
	i, err := tx.Find(b.item, container.Key{A: t.stock})
	if err != nil {
		return fail(tx, err, ErrUnknownStock)
	}
	h.SetInt(holdingAmount, h.Int(holdingAmount)-t.amount)
	if err := b.record(tx, "S", t, i.Int(itemCurrent)); err != nil {
		return fail(tx, err, nil)
	}
	return tx.Commit()
}

// record creates the StockTransaction of a trade, under a new key.
func (b *bean) record(tx *container.Tx, kind string, t trade, price int64) error {
	r, err := tx.Create(b.transaction, container.Key{})
	if err != nil {
		return err
	}
	r.SetString(transType, kind)
	r.SetInt(transAccount, t.account)
	r.SetInt(transStock, t.stock)
	r.SetInt(transAmount, t.amount)
	r.SetInt(transPrice, price)
	r.SetTime(transDate, time.Now().UTC().Truncate(time.Second))
	return nil
}

func (b *bean) holdingStatement(ctx context.Context, account int64, buf []holding) ([]holding, error) {
	tx, err := b.ctr.BeginReadOnly(ctx, b.thread)
	if err != nil {
		return buf, err
	}
	b.accountID = account
	b.found, err = tx.FindMany(b.holding, "byAccount", b.found[:0], b.accountArgs...)
	if err != nil {
		return buf, fail(tx, err, nil)
	}
	for _, h := range b.found {
		buf = append(buf, holding{stock: h.Key().B, amount: h.Int(holdingAmount)})
	}
	clear(b.found)
	return buf, tx.Commit()
}
