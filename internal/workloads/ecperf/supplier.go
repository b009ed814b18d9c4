package ecperf

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// purchase is the supplier domain's part of ScheduleWorkOrder: choose the
// supplier of each component (cheapest, then quickest), create one PO per
// supplier with a line per component, and dispatch it: sync sends it now,
// inside the transaction, which holds its locks across the call; poller
// leaves it unsent for the agent; queue writes its outbox row.
func (b *bean) purchase(ctx context.Context, tx *container.Tx, reorders []reorder, now time.Time) error {
	a := b.app
	choices := make([]choice, 0, len(reorders))
	for _, r := range reorders {
		var err error
		if b.found, err = tx.FindMany(a.suppComponent, "byPart", b.found[:0], r.part); err != nil {
			return err
		}
		if len(b.found) == 0 {
			return fmt.Errorf("ecperf: no supplier sells part %d", r.part)
		}
		sc := b.found[0]
		choices = append(choices, choice{reorder: r, supplier: sc.Key().B, lead: sc.Int(scLeadTime)})
	}
	status := a.dispatch.newPOStatus()
	for _, po := range byPO(choices) {
		p, err := tx.Create(a.purchaseOrder, container.Key{})
		if err != nil {
			return err
		}
		number := p.Key().A
		p.SetInt(poSupplier, po[0].supplier)
		p.SetInt(poSite, siteID)
		p.SetInt(poStatus, status)
		p.SetTime(poCreated, now)
		for n, c := range po {
			l, err := tx.Create(a.poLine, container.Key{A: number, B: int64(n + 1)})
			if err != nil {
				return err
			}
			l.SetInt(polPart, c.part)
			l.SetInt(polQty, c.qty)
			l.SetInt(polBalance, c.qty)
			l.SetTime(polDelDate, now.Add(time.Duration(c.lead)*a.dispatch.unit))
			l.SetString(polMessage, "")
		}
		err = a.dispatch.created(ctx, number, po, &b.sentInTx, func() error {
			ob, err := tx.Create(a.outbox, container.Key{A: number})
			if err == nil {
				ob.SetTime(0, now)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// choice is a component to reorder from the supplier chosen for it.
type choice struct {
	reorder
	supplier, lead int64
}

// byPO groups choices into POs, one per supplier: POs in supplier order
// and lines in part order, so two transactions never create them in
// opposite orders. choices is sorted in place.
func byPO(choices []choice) [][]choice {
	slices.SortFunc(choices, func(x, y choice) int {
		return cmp.Or(cmp.Compare(x.supplier, y.supplier), cmp.Compare(x.part, y.part))
	})
	var out [][]choice
	for i := 0; i < len(choices); {
		j := i
		for j < len(choices) && choices[j].supplier == choices[i].supplier {
			j++
		}
		out = append(out, choices[i:j])
		i = j
	}
	return out
}

// newPOStatus is the status a new PO is created with: sync sends it
// before the commit, which happens only if the send succeeded.
func (d *dispatch) newPOStatus() int64 {
	if d.mode == dispatchSync {
		return poSent
	}
	return poUnsent
}

// created dispatches PO number, just created with lines po, as
// --po-dispatch says: sync sends it now, inside the transaction (and
// records it in sent), queue writes its outbox row (outbox), poller
// leaves it for the agent.
func (d *dispatch) created(ctx context.Context, number int64, po []choice, sent *[]int64, outbox func() error) error {
	switch d.mode {
	case dispatchSync:
		doc := emulator.PO{PONumber: number, SupplierID: po[0].supplier, SiteID: siteID}
		for n, c := range po {
			doc.Lines = append(doc.Lines, emulator.POLine{Line: n + 1, PartID: strconv.FormatInt(c.part, 10), Qty: int(c.qty), LeadTime: int(c.lead)})
		}
		if err := d.send(ctx, doc); err != nil {
			return err
		}
		*sent = append(*sent, number)
	case dispatchQueue:
		return outbox()
	}
	return nil
}

// sendUnsent is the agents' send of PO number (poller and queue): read it,
// send it, mark it sent. A PO already sent is not sent again; a crash
// between the send and the mark sends it again, and the emulator, an
// idempotent receiver, answers "duplicate".
func (b *bean) sendUnsent(ctx context.Context, number int64) error {
	a := b.app
	tx, err := a.ctr.BeginReadOnly(ctx, b.thread)
	if err != nil {
		return err
	}
	po, err := tx.Find(a.purchaseOrder, container.Key{A: number})
	if err != nil {
		return fail(tx, err, nil) // committed with its outbox row or found unsent: it exists
	}
	if po.Int(poStatus) != poUnsent {
		return tx.Commit()
	}
	doc := emulator.PO{PONumber: number, SupplierID: po.Int(poSupplier), SiteID: po.Int(poSite)}
	created := po.Time(poCreated)
	if b.lines, err = tx.FindMany(a.poLine, "byPO", b.lines[:0], number); err != nil {
		return fail(tx, err, nil)
	}
	for _, l := range b.lines {
		lead := int(l.Time(polDelDate).Sub(created).Round(a.dispatch.unit) / a.dispatch.unit)
		doc.Lines = append(doc.Lines, emulator.POLine{Line: int(l.Key().B), PartID: strconv.FormatInt(l.Int(polPart), 10), Qty: int(l.Int(polQty)), LeadTime: lead})
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if err := a.dispatch.send(ctx, doc); err != nil {
		return err
	}
	if tx, err = b.begin(ctx); err != nil {
		return err
	}
	if po, err = tx.Find(a.purchaseOrder, container.Key{A: number}); err != nil {
		return fail(tx, err, nil)
	}
	if po.Int(poStatus) == poUnsent {
		po.SetInt(poStatus, poSent)
	}
	return tx.Commit()
}

// receive is the supplier domain's receipt of a delivery: the PO's lines
// are settled and the parts go into inventory. A delivery received twice
// changes nothing the second time; applied says whether this one did.
func (b *bean) receive(ctx context.Context, d emulator.Delivery) (applied bool, err error) {
	a := b.app
	tx, err := b.begin(ctx)
	if err != nil {
		return false, err
	}
	po, err := tx.Find(a.purchaseOrder, container.Key{A: d.PONumber})
	if err != nil {
		return false, fail(tx, err, nil)
	}
	if po.Int(poStatus) == poReceived {
		tx.Rollback()
		return false, nil
	}
	lines := slices.Clone(d.Lines)
	if !a.unsorted {
		slices.SortFunc(lines, func(x, y emulator.DeliveryLine) int { return cmp.Compare(partID(x.PartID), partID(y.PartID)) })
	}
	now := time.Now().UTC()
	for _, dl := range lines {
		l, err := tx.Find(a.poLine, container.Key{A: d.PONumber, B: int64(dl.Line)})
		if err != nil {
			return false, fail(tx, err, nil)
		}
		qty := l.Int(polBalance)
		l.SetInt(polBalance, 0)
		l.SetTime(polDelDate, now)
		inv, err := tx.Find(a.inventory, container.Key{A: l.Int(polPart)})
		if err != nil {
			return false, fail(tx, err, nil)
		}
		inv.SetInt(inQty, inv.Int(inQty)+qty)
		inv.SetInt(inOrdered, inv.Int(inOrdered)-qty)
		inv.SetTime(inActDate, now)
	}
	po.SetInt(poStatus, poReceived)
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return true, nil
}

// partID is a wire part id as the schema's key; a malformed one sorts
// first and then fails to be found.
func partID(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
