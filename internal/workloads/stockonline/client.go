package stockonline

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/tierbench/tierbench/internal/workload"
)

// facade is the session bean of section 3.6: the seven transactions, each
// one transaction. Every persistence strategy implements it; the clients'
// choices and the checks are the same whichever runs.
type facade interface {
	createAccount(ctx context.Context, name, address string, credit int64) (int64, error)
	updateAccount(ctx context.Context, account, credit int64) error
	queryByID(ctx context.Context, stock int64) (quote, error)
	queryByCode(ctx context.Context, code string) (quote, error)
	buy(ctx context.Context, t trade) error
	sell(ctx context.Context, t trade) error
	// holdingStatement appends up to 20 of the account's holdings to buf.
	holdingStatement(ctx context.Context, account int64, buf []holding) ([]holding, error)
}

type quote struct{ current, high, low int64 }

type holding struct{ stock, amount int64 }

type trade struct{ account, stock, amount int64 }

// call is one transaction with its arguments, as a client chose them.
type call struct {
	op      int
	account int64
	stock   int64
	amount  int64
	credit  int64
	code    string
}

// client is one terminal's subscriber session: what it asks for, of
// whichever bean runs it (localClient, remoteClient). Accounts and stocks
// are uniform over the initial population (no locality, section 3.5).
type client struct {
	pop    population
	rng    *rand.Rand
	bought []trade // by pair: what the Buy of pair k bought, for its Sell
	stmt   []holding
}

func newClient(pop population, rng *rand.Rand) *client {
	return &client{pop: pop, rng: rng, stmt: make([]holding, 0, maxHoldingStatement)}
}

// choose draws the arguments of step.
func (c *client) choose(step workload.Step) call {
	k := call{op: step.Op}
	switch step.Op {
	case CreateAccount:
		k.credit = credit(c.rng)
	case UpdateAccount:
		k.account = c.account()
		k.credit = credit(c.rng)
	case QueryByID:
		k.stock = c.stock()
	case QueryByCode:
		k.stock = c.stock()
		k.code = StockCode(k.stock)
	case BuyStock:
		t := trade{account: c.account(), stock: c.stock(), amount: 1 + c.rng.Int64N(maxTradeSize)}
		if step.Pair >= len(c.bought) {
			// The run's deck (--mix) sets the pairs, not Table 2's: the
			// first iteration grows the slice to them.
			c.bought = append(c.bought, make([]trade, step.Pair+1-len(c.bought))...)
		}
		c.bought[step.Pair] = t
		k.account, k.stock, k.amount = t.account, t.stock, t.amount
	case SellStock:
		// A sell dealt before its pair's first buy sells the zero trade: an
		// unknown account, a business exception. A real deal never does
		// (workload.Pair); dealForTest's does, and the remote test counts
		// on those exceptions crossing the tier boundary.
		var t trade
		if step.Pair < len(c.bought) {
			t = c.bought[step.Pair]
		}
		k.account, k.stock, k.amount = t.account, t.stock, t.amount
	case GetHoldingStatement:
		k.account = c.account()
	}
	return k
}

func (c *client) account() int64 { return 1 + c.rng.Int64N(c.pop.accounts) }
func (c *client) stock() int64   { return 1 + c.rng.Int64N(c.pop.items) }

// localClient is a terminal in the process of the beans: a step runs on
// its server thread's bean.
type localClient struct {
	*client
	beans []facade // by server thread
}

func (c localClient) Do(ctx context.Context, step workload.Step) error {
	return c.do(ctx, c.beans[step.Thread], step)
}

// do runs one step as one transaction of bean.
func (c *client) do(ctx context.Context, bean facade, step workload.Step) error {
	k := c.choose(step)
	switch k.op {
	case CreateAccount:
		_, err := bean.createAccount(ctx, "New subscriber", "Market Street, Canberra", k.credit)
		return err
	case UpdateAccount:
		return bean.updateAccount(ctx, k.account, k.credit)
	case QueryByID:
		_, err := bean.queryByID(ctx, k.stock)
		return err
	case QueryByCode:
		_, err := bean.queryByCode(ctx, k.code)
		return err
	case BuyStock:
		return bean.buy(ctx, trade{k.account, k.stock, k.amount})
	case SellStock:
		return bean.sell(ctx, trade{k.account, k.stock, k.amount})
	case GetHoldingStatement:
		var err error
		c.stmt, err = bean.holdingStatement(ctx, k.account, c.stmt[:0])
		return err
	}
	return fmt.Errorf("stockonline: no operation %d", k.op)
}
