package tpcapp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp/partner"
)

// The background processes, durable: CreateOrder's transaction writes the
// order's id into ship_outbox; the outbox's relay publishes it to a
// JetStream queue after the commit; shipping agents take it off the queue
// and ship the order in one transaction (stock down, lines and order
// SHIPPED, a shipment row whose key makes a second shipment of the order
// fail). A shipment that leaves an item's stock under reorderThreshold
// marks the stock pending and writes a reorder and its outbox row; an
// inventory agent asks ICE for the stock and receives it in a transaction
// guarded by the reorder's status. An order is queued iff its transaction
// committed, shipped exactly once, and a reorder received exactly once,
// whatever is redelivered or restarted.
//
// Once an order has shipped, the same agent sends SNE the shipping notice
// with a label image (label.go), outside the transaction, then marks the
// shipment noticed; the queue's message is acknowledged only then. A
// notice that fails leaves the message to be redelivered: the shipment is
// found made, and the notice sent again. SNE answers a notice it has seen
// as a duplicate, so each shipped order is noticed exactly once.

// relayInterval is how often the outboxes' relays look for rows besides
// the kicks of the commits that write them.
const relayInterval = 100 * time.Millisecond

type shipping struct {
	db      *store.DB
	broker  *messaging.Broker
	ice     *partner.Client
	sne     *partner.Client
	runName string // ICE's and SNE's name for this run's reorders and notices

	shipQ, reorderQ     *messaging.Queue
	shipOut, reorderOut *messaging.Outbox
	consumers           []*messaging.Consumer
	cancel              context.CancelFunc
	relays              sync.WaitGroup

	st shipStmts

	shipped, shipDuplicates, reordered, received, receiveDuplicates, iceFailures atomic.Int64
	// noticed: notices SNE acknowledged and the shipment then marked;
	// noticeResent: those SNE answered as duplicates; sneFailures: calls
	// to SNE that failed (each retried); labelBytes: the labels sent.
	noticed, noticeResent, sneFailures, labelBytes atomic.Int64
}

type shipStmts struct {
	insertShipment, lines, takeStock, lineStatus, markPending, insertReorder, insertReorderOutbox,
	orderShipped, shipmentLines, reorder, receive, restock, notice, noticed *store.Stmt
}

func shipStatements(s *shipStmts) []stmtEntry {
	return []stmtEntry{
		{&s.insertShipment, store.Statement{Name: "tpcapp-insert-shipment", SQL: "INSERT INTO shipment (sh_o_id, sh_date, sh_lines) VALUES (?, ?, 0)"}},
		{&s.lines, store.Statement{Name: "tpcapp-ship-lines", SQL: "SELECT ol_id, ol_i_id, ol_qty FROM order_line WHERE ol_o_id = ? ORDER BY ol_i_id, ol_id"}},
		// The guarded decrement: stock never goes below zero.
		{&s.takeStock, store.Statement{Name: "tpcapp-take-stock", SQL: "UPDATE stock SET s_qty = s_qty - ? WHERE s_i_id = ? AND s_qty >= ?"}},
		{&s.lineStatus, store.Statement{Name: "tpcapp-line-status", SQL: "UPDATE order_line SET ol_status = ? WHERE ol_id = ?"}},
		// At most one reorder of an item pending: the flag is set under the
		// stock row's lock by the shipment that took the stock low.
		{&s.markPending, store.Statement{Name: "tpcapp-mark-pending", SQL: "UPDATE stock SET s_pending = 1 WHERE s_i_id = ? AND s_qty < ? AND s_pending = 0"}},
		{&s.insertReorder, store.InsertReturning("tpcapp-insert-reorder", "INSERT INTO reorder (r_i_id, r_qty, r_status, r_requested) VALUES (?, ?, 'PENDING', ?)", "r_id")},
		{&s.insertReorderOutbox, store.Statement{Name: "tpcapp-insert-reorder-outbox", SQL: "INSERT INTO reorder_outbox (ro_r_id, ro_created) VALUES (?, ?)"}},
		{&s.orderShipped, store.Statement{Name: "tpcapp-order-shipped", SQL: "UPDATE orders SET o_status = ?, o_ship_date = ? WHERE o_id = ?"}},
		{&s.shipmentLines, store.Statement{Name: "tpcapp-shipment-lines", SQL: "UPDATE shipment SET sh_lines = ? WHERE sh_o_id = ?"}},
		{&s.reorder, store.Statement{Name: "tpcapp-reorder", SQL: "SELECT r_i_id, r_qty, r_status FROM reorder WHERE r_id = ?"}},
		{&s.receive, store.Statement{Name: "tpcapp-receive", SQL: "UPDATE reorder SET r_status = 'RECEIVED', r_received = ? WHERE r_id = ? AND r_status = 'PENDING'"}},
		{&s.restock, store.Statement{Name: "tpcapp-restock", SQL: "UPDATE stock SET s_qty = s_qty + ?, s_pending = 0 WHERE s_i_id = ?"}},
		{&s.notice, store.Statement{Name: "tpcapp-notice", SQL: "SELECT s.sh_noticed, s.sh_date, s.sh_lines, o.o_ship_type FROM shipment s JOIN orders o ON o.o_id = s.sh_o_id WHERE s.sh_o_id = ?"}},
		{&s.noticed, store.Statement{Name: "tpcapp-noticed", SQL: "UPDATE shipment SET sh_noticed = 1 WHERE sh_o_id = ? AND sh_noticed = 0"}},
	}
}

// queueNames are the JetStream streams of a database: one database's
// messages never reach another's agents.
func queueNames(dsn string) (ship, reorder string) {
	h := dbTag(dsn)
	return "TPCAPP_SHIP_" + h, "TPCAPP_REORDER_" + h
}

// startShipping opens the broker, the queues and the outboxes, and starts
// agents shipping agents and as many inventory agents, agent i on server
// thread firstThread+i.
func startShipping(ctx context.Context, db *store.DB, ice, sne *partner.Client, broker messaging.Config, fresh bool, agents, firstThread int, runName string) (_ *shipping, err error) {
	s := &shipping{db: db, ice: ice, sne: sne, runName: runName}
	if err := prepareAll(ctx, db, shipStatements(&s.st)); err != nil {
		return nil, err
	}
	if s.broker, err = messaging.OpenWith(ctx, broker); err != nil {
		return nil, brokerError(err)
	}
	defer func() {
		if err != nil {
			s.close(context.WithoutCancel(ctx))
		}
	}()
	shipName, reorderName := queueNames(db.DSN().String())
	if fresh {
		// A fresh population: an earlier run's messages name orders and
		// reorders that no longer exist.
		for _, q := range []string{shipName, reorderName} {
			if err := s.broker.DeleteQueue(ctx, q); err != nil {
				return nil, err
			}
		}
	}
	if s.shipQ, err = s.broker.Queue(ctx, shipName); err != nil {
		return nil, brokerError(err)
	}
	if s.reorderQ, err = s.broker.Queue(ctx, reorderName); err != nil {
		return nil, brokerError(err)
	}
	// Message ids carry the run's name: ids repeat after a reload.
	if s.shipOut, err = messaging.NewOutbox(ctx, db, s.shipQ, messaging.OutboxConfig{Table: "ship_outbox", IDColumn: "so_o_id", MessageIDPrefix: runName + "/"}); err != nil {
		return nil, err
	}
	if s.reorderOut, err = messaging.NewOutbox(ctx, db, s.reorderQ, messaging.OutboxConfig{Table: "reorder_outbox", IDColumn: "ro_r_id", MessageIDPrefix: runName + "/"}); err != nil {
		return nil, err
	}
	agentCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	for _, o := range []*messaging.Outbox{s.shipOut, s.reorderOut} {
		s.relays.Add(1)
		go func() {
			defer s.relays.Done()
			o.Run(agentCtx, relayInterval)
		}()
	}
	for i := range agents {
		shipper := db.Thread(firstThread + i)
		c, err := s.shipQ.ConsumeWith(agentCtx, messaging.ConsumerConfig{Durable: "shipping", Prefetch: 1}, func(ctx context.Context, data []byte) error {
			id, err := strconv.ParseInt(string(data), 10, 64)
			if err != nil {
				return nil // not ours; acknowledged so that it does not loop
			}
			if err := s.ship(ctx, shipper, id); err != nil {
				return err
			}
			return s.notify(ctx, shipper, id)
		})
		if err != nil {
			return nil, err
		}
		s.consumers = append(s.consumers, c)
		receiver := db.Thread(firstThread + agents + i)
		c, err = s.reorderQ.ConsumeWith(agentCtx, messaging.ConsumerConfig{Durable: "inventory", Prefetch: 1}, func(ctx context.Context, data []byte) error {
			id, err := strconv.ParseInt(string(data), 10, 64)
			if err != nil {
				return nil
			}
			return s.receive(ctx, receiver, id)
		})
		if err != nil {
			return nil, err
		}
		s.consumers = append(s.consumers, c)
	}
	return s, nil
}

// brokerError is err of the broker's opening or its queues' creation:
// more stream replicas than the broker can keep is a usage error.
func brokerError(err error) error {
	if errors.Is(err, messaging.ErrReplicas) {
		return config.Usage(err)
	}
	return fmt.Errorf("--broker: %w", err)
}

func (s *shipping) kick() { s.shipOut.Kick() }

var errShippedBefore = errors.New("shipped before")

// ship ships order id, once: a redelivered message finds its shipment.
func (s *shipping) ship(ctx context.Context, sess *store.Session, id int64) error {
	now := time.Now().UTC().Truncate(time.Second)
	reorders := 0
	err := sess.InTx(ctx, func(tx *store.Tx) error {
		reorders = 0
		// The shipment row first: a second shipment of the order waits
		// here for the first to end, then fails on the key.
		if _, err := tx.Exec(ctx, s.st.insertShipment, id, now); errors.Is(err, store.ErrUniqueViolation) {
			return errShippedBefore
		} else if err != nil {
			return err
		}
		type line struct{ id, item, qty int64 }
		lines, err := store.Collect(ctx, tx, s.st.lines, func(l *line) []any { return []any{&l.id, &l.item, &l.qty} }, id)
		if err != nil {
			return err
		}
		shipped := 0
		for _, l := range lines {
			res, err := tx.Exec(ctx, s.st.takeStock, l.qty, l.item, l.qty)
			if err != nil {
				return err
			}
			status := StatusBackOrdered
			if res.RowsAffected == 1 {
				status = StatusShipped
				shipped++
			}
			tx.Queue(s.st.lineStatus, status, l.id)
			res, err = tx.Exec(ctx, s.st.markPending, l.item, reorderThreshold)
			if err != nil {
				return err
			}
			if res.RowsAffected == 1 {
				r, err := store.InsertID(ctx, tx, s.st.insertReorder, l.item, reorderQty, now)
				if err != nil {
					return err
				}
				tx.Queue(s.st.insertReorderOutbox, r, now)
				reorders++
			}
		}
		status := StatusShipped
		if shipped < len(lines) {
			status = StatusPartial
		}
		tx.Queue(s.st.orderShipped, status, now, id)
		tx.Queue(s.st.shipmentLines, shipped, id)
		return nil
	})
	switch {
	case errors.Is(err, errShippedBefore):
		s.shipDuplicates.Add(1)
		return nil
	case err != nil:
		return err
	}
	s.shipped.Add(1)
	if reorders > 0 {
		s.reordered.Add(int64(reorders))
		s.reorderOut.Kick()
	}
	return nil
}

// notify sends SNE the notice of order id's shipment, unless it was
// acknowledged before, and marks the shipment noticed.
func (s *shipping) notify(ctx context.Context, sess *store.Session, id int64) error {
	var noticed, lines int64
	var date time.Time
	var shipType string
	err := sess.QueryRow(ctx, s.st.notice, id).Scan(&noticed, &date, &lines, &shipType)
	if errors.Is(err, store.ErrNotFound) || noticed == 1 {
		return nil
	}
	if err != nil {
		return err
	}
	label, err := shippingLabel(id, shipType, int(lines))
	if err != nil {
		return err
	}
	res, err := s.sne.Notify(ctx, partner.NoticeRequest{Run: s.runName, OrderID: id, ShipDate: date.UTC().Format(time.RFC3339),
		ShipType: shipType, Lines: int(lines), Label: label})
	if err != nil {
		s.sneFailures.Add(1)
		return err // redelivered after the consumer's back-off
	}
	s.labelBytes.Add(int64(len(label)))
	if res.Duplicate {
		s.noticeResent.Add(1)
	}
	r, err := sess.Exec(ctx, s.st.noticed, id)
	if err != nil {
		return err
	}
	if r.RowsAffected == 1 {
		s.noticed.Add(1)
	}
	return nil
}

// receive asks ICE for reorder id's stock and adds it, once.
func (s *shipping) receive(ctx context.Context, sess *store.Session, id int64) error {
	var item, qty int64
	var status string
	err := sess.QueryRow(ctx, s.st.reorder, id).Scan(&item, &qty, &status)
	if errors.Is(err, store.ErrNotFound) || status == "RECEIVED" {
		if status == "RECEIVED" {
			s.receiveDuplicates.Add(1)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := s.ice.Reorder(ctx, partner.ReorderRequest{Run: s.runName, ReorderID: id, ItemID: item, Quantity: qty}); err != nil {
		s.iceFailures.Add(1)
		return err // redelivered after the consumer's back-off
	}
	now := time.Now().UTC().Truncate(time.Second)
	got := false
	err = sess.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, s.st.receive, now, id)
		if err != nil {
			return err
		}
		got = res.RowsAffected == 1
		if got {
			tx.Queue(s.st.restock, qty, item)
		}
		return nil
	})
	if err == nil {
		if got {
			s.received.Add(1)
		} else {
			s.receiveDuplicates.Add(1)
		}
	}
	return err
}

// backlog is what the background processes still have to do: rows in the
// outboxes, orders without a shipment, reorders not received.
type backlog struct {
	outboxed, unshipped, unreceived, unnoticed int64
}

func (b backlog) empty() bool { return b == backlog{} }

func (b backlog) String() string {
	return fmt.Sprintf("%d orders to ship, %d shipping notices to send, %d reorders to receive, %d rows to relay", b.unshipped, b.unnoticed, b.unreceived, b.outboxed)
}

// close stops the agents and the relays, then the broker.
func (s *shipping) close(ctx context.Context) error {
	for _, c := range s.consumers {
		c.StopContext(ctx)
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.relays.Wait()
	if s.broker != nil {
		return s.broker.CloseContext(ctx)
	}
	return nil
}
