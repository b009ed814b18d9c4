package runner

import (
	"context"
	"fmt"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// TestDispatchesRunStockOnlineAlike: one client on one server thread
// makes the same choices on the same seed, so a run under --dispatch
// reflect and one under generated count the same lifecycle and
// statements and leave the same accounts, holdings and trades (their
// dates apart), each recorded with its dispatch.
func TestDispatchesRunStockOnlineAlike(t *testing.T) {
	testsvc.SkipUnlessLong(t, "two Stock-Online runs of their own population, 1-3 minutes on a loaded machine; the container's TestDispatchesLeaveTheSameState runs in make test")
	t.Parallel()
	var runs [2]string
	for n, d := range []container.Dispatch{container.Generated, container.Reflect} {
		dsn := storetest.SQLite(t)
		r := newRunner(t)
		cfg := stockOnlineConfig(t, r, dsn)
		cfg.Clients, cfg.ServerThreads, cfg.Iterations, cfg.Seed = 1, 1, 3, 7
		cfg.Dispatch = d
		res, err := r.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Config.Dispatch; got != d {
			t.Errorf("the result records dispatch %q, want %q", got, d)
		}
		for _, c := range res.Checks {
			if !c.Passed {
				t.Errorf("%s: check %s failed: %s", d, c.Name, c.Detail)
			}
		}
		if res.Container["Account"].Finds == 0 {
			t.Fatalf("%s: no Account finds: the run did not use the container", d)
		}
		runs[n] = fmt.Sprintf("container %+v\ndatabase statements %d, transactions %d\n%s", res.Container,
			res.Database.Statements, res.Database.Transactions, stockOnlineState(t, dsn))
	}
	if runs[0] != runs[1] {
		t.Errorf("generated:\n%s\nreflect:\n%s", runs[0], runs[1])
	}
}

// stockOnlineState is the database's accounts, holdings and trades (their
// dates left out: the clock's), row by row.
func stockOnlineState(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dsn, store.Options{Threads: 1})
	defer db.Close()
	var out string
	for _, q := range []string{
		"SELECT sub_accno || ' ' || sub_credit FROM SubAccount ORDER BY sub_accno",
		"SELECT sub_accno || ' ' || stock_id || ' ' || amount FROM StockHolding ORDER BY sub_accno, stock_id",
		"SELECT trans_id || ' ' || trans_type || ' ' || sub_accno || ' ' || stock_id || ' ' || amount || ' ' || price FROM StockTransaction ORDER BY trans_id",
	} {
		s, err := db.Prepare(ctx, store.Statement{Name: "state", SQL: q})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			out += line + "\n"
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}
