package ecperf

import (
	"context"
	"time"

	"github.com/tierbench/tierbench/internal/container"
)

// workOrder is what a planned line or the large-order line asks to build.
type workOrder struct {
	assembly, qty int64
	// order and line of a large order (0 for a planned work order);
	// largeOrder is the large order to remove.
	order, line, largeOrder int64
}

// reorder is a component to buy from the supplier domain.
type reorder struct {
	part, qty int64
}

// scheduleWorkOrder is the manufacturing domain's ScheduleWorkOrder: the
// work order, the bill of materials' parts taken from inventory, and for
// each component at or below its low mark a reorder up to its high mark
// through the supplier domain, whose purchase orders are dispatched as
// --po-dispatch says (sync: sent before this transaction commits).
func (b *bean) scheduleWorkOrder(ctx context.Context, w workOrder) (int64, error) {
	a := b.app
	tx, err := b.begin(ctx)
	if err != nil {
		return 0, err
	}
	b.sentInTx = b.sentInTx[:0]
	now := time.Now().UTC()
	if w.largeOrder != 0 {
		lo, err := tx.Find(a.largeOrder, container.Key{A: w.largeOrder})
		if err != nil {
			return 0, fail(tx, err, errLargeOrderCancelled)
		}
		// The quantity as it is now: a ChangeOrder since the line listed
		// it may have changed it.
		w.qty = lo.Int(loQty)
		tx.Remove(lo)
	}
	wo, err := tx.Create(a.workOrder, container.Key{})
	if err != nil {
		return 0, fail(tx, err, nil)
	}
	number := wo.Key().A
	wo.SetInt(woOrder, w.order)
	wo.SetInt(woOrderLine, w.line)
	wo.SetInt(woStatus, woOpen)
	wo.SetInt(woAssembly, w.assembly)
	wo.SetInt(woOrigQty, w.qty)
	wo.SetInt(woCompQty, 0)
	wo.SetTime(woDueDate, now.Add(shipAfter))
	wo.SetTime(woStartDate, now)

	finder := "byAssembly" // components in key order
	if a.unsorted {
		finder = "byAssemblyLine"
	}
	if b.bom, err = tx.FindMany(a.bom, finder, b.bom[:0], w.assembly); err != nil {
		return 0, fail(tx, err, nil)
	}
	var reorders []reorder
	for _, line := range b.bom {
		part := line.Key().B
		inv, err := tx.Find(a.inventory, container.Key{A: part})
		if err != nil {
			return 0, fail(tx, err, nil)
		}
		inv.SetInt(inQty, inv.Int(inQty)-line.Int(bQty)*w.qty)
		inv.SetTime(inActDate, now)
		p, err := tx.Find(a.part, container.Key{A: part})
		if err != nil {
			return 0, fail(tx, err, nil)
		}
		if available := inv.Int(inQty) + inv.Int(inOrdered); available <= p.Int(pLomark) {
			qty := p.Int(pHimark) - available
			inv.SetInt(inOrdered, inv.Int(inOrdered)+qty)
			reorders = append(reorders, reorder{part: part, qty: qty})
		}
	}
	if len(reorders) > 0 {
		if err := b.purchase(ctx, tx, reorders, now); err != nil {
			a.dispatch.abortedAfterSending(b.sentInTx)
			return 0, fail(tx, err, nil)
		}
	}
	if err := tx.Commit(); err != nil {
		// In doubt or not, the sends stand: a PO that did commit is in the
		// database and so no orphan, whatever this record says.
		a.dispatch.abortedAfterSending(b.sentInTx)
		return 0, err
	}
	if len(reorders) > 0 {
		a.dispatch.committed()
	}
	return number, nil
}

// workOrderBefore begins a transaction and finds work order number, whose
// status must be below status; on error the transaction is over.
func (b *bean) workOrderBefore(ctx context.Context, number, status int64) (*container.Tx, *container.Instance, error) {
	tx, err := b.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	wo, err := tx.Find(b.app.workOrder, container.Key{A: number})
	if err != nil {
		return nil, nil, fail(tx, err, ErrNoWorkOrder)
	}
	if wo.Int(woStatus) >= status {
		tx.Rollback()
		return nil, nil, ErrNoWorkOrder
	}
	return tx, wo, nil
}

// updateWorkOrder moves a work order to its next station.
func (b *bean) updateWorkOrder(ctx context.Context, number int64) error {
	tx, wo, err := b.workOrderBefore(ctx, number, woCompleted-1)
	if err != nil {
		return err
	}
	wo.SetInt(woStatus, wo.Int(woStatus)+1)
	return tx.Commit()
}

// completeWorkOrder finishes a work order and puts the assemblies into
// inventory.
func (b *bean) completeWorkOrder(ctx context.Context, number int64) error {
	a := b.app
	tx, wo, err := b.workOrderBefore(ctx, number, woCompleted)
	if err != nil {
		return err
	}
	wo.SetInt(woStatus, woCompleted)
	wo.SetInt(woCompQty, wo.Int(woOrigQty))
	inv, err := tx.Find(a.inventory, container.Key{A: wo.Int(woAssembly)})
	if err != nil {
		return fail(tx, err, nil)
	}
	inv.SetInt(inQty, inv.Int(inQty)+wo.Int(woOrigQty))
	inv.SetTime(inActDate, time.Now().UTC())
	return tx.Commit()
}

// largeOrders lists the large orders waiting for a work order.
func (b *bean) largeOrders(ctx context.Context, buf []workOrder) ([]workOrder, error) {
	a := b.app
	tx, err := a.ctr.BeginReadOnly(ctx, b.thread)
	if err != nil {
		return buf, err
	}
	if b.found, err = tx.FindMany(a.largeOrder, "pending", b.found[:0], int64(0)); err != nil {
		return buf, fail(tx, err, nil)
	}
	for _, lo := range b.found {
		buf = append(buf, workOrder{assembly: lo.Int(loAssembly), qty: lo.Int(loQty), order: lo.Int(loOrder), line: lo.Int(loOrderLine), largeOrder: lo.Key().A})
	}
	return buf, tx.Commit()
}
