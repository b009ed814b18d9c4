package stockonline

import (
	"context"
	"fmt"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

var checkStatements = struct {
	holdings, accounts, maxTrans, transSince, deltas, dangling, negative store.Statement
}{
	holdings:   store.Statement{Name: "check-holdings", SQL: "SELECT sub_accno, stock_id, amount FROM StockHolding"},
	accounts:   store.Statement{Name: "check-accounts", SQL: "SELECT COUNT(*) FROM SubAccount"},
	maxTrans:   store.Statement{Name: "check-max-trans", SQL: "SELECT COALESCE(MAX(trans_id), 0) FROM StockTransaction"},
	transSince: store.Statement{Name: "check-trans-since", SQL: "SELECT COUNT(*) FROM StockTransaction WHERE trans_id > ?"},
	deltas: store.Statement{Name: "check-deltas", SQL: `SELECT sub_accno, stock_id, SUM(CASE WHEN trans_type = 'B' THEN amount ELSE -amount END)
		FROM StockTransaction WHERE trans_id > ? GROUP BY sub_accno, stock_id`},
	dangling: store.Statement{Name: "check-dangling", SQL: `SELECT COUNT(*) FROM StockTransaction t
		WHERE NOT EXISTS (SELECT 1 FROM SubAccount a WHERE a.sub_accno = t.sub_accno)
		   OR NOT EXISTS (SELECT 1 FROM StockItem i WHERE i.stock_id = t.stock_id)`},
	negative: store.Statement{Name: "check-negative", SQL: "SELECT (SELECT COUNT(*) FROM StockHolding WHERE amount < 0) + (SELECT COUNT(*) FROM StockTransaction WHERE amount <= 0)"},
}

// ReconcilesLostAgents: Check allows for a lost agent's unreported commits.
func (*checker) ReconcilesLostAgents() {}

var _ workload.LossReconciler = (*checker)(nil)

type holdingKey struct{ account, stock int64 }

// checker holds the state of the database before the run and compares the
// state after it with what the clients did.
type checker struct {
	db       *store.DB
	holdings map[holdingKey]int64
	accounts int64
	maxTrans int64
	stmts    map[string]*store.Stmt
}

func newChecker(ctx context.Context, db *store.DB) (*checker, error) {
	c := &checker{db: db, stmts: make(map[string]*store.Stmt)}
	q := &checkStatements
	for _, s := range []store.Statement{q.holdings, q.accounts, q.maxTrans, q.transSince, q.deltas, q.dangling, q.negative} {
		p, err := db.Prepare(ctx, s)
		if err != nil {
			return nil, err
		}
		c.stmts[s.Name] = p
	}
	var err error
	if c.holdings, err = c.readHoldings(ctx); err != nil {
		return nil, err
	}
	if err := c.count(ctx, q.accounts, &c.accounts); err != nil {
		return nil, err
	}
	if err := c.count(ctx, q.maxTrans, &c.maxTrans); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *checker) count(ctx context.Context, s store.Statement, dst *int64, args ...any) error {
	if err := c.db.QueryRow(ctx, c.stmts[s.Name], args...).Scan(dst); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

func (c *checker) readHoldings(ctx context.Context) (map[holdingKey]int64, error) {
	return c.sumRows(ctx, checkStatements.holdings)
}

// sumRows reads (account, stock, amount) rows into a map.
func (c *checker) sumRows(ctx context.Context, s store.Statement, args ...any) (map[holdingKey]int64, error) {
	rows, err := c.db.Query(ctx, c.stmts[s.Name], args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer rows.Close()
	out := make(map[holdingKey]int64)
	for rows.Next() {
		var k holdingKey
		var amount int64
		if err := rows.Scan(&k.account, &k.stock, &amount); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		out[k] = amount
	}
	return out, rows.Err()
}

// Check compares the database after the run with the baseline and with the
// driver's counts of successful operations. A commit in doubt may or may
// not be in the database: the counts allow for either, and say how many
// of them turned out to have committed; so may the commits of a lost
// agent after its last report (drive --agents).
func (c *checker) Check(ctx context.Context, done workload.Outcomes) ([]workload.Check, error) {
	succeeded := done.Succeeded
	q := &checkStatements
	var checks []workload.Check
	add := func(name string, passed bool, format string, args ...any) {
		checks = append(checks, workload.Check{Name: name, Passed: passed, Detail: fmt.Sprintf(format, args...)})
	}

	var accounts int64
	if err := c.count(ctx, q.accounts, &accounts); err != nil {
		return nil, err
	}
	want := c.accounts + succeeded[CreateAccount]
	ok, note := done.Reconcile(accounts-want, CreateAccount)
	add("accounts-match-creates", ok, "%d accounts = %d before + %d successful CreateAccount (want %d)%s", accounts, c.accounts, succeeded[CreateAccount], want, note)

	var recorded int64
	if err := c.count(ctx, q.transSince, &recorded, c.maxTrans); err != nil {
		return nil, err
	}
	trades := succeeded[BuyStock] + succeeded[SellStock]
	ok, note = done.Reconcile(recorded-trades, BuyStock, SellStock)
	add("transactions-match-trades", ok, "%d StockTransaction rows written = %d successful Buy + %d successful Sell%s", recorded, succeeded[BuyStock], succeeded[SellStock], note)

	var dangling int64
	if err := c.count(ctx, q.dangling, &dangling); err != nil {
		return nil, err
	}
	add("transactions-reference-existing-rows", dangling == 0, "%d StockTransaction rows name a missing account or stock", dangling)

	var negative int64
	if err := c.count(ctx, q.negative, &negative); err != nil {
		return nil, err
	}
	add("no-negative-amounts", negative == 0, "%d negative holdings or non-positive trade amounts", negative)

	after, err := c.readHoldings(ctx)
	if err != nil {
		return nil, err
	}
	deltas, err := c.sumRows(ctx, q.deltas, c.maxTrans)
	if err != nil {
		return nil, err
	}
	return append(checks, c.compareHoldings(after, deltas)), nil
}

// compareHoldings checks every holding, touched or not: its amount now must
// be its amount before plus the buys minus the sells recorded since.
func (c *checker) compareHoldings(after, deltas map[holdingKey]int64) workload.Check {
	mismatches := 0
	var first string
	note := func(k holdingKey, format string, args ...any) {
		mismatches++
		if first == "" {
			first = fmt.Sprintf("account %d stock %d: ", k.account, k.stock) + fmt.Sprintf(format, args...)
		}
	}
	for k, now := range after {
		before, existed := c.holdings[k]
		delta, traded := deltas[k]
		if !existed && !traded {
			note(k, "holding appeared without a transaction")
			continue
		}
		if now != before+delta {
			note(k, "amount %d, want %d before %+d traded", now, before, delta)
		}
	}
	for k := range c.holdings {
		if _, ok := after[k]; !ok {
			note(k, "holding disappeared")
		}
	}
	for k := range deltas {
		if _, ok := after[k]; !ok {
			if _, before := c.holdings[k]; !before {
				note(k, "transactions recorded but no holding")
			}
		}
	}
	detail := fmt.Sprintf("%d holdings checked (%d traded during the run), %d mismatched", len(after), len(deltas), mismatches)
	if first != "" {
		detail += "; first: " + first
	}
	return workload.Check{Name: "holdings-match-transactions", Passed: mismatches == 0, Detail: detail}
}
