package ecperf

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// eachPersistence runs test on every backend, with the container's beans
// (cmp) and with hand-written SQL (direct), each on a database of its own
// loaded at Ir 1, on a started app.
func eachPersistence(t *testing.T, test func(t *testing.T, a *app, q storetest.Querier)) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		for i, p := range []container.Persistence{container.CMP, container.Direct} {
			t.Run(string(p), func(t *testing.T) {
				if i > 0 {
					dsn = storetest.Fresh(t, dsn)
				}
				cfg := testConfig()
				cfg.Persistence = p
				db := loadedDB(t, dsn, cfg)
				test(t, startApp(t, db, cfg), storetest.Querier{T: t, DB: db})
			})
		}
	})
}

// goodCustomer is a customer of good credit whose account the test sets:
// no balance, no payments, the given limit.
func goodCustomer(t *testing.T, q storetest.Querier, limit int64) int64 {
	t.Helper()
	c := q.Int(fmt.Sprintf("SELECT MIN(c_id) FROM c_customer WHERE c_credit <> '%s'", badCredit))
	q.Exec("UPDATE c_customer SET c_balance = 0, c_ytd_payment = 0, c_credit_limit = ? WHERE c_id = ?", limit, c)
	return c
}

// intRows are the n integer columns of sql's rows, in one list.
func intRows(t *testing.T, q storetest.Querier, n int, sql string, args ...any) string {
	t.Helper()
	rows, err := q.DB.Query(context.Background(), q.Stmt(sql), args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		row := make([]int64, n)
		dest := make([]any, n)
		for i := range row {
			dest[i] = &row[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		out = append(out, row...)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return fmt.Sprint(out)
}

// passedChecks runs the checks and fails the test on any that fails; it
// returns their details by name.
func passedChecks(t *testing.T, a *app, outcomes workload.Outcomes) map[string]string {
	t.Helper()
	checks, err := a.Check(context.Background(), outcomes)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range checks {
		if !c.Passed {
			t.Errorf("%s failed: %s", c.Name, c.Detail)
		}
		out[c.Name] = c.Detail
	}
	return out
}

// ChangeOrder makes a large order of a line it takes over 20 units,
// removes the waiting one of a line it takes back to 20 or under, and
// makes a waiting one follow its line's quantity; one already scheduled
// stands. A large-order line takes the waiting one, moves its work order
// through the stations and completes it into inventory; a poll that finds
// none is a business exception.
func TestChangeOrderAndTheLargeOrderLines(t *testing.T) {
	t.Parallel()
	eachPersistence(t, func(t *testing.T, a *app, q storetest.Querier) {
		ctx := context.Background()
		b := a.beans[0]
		customer := goodCustomer(t, q, 1<<40)
		waiting := func() string {
			return intRows(t, q, 2, "SELECT lo_ol_id, lo_qty FROM m_largeorder ORDER BY lo_ol_id")
		}

		order, err := b.newOrder(ctx, customer, false, []orderLine{{item: 1, qty: 20}, {item: 2, qty: 25}, {item: 3, qty: 5}})
		if err != nil {
			t.Fatal(err)
		}
		if got := waiting(); got != "[2 25]" {
			t.Fatalf("large orders (line, qty) %s after NewOrder, want [2 25]", got)
		}
		all := []int64{1, 2, 3}
		if err := b.changeOrder(ctx, order, all, +1); err != nil {
			t.Fatal(err)
		}
		if got := waiting(); got != "[1 21 2 26]" {
			t.Fatalf("large orders %s after +1, want [1 21 2 26]: line 1 crossed 20, line 2 followed", got)
		}
		if err := b.changeOrder(ctx, order, all, -3); err != nil {
			t.Fatal(err)
		}
		if got := waiting(); got != "[2 23]" {
			t.Fatalf("large orders %s after -3, want [2 23]: line 1 fell back to 18", got)
		}

		line := newClient(a, largeOrderGroup, 0, rand.New(rand.NewPCG(1, 1)))
		assembly := int64(2) // line 2's item
		stock := q.Int("SELECT in_qty FROM m_inventory WHERE in_p_id = ?", assembly)
		if err := line.Do(ctx, workload.Step{Op: LargeOrderLine}); err != nil {
			t.Fatal(err)
		}
		wo := line.workOrder
		status := func() string {
			return intRows(t, q, 5, "SELECT wo_o_id, wo_ol_id, wo_status, wo_orig_qty, wo_comp_qty FROM m_workorder WHERE wo_number = ?", wo)
		}
		if got, want := status(), fmt.Sprintf("[%d 2 %d 23 0]", order, woOpen); got != want {
			t.Fatalf("work order (order, line, status, qty, done) %s, want %s", got, want)
		}
		if got := waiting(); got != "[]" {
			t.Fatalf("large orders %s after the line took line 2's, want none", got)
		}
		// Too late to unmake: the work order stands at 23 as the line
		// falls to 20.
		if err := b.changeOrder(ctx, order, all, -3); err != nil {
			t.Fatal(err)
		}
		if got := waiting(); got != "[]" {
			t.Fatalf("large orders %s after line 2 fell to 20 with its work order under way, want none", got)
		}
		for i, op := range []int{UpdateWorkOrder, UpdateWorkOrder, CompleteWorkOrder} {
			if err := line.Do(ctx, workload.Step{Op: op}); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("[%d 2 %d 23 0]", order, woOpen+1+i)
			if op == CompleteWorkOrder {
				want = fmt.Sprintf("[%d 2 %d 23 23]", order, woCompleted)
			}
			if got := status(); got != want {
				t.Fatalf("work order %s after station %d, want %s", got, i+1, want)
			}
		}
		if got := q.Int("SELECT in_qty FROM m_inventory WHERE in_p_id = ?", assembly); got != stock+23 {
			t.Errorf("assembly %d's inventory %d after the work order completed, want %d + 23", assembly, got, stock)
		}
		if err := line.Do(ctx, workload.Step{Op: LargeOrderLine}); !errors.Is(err, ErrNoLargeOrder) {
			t.Errorf("a poll with no large order waiting: %v, want ErrNoLargeOrder", err)
		}
		if a.largeScheduled.Load() != 1 || a.largeCompleted.Load() != 1 {
			t.Errorf("large-order lines scheduled %d and completed %d, want 1 and 1", a.largeScheduled.Load(), a.largeCompleted.Load())
		}
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		succeeded := make([]int64, numOps)
		succeeded[NewOrder], succeeded[CompleteWorkOrder] = 1, 1
		details := passedChecks(t, a, workload.Outcomes{Succeeded: succeeded})
		if d := details["work-orders-completed"]; !strings.Contains(d, "1 work orders completed in the run, 1 CompleteWorkOrder by the lines; 1 of them for large orders, 1 completed by the large-order lines, which scheduled 1") {
			t.Errorf("work-orders-completed: %s", d)
		}
	})
}

// The credit check reads what the customer owes and what it has paid
// this year; NewOrder puts an order's total on its account, ChangeOrder
// the change and CancelOrder takes it off.
func TestCreditCheckReadsPaymentHistory(t *testing.T) {
	t.Parallel()
	eachPersistence(t, func(t *testing.T, a *app, q storetest.Querier) {
		ctx := context.Background()
		b := a.beans[0]
		customer := goodCustomer(t, q, 1)
		one := []orderLine{{item: 1, qty: 2}}
		balance := func() int64 { return q.Int("SELECT c_balance FROM c_customer WHERE c_id = ?", customer) }

		if _, err := b.newOrder(ctx, customer, false, one); !errors.Is(err, ErrBadCredit) {
			t.Fatalf("an order over a limit of 1 cent: %v, want ErrBadCredit", err)
		}
		q.Exec("UPDATE c_customer SET c_credit_limit = ? WHERE c_id = ?", int64(1)<<40, customer)
		first, err := b.newOrder(ctx, customer, false, one)
		if err != nil {
			t.Fatal(err)
		}
		total := q.Int("SELECT o_total FROM o_orders WHERE o_id = ?", first)
		if got := balance(); got != total {
			t.Fatalf("balance %d after an order of %d, want %d", got, total, total)
		}
		// The limit covers what it owes now, not another order as big.
		q.Exec("UPDATE c_customer SET c_credit_limit = ? WHERE c_id = ?", total, customer)
		if _, err := b.newOrder(ctx, customer, false, one); !errors.Is(err, ErrBadCredit) {
			t.Fatalf("an order with the balance at the limit: %v, want ErrBadCredit", err)
		}
		// Payments this year that cover it make it good.
		q.Exec("UPDATE c_customer SET c_ytd_payment = ? WHERE c_id = ?", 2*total, customer)
		second, err := b.newOrder(ctx, customer, false, one)
		if err != nil {
			t.Fatalf("an order covered by this year's payments: %v", err)
		}
		if got := balance(); got != 2*total {
			t.Fatalf("balance %d after two orders of %d, want %d", got, total, 2*total)
		}
		if err := b.cancelOrder(ctx, first, allLines[:]); err != nil {
			t.Fatal(err)
		}
		if got := balance(); got != total {
			t.Fatalf("balance %d after cancelling one of two orders of %d, want %d", got, total, total)
		}
		if err := b.changeOrder(ctx, second, allLines[:], +3); err != nil {
			t.Fatal(err)
		}
		changed := q.Int("SELECT o_total FROM o_orders WHERE o_id = ?", second)
		if got := balance(); got != changed || changed <= total {
			t.Fatalf("balance %d after the order changed from %d to %d, want %d", got, total, changed, changed)
		}
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		succeeded := make([]int64, numOps)
		succeeded[NewOrder], succeeded[CancelOrder] = 2, 1
		details := passedChecks(t, a, workload.Outcomes{Succeeded: succeeded})
		if d := details["balances-match-orders"]; !strings.HasPrefix(d, "0 customers") {
			t.Errorf("balances-match-orders: %s", d)
		}
	})
}
