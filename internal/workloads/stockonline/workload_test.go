package stockonline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// testPopulation is a tenth of Table 1, loaded in a tenth of the time: the
// tests that call the beans, corrupt the tables or reconcile counts need
// a few accounts and stocks (1 to 19, and keys beyond the last), not
// 36,000 rows. TestPopulationIsTheSameOnEveryBackend loads Table 1 whole.
var testPopulation = population{accounts: 300, items: 300}

// loaded gives a fresh database with the population pop (seed 1) and a
// run on it whose clients choose among pop's accounts and stocks.
func loaded(t *testing.T, dsn string, pop population) (*store.DB, *run) {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dsn, store.Options{Threads: 4})
	rep, err := loadPopulation(ctx, db, 1, pop)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"SubAccount": pop.accounts, "StockItem": pop.items, "StockHolding": holdingsPerAccount * pop.accounts, "StockTransaction": 0}
	for table, n := range want {
		if rep.Tables[table] != n {
			t.Errorf("loaded %d %s rows, want %d", rep.Tables[table], table, n)
		}
	}
	r, err := New().Start(ctx, db, workload.RunParams{Scale: 1, Persistence: container.Direct})
	if err != nil {
		t.Fatal(err)
	}
	run := r.(*run)
	run.pop = pop
	return db, run
}

func exec(t *testing.T, db *store.DB, sql string, args ...any) {
	t.Helper()
	s, err := db.Prepare(context.Background(), store.Statement{Name: "test", SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(context.Background(), s, args...); err != nil {
		t.Fatal(err)
	}
}

func queryInt(t *testing.T, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	s, err := db.Prepare(context.Background(), store.Statement{Name: "test", SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.QueryRow(context.Background(), s, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPopulationIsTheSameOnEveryBackend(t *testing.T) {
	t.Parallel()
	// The same seed must give the same database whatever the dialect, so
	// results on different backends compare like with like.
	// Table 1 at scale 1.
	if pop := populationAt(1); pop != (population{accounts: 3000, items: 3000}) || holdingsPerAccount != 10 {
		t.Fatalf("scale 1 is %+v with %d holdings an account, want Table 1's 3000 accounts, 3000 stocks, 30000 holdings", pop, holdingsPerAccount)
	}
	sums := make(map[string][3]int64)
	storetest.Each(t, func(t *testing.T, dsn string) {
		db, _ := loaded(t, dsn, populationAt(1))
		sums[string(db.Dialect())] = [3]int64{
			queryInt(t, db, "SELECT SUM(sub_credit) FROM SubAccount"),
			queryInt(t, db, "SELECT SUM(current_value + high_value - low_value) FROM StockItem"),
			queryInt(t, db, "SELECT SUM(amount * stock_id) FROM StockHolding"),
		}
		if n := queryInt(t, db, "SELECT COUNT(DISTINCT sub_accno) FROM StockHolding"); n != 3000 {
			t.Errorf("%d accounts hold stock, want all 3000 with 10 each", n)
		}
	})
	var first [3]int64
	for d, s := range sums {
		if first == ([3]int64{}) {
			first = s
		} else if s != first {
			t.Errorf("%s population checksums %v differ from another backend's %v", d, s, first)
		}
	}
}

func TestTransactionsAndTheirExceptions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db, r := loaded(t, dsn, testPopulation)
		f := r.beans[0]
		// A rich account and a cheap stock it does not hold yet.
		exec(t, db, "UPDATE SubAccount SET sub_credit = 100000000 WHERE sub_accno = 1")
		exec(t, db, "DELETE FROM StockHolding WHERE sub_accno = 1 AND stock_id = 7")
		before := db.Stats()

		if err := f.buy(ctx, trade{account: 1, stock: 7, amount: 40}); err != nil {
			t.Fatalf("buy: %v", err)
		}
		if err := f.buy(ctx, trade{account: 1, stock: 7, amount: 2}); err != nil {
			t.Fatalf("second buy of the same holding: %v", err)
		}
		if n := queryInt(t, db, "SELECT amount FROM StockHolding WHERE sub_accno = 1 AND stock_id = 7"); n != 42 {
			t.Errorf("holding after buys of 40 and 2 = %d, want 42", n)
		}
		if err := f.sell(ctx, trade{account: 1, stock: 7, amount: 50}); !errors.Is(err, ErrInsufficientHolding) {
			t.Errorf("selling 50 of 42: %v, want ErrInsufficientHolding", err)
		}
		if err := f.sell(ctx, trade{account: 1, stock: 7, amount: 42}); err != nil {
			t.Fatalf("sell: %v", err)
		}
		if n := queryInt(t, db, "SELECT amount FROM StockHolding WHERE sub_accno = 1 AND stock_id = 7"); n != 0 {
			t.Errorf("holding sold out = %d, want 0 (the row is kept)", n)
		}
		if err := f.sell(ctx, trade{account: 2, stock: 99999, amount: 1}); !errors.Is(err, ErrNoHolding) {
			t.Errorf("selling a stock never held: %v, want ErrNoHolding", err)
		}
		exec(t, db, "UPDATE SubAccount SET sub_credit = 0 WHERE sub_accno = 2")
		if err := f.buy(ctx, trade{account: 2, stock: 1, amount: 1}); !errors.Is(err, ErrInsufficientCredit) {
			t.Errorf("buying with no credit: %v, want ErrInsufficientCredit", err)
		}
		if err := f.buy(ctx, trade{account: 99999, stock: 1, amount: 1}); !errors.Is(err, ErrUnknownAccount) {
			t.Errorf("buying for a missing account: %v, want ErrUnknownAccount", err)
		}
		if n := queryInt(t, db, "SELECT COUNT(*) FROM StockTransaction"); n != 3 {
			t.Errorf("%d StockTransaction rows, want 3 (two buys, one sell; refused trades write nothing)", n)
		}
		if n := queryInt(t, db, "SELECT COUNT(*) FROM StockTransaction WHERE trans_type = 'S' AND price > 0 AND amount = 42"); n != 1 {
			t.Errorf("the sell was not recorded with its price and amount")
		}

		id, err := f.createAccount(ctx, "n", "a", 5000)
		if err != nil || id != testPopulation.accounts+1 {
			t.Errorf("createAccount = %d, %v; want key %d from the sequence", id, err, testPopulation.accounts+1)
		}
		if err := f.updateAccount(ctx, id, 6000); err != nil {
			t.Errorf("updateAccount: %v", err)
		}
		if err := f.updateAccount(ctx, id, 6000); err != nil {
			t.Errorf("updateAccount to the same value: %v (a matched row is not an unknown account)", err)
		}
		if err := f.updateAccount(ctx, 99999, 1); !errors.Is(err, ErrUnknownAccount) {
			t.Errorf("updateAccount of a missing account: %v, want ErrUnknownAccount", err)
		}
		q1, err := f.queryByID(ctx, 5)
		q2, err2 := f.queryByCode(ctx, StockCode(5))
		if err != nil || err2 != nil || q1 != q2 || q1.low > q1.current || q1.current > q1.high {
			t.Errorf("queries of stock 5: %+v %v, %+v %v", q1, err, q2, err2)
		}
		if _, err := f.queryByCode(ctx, "NOPE"); !errors.Is(err, ErrUnknownStock) {
			t.Errorf("query of a missing code: %v, want ErrUnknownStock", err)
		}
		hs, err := f.holdingStatement(ctx, 1, nil)
		if want := queryInt(t, db, "SELECT COUNT(*) FROM StockHolding WHERE sub_accno = 1 AND amount > 0"); err != nil || int64(len(hs)) != want {
			t.Errorf("statement of account 1 = %d holdings, %v; want %d (the sold-out one is not shown)", len(hs), err, want)
		}
		for i := 1; i < len(hs); i++ {
			if hs[i].stock <= hs[i-1].stock || hs[i].amount <= 0 {
				t.Errorf("statement not in stock order or shows an empty holding: %+v", hs)
			}
		}
		// Single-statement transactions run without BEGIN/COMMIT.
		st := db.Stats().Sub(before)
		if st.Transactions != 7 || st.Rollbacks != 4 {
			t.Errorf("%d explicit transactions, %d rolled back; want 7 (the buys and sells), 4 (those refused)", st.Transactions, st.Rollbacks)
		}
		checks, err := r.Check(ctx, workload.Outcomes{Succeeded: []int64{CreateAccount: 1, BuyStock: 2, SellStock: 1, numOps - 1: 0}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range checks {
			if !c.Passed {
				t.Errorf("check %s failed: %s", c.Name, c.Detail)
			}
		}
		for i := 0; i < 25; i++ {
			exec(t, db, "INSERT INTO StockHolding (sub_accno, stock_id, amount) VALUES (?, ?, 1)", 3, 10000+i)
		}
		if hs, err := f.holdingStatement(ctx, 3, nil); err != nil || len(hs) != 20 {
			t.Errorf("statement of an account with 35 holdings = %d, %v; want at most 20", len(hs), err)
		}
	})
}

func TestChecksCatchCorruption(t *testing.T) {
	t.Parallel()
	none := make([]int64, numOps)
	cases := []struct {
		name    string
		corrupt string
		failing string
	}{
		{"a holding's amount changed", "UPDATE StockHolding SET amount = amount + 1 WHERE sub_accno = 17 AND stock_id = (SELECT MIN(stock_id) FROM StockHolding WHERE sub_accno = 17)", "holdings-match-transactions"},
		{"a holding deleted", "DELETE FROM StockHolding WHERE sub_accno = 18", "holdings-match-transactions"},
		{"a negative amount", "UPDATE StockHolding SET amount = -5 WHERE sub_accno = 19", "no-negative-amounts"},
		{"an account nobody created", "INSERT INTO SubAccount (sub_accno, sub_name, sub_address, sub_credit) VALUES (5000, 'x', 'y', 1)", "accounts-match-creates"},
		{"a transaction of a missing account", "INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) VALUES ('S', 99999, 1, 1, 1, CURRENT_TIMESTAMP)", "transactions-reference-existing-rows"},
		{"a trade nobody made", "INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) VALUES ('S', 1, 1, 1, 1, CURRENT_TIMESTAMP)", "transactions-match-trades"},
	}
	storetest.Each(t, func(t *testing.T, dsn string) {
		db, r := loaded(t, dsn, testPopulation)
		checks, err := r.Check(context.Background(), workload.Outcomes{Succeeded: none})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range checks {
			if !c.Passed {
				t.Fatalf("untouched database fails %s: %s", c.Name, c.Detail)
			}
		}
		for _, tc := range cases {
			// Each corruption is checked against a fresh baseline.
			r2, err := New().Start(context.Background(), db, workload.RunParams{Scale: 1, Persistence: container.Direct})
			if err != nil {
				t.Fatal(err)
			}
			exec(t, db, tc.corrupt)
			checks, err := r2.Check(context.Background(), workload.Outcomes{Succeeded: none})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				if c.Name == tc.failing && c.Passed {
					t.Errorf("%s: check %s passed (%s), want it to fail", tc.name, c.Name, c.Detail)
				}
			}
		}
	})
}

// A commit in doubt may or may not have happened: the checks accept the
// database either way, within the number in doubt, and no further.
func TestChecksReconcileCommitsInDoubt(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		db, _ := loaded(t, dsn, testPopulation)
		r, err := New().Start(context.Background(), db, workload.RunParams{Scale: 1, Persistence: container.Direct})
		if err != nil {
			t.Fatal(err)
		}
		// Two accounts and one trade reach the database, as if their
		// clients lost the connection after COMMIT was sent.
		exec(t, db, "INSERT INTO SubAccount (sub_accno, sub_name, sub_address, sub_credit) VALUES (5000, 'x', 'y', 1), (5001, 'x', 'y', 1)")
		stock := queryInt(t, db, "SELECT MIN(stock_id) FROM StockHolding WHERE sub_accno = 1")
		exec(t, db, "INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) VALUES ('B', 1, ?, 1, 1, CURRENT_TIMESTAMP)", stock)
		exec(t, db, "UPDATE StockHolding SET amount = amount + 1 WHERE sub_accno = 1 AND stock_id = ?", stock)
		none := make([]int64, numOps)
		for _, tc := range []struct {
			name                 string
			createsInDoubt, buys int64
			accountsOK, tradesOK bool
			accountsNote, trNote string
		}{
			{"nothing in doubt", 0, 0, false, false, "", ""},
			{"exactly the commits in doubt", 2, 1, true, true, "2 in doubt, reconciled: 2 of them committed", "1 in doubt, reconciled: 1 of them committed"},
			{"more in doubt than committed", 5, 3, true, true, "5 in doubt, reconciled: 2 of them committed", "3 in doubt, reconciled: 1 of them committed"},
			{"too few in doubt", 1, 0, false, false, "1 in doubt cannot explain +2", ""},
		} {
			inDoubt := make([]int64, numOps)
			inDoubt[CreateAccount], inDoubt[BuyStock] = tc.createsInDoubt, tc.buys
			expectCounts(t, tc.name, r, workload.Outcomes{Succeeded: none, InDoubt: inDoubt}, tc.accountsOK, tc.tradesOK, tc.accountsNote, tc.trNote)
		}
	})
}

// A drive that lost an agent knows its commits up to its last report
// (counted as successful) and bounds those after it (Unreported, and one
// operation under way per lost terminal): the checks accept a database
// within that bound, say how many they reconciled, and still fail one
// beyond it either way (rows the reports cannot explain, or fewer rows
// than were reported).
func TestChecksReconcileLostAgents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, dsn string) {
		db, _ := loaded(t, dsn, testPopulation)
		r, err := New().Start(context.Background(), db, workload.RunParams{Scale: 1, Persistence: container.Direct})
		if err != nil {
			t.Fatal(err)
		}
		// Five accounts and three buys reach the database: the lost
		// agent reported 2 accounts and 1 buy before it fell silent.
		exec(t, db, "INSERT INTO SubAccount (sub_accno, sub_name, sub_address, sub_credit) VALUES (5000, 'x', 'y', 1), (5001, 'x', 'y', 1), (5002, 'x', 'y', 1), (5003, 'x', 'y', 1), (5004, 'x', 'y', 1)")
		stock := queryInt(t, db, "SELECT MIN(stock_id) FROM StockHolding WHERE sub_accno = 1")
		for range 3 {
			exec(t, db, "INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) VALUES ('B', 1, ?, 1, 1, CURRENT_TIMESTAMP)", stock)
		}
		exec(t, db, "UPDATE StockHolding SET amount = amount + 3 WHERE sub_accno = 1 AND stock_id = ?", stock)
		reported := make([]int64, numOps)
		reported[CreateAccount], reported[BuyStock] = 2, 1
		for _, tc := range []struct {
			name                          string
			reported                      []int64
			unreportedCreates, unreported int64 // CreateAccount, and each trade
			terminals                     int64
			accountsOK, tradesOK          bool
			accountsNote, tradesNote      string
		}{
			{"within the window", reported, 2, 1, 1, true, true,
				"0 in doubt and up to 3 unreported by lost agents (their 1 terminals' operations under way included), reconciled: 3 of them committed",
				"0 in doubt and up to 3 unreported by lost agents (their 1 terminals' operations under way included), reconciled: 2 of them committed"},
			{"beyond the window", reported, 1, 0, 1, false, false, "up to 2 unreported by lost agents (their 1 terminals' operations under way included) cannot explain +3",
				"up to 1 unreported by lost agents (their 1 terminals' operations under way included) cannot explain +2"},
			{"fewer rows than reported", []int64{CreateAccount: 9, BuyStock: 4, numOps - 1: 0}, 5, 5, 1, false, false, "cannot explain -4", "cannot explain -1"},
		} {
			unreported := make([]int64, numOps)
			unreported[CreateAccount], unreported[BuyStock], unreported[SellStock] = tc.unreportedCreates, tc.unreported, tc.unreported
			expectCounts(t, tc.name, r, workload.Outcomes{Succeeded: tc.reported, Unreported: unreported, LostTerminals: tc.terminals}, tc.accountsOK, tc.tradesOK, tc.accountsNote, tc.tradesNote)
		}
	})
}

// expectCounts checks the database against done: accounts-match-creates
// and transactions-match-trades must pass or fail as said, their details
// holding the notes given; every other check must pass.
func expectCounts(t *testing.T, name string, r workload.Run, done workload.Outcomes, accountsOK, tradesOK bool, accountsNote, tradesNote string) {
	t.Helper()
	checks, err := r.Check(context.Background(), done)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		want, note := true, ""
		switch c.Name {
		case "accounts-match-creates":
			want, note = accountsOK, accountsNote
		case "transactions-match-trades":
			want, note = tradesOK, tradesNote
		}
		if c.Passed != want || !strings.Contains(c.Detail, note) {
			t.Errorf("%s: %s passed %v (%s); want %v saying %q", name, c.Name, c.Passed, c.Detail, want, note)
		}
	}
}
