package stockonline

import (
	"context"
	"errors"

	"github.com/tierbench/tierbench/internal/store"
)

// The direct-SQL implementation: the hand-written baseline the entity
// container is compared with. Single-statement transactions run in
// autocommit, sparing the BEGIN and COMMIT round trips; Buy and Sell use
// atomic statements (an upsert, a guarded decrement) so no concurrent
// schedule can lose an update at READ COMMITTED, and queue the writes whose
// results they do not need, so those travel with the COMMIT (one round trip
// on PostgreSQL: Buy and Sell take three each, BEGIN included).
var sqlStatements = struct {
	createAccount, updateAccount, queryByID, queryByCode, buyRead,
	buyHolding, buyRecord, sellHolding, sellProbe, sellRecord, holdings store.Statement
}{
	createAccount: store.InsertReturning("create-account", "INSERT INTO SubAccount (sub_name, sub_address, sub_credit) VALUES (?, ?, ?)", "sub_accno"),
	updateAccount: store.Statement{Name: "update-account", SQL: "UPDATE SubAccount SET sub_credit = ? WHERE sub_accno = ?"},
	queryByID:     store.Statement{Name: "query-by-id", SQL: "SELECT current_value, high_value, low_value FROM StockItem WHERE stock_id = ?"},
	queryByCode:   store.Statement{Name: "query-by-code", SQL: "SELECT current_value, high_value, low_value FROM StockItem WHERE stock_code = ?"},
	// Both reads of BuyStock (the credit limit, the price) in one round trip.
	buyRead: store.Statement{Name: "buy-read", SQL: "SELECT a.sub_credit, i.current_value FROM SubAccount a, StockItem i WHERE a.sub_accno = ? AND i.stock_id = ?"},
	// Insert the holding, or add to the one the subscriber has.
	buyHolding: store.Statement{
		Name:     "buy-holding",
		SQL:      "INSERT INTO StockHolding (sub_accno, stock_id, amount) VALUES (?, ?, ?) ON CONFLICT (sub_accno, stock_id) DO UPDATE SET amount = StockHolding.amount + excluded.amount",
		Dialects: map[store.Dialect]string{store.MySQL: "INSERT INTO StockHolding (sub_accno, stock_id, amount) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE amount = amount + VALUES(amount)"},
	},
	buyRecord: store.Statement{Name: "buy-record", SQL: "INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) VALUES ('B', ?, ?, ?, ?, CURRENT_TIMESTAMP)"},
	// Read and decrement the holding in one statement: it changes a row only
	// when the amount suffices.
	sellHolding: store.Statement{Name: "sell-holding", SQL: "UPDATE StockHolding SET amount = amount - ? WHERE sub_accno = ? AND stock_id = ? AND amount >= ?"},
	// Only when the guarded decrement changed nothing: tell no holding from
	// too small a holding.
	sellProbe: store.Statement{Name: "sell-probe", SQL: "SELECT amount FROM StockHolding WHERE sub_accno = ? AND stock_id = ?"},
	// Read the price and record the sale in one statement.
	sellRecord: store.Statement{Name: "sell-record", SQL: "INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) SELECT 'S', ?, ?, ?, current_value, CURRENT_TIMESTAMP FROM StockItem WHERE stock_id = ?"},
	holdings:   store.Statement{Name: "holdings", SQL: "SELECT stock_id, amount FROM StockHolding WHERE sub_accno = ? AND amount > 0 ORDER BY stock_id LIMIT 20"},
}

// directStmts are the prepared statements, shared by all threads.
type directStmts struct {
	createAccountStmt, updateAccountStmt, queryByIDStmt, queryByCodeStmt, buyReadStmt,
	buyHoldingStmt, buyRecordStmt, sellHoldingStmt, sellProbeStmt, sellRecordStmt, holdingsStmt *store.Stmt
}

// direct is one server thread's instance of the direct-SQL session bean:
// its statements run on the thread's database session, its queries (each
// a read-only transaction) on the session the store routes them to (a
// read replica's, when the run has any).
type direct struct {
	*directStmts
	db     *store.Session
	all    *store.DB
	thread int
}

// reader is the session of a query.
func (d *direct) reader(ctx context.Context) *store.Session { return d.all.ReadOnly(ctx, d.thread) }

var _ facade = (*direct)(nil)

// newDirect prepares the statements and makes a bean for each server
// thread.
func newDirect(ctx context.Context, db *store.DB) ([]facade, error) {
	d := &directStmts{}
	q := &sqlStatements
	for _, p := range []struct {
		dst **store.Stmt
		s   store.Statement
	}{
		{&d.createAccountStmt, q.createAccount},
		{&d.updateAccountStmt, q.updateAccount},
		{&d.queryByIDStmt, q.queryByID},
		{&d.queryByCodeStmt, q.queryByCode},
		{&d.buyReadStmt, q.buyRead},
		{&d.buyHoldingStmt, q.buyHolding},
		{&d.buyRecordStmt, q.buyRecord},
		{&d.sellHoldingStmt, q.sellHolding},
		{&d.sellProbeStmt, q.sellProbe},
		{&d.sellRecordStmt, q.sellRecord},
		{&d.holdingsStmt, q.holdings},
	} {
		s, err := db.Prepare(ctx, p.s)
		if err != nil {
			return nil, err
		}
		*p.dst = s
	}
	beans := make([]facade, db.Threads())
	for i := range beans {
		beans[i] = &direct{directStmts: d, db: db.Thread(i), all: db, thread: i}
	}
	return beans, nil
}

func (d *direct) createAccount(ctx context.Context, name, address string, credit int64) (int64, error) {
	return store.InsertID(ctx, d.db, d.createAccountStmt, name, address, credit)
}

func (d *direct) updateAccount(ctx context.Context, account, credit int64) error {
	r, err := d.db.Exec(ctx, d.updateAccountStmt, credit, account)
	if err != nil {
		return err
	}
	if r.RowsAffected == 0 {
		return ErrUnknownAccount
	}
	return nil
}

func (d *direct) queryByID(ctx context.Context, stock int64) (quote, error) {
	var q quote
	err := d.reader(ctx).QueryRow(ctx, d.queryByIDStmt, stock).Scan(&q.current, &q.high, &q.low)
	if errors.Is(err, store.ErrNotFound) {
		return q, ErrUnknownStock
	}
	return q, err
}

func (d *direct) queryByCode(ctx context.Context, code string) (quote, error) {
	var q quote
	err := d.reader(ctx).QueryRow(ctx, d.queryByCodeStmt, code).Scan(&q.current, &q.high, &q.low)
	if errors.Is(err, store.ErrNotFound) {
		return q, ErrUnknownStock
	}
	return q, err
}

func (d *direct) buy(ctx context.Context, t trade) error {
	return d.db.InTx(ctx, func(tx *store.Tx) error {
		var limit, price int64
		err := tx.QueryRow(ctx, d.buyReadStmt, t.account, t.stock).Scan(&limit, &price)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUnknownAccount // or stock: the join cannot tell, nor need it
		}
		if err != nil {
			return err
		}
		if limit < price*t.amount {
			return ErrInsufficientCredit
		}
		tx.Queue(d.buyHoldingStmt, t.account, t.stock, t.amount)
		tx.Queue(d.buyRecordStmt, t.account, t.stock, t.amount, price)
		return nil
	})
}

func (d *direct) sell(ctx context.Context, t trade) error {
	return d.db.InTx(ctx, func(tx *store.Tx) error {
		r, err := tx.Exec(ctx, d.sellHoldingStmt, t.amount, t.account, t.stock, t.amount)
		if err != nil {
			return err
		}
		if r.RowsAffected == 0 {
			var have int64
			err := tx.QueryRow(ctx, d.sellProbeStmt, t.account, t.stock).Scan(&have)
			if errors.Is(err, store.ErrNotFound) {
				return ErrNoHolding
			}
			if err != nil {
				return err
			}
			return ErrInsufficientHolding
		}
		// The holding exists, so its stock does (stocks are never removed);
		// the consistency checks would show a sale recorded without it.
		tx.Queue(d.sellRecordStmt, t.account, t.stock, t.amount, t.stock)
		return nil
	})
}

func (d *direct) holdingStatement(ctx context.Context, account int64, buf []holding) ([]holding, error) {
	rows, err := d.reader(ctx).Query(ctx, d.holdingsStmt, account)
	if err != nil {
		return buf, err
	}
	defer rows.Close()
	for rows.Next() {
		var h holding
		if err := rows.Scan(&h.stock, &h.amount); err != nil {
			return buf, err
		}
		buf = append(buf, h)
	}
	return buf, rows.Err()
}
