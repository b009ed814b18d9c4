// Package ecperf is the ECperf workload (ECperf 1.1; Kounev & Buchmann,
// "Improving Data Access of J2EE Applications by Exploiting Asynchronous
// Messaging and Caching Services", and "Performance Issues in E-Business
// Systems"): a manufacturing, supply-chain and order-entry company in four
// domains — customer orders, manufacturing, supplier, corporate — driven
// at an injection rate Ir, measured in BBops/min.
//
// Files, named as in every workload package: workload.go (the Workload,
// its operations, mix and defaults, and the run's wiring), schema.go and
// schema/*.sql (the kit's tables), population.go and load.go (the kit's
// scaling in Ir), entities.go (the entity types); the transactions are
// one file per domain, as the kit groups them — orders.go, manufacturing.go
// and supplier.go, on the entity container; direct.go, the same
// transactions as hand-written SQL (--persistence direct); dispatch.go, resend.go and
// drain.go (how purchase orders reach the Supplier Emulator: sync, poller
// or queue, and how a run stops with some in flight), client.go (the
// terminals' choices), check.go (consistency after a run). The emulator
// itself is the emulator subpackage; durable queues are
// internal/messaging.
package ecperf

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// The operations; the order is their id.
const (
	NewOrder = iota
	ChangeOrder
	CancelOrder
	OrderStatus
	CustomerStatus
	ScheduleWorkOrder
	UpdateWorkOrder
	CompleteWorkOrder
	LargeOrderLine
	numOps
)

var opNames = [numOps]string{
	NewOrder:          "NewOrder",
	ChangeOrder:       "ChangeOrder",
	CancelOrder:       "CancelOrder",
	OrderStatus:       "OrderStatus",
	CustomerStatus:    "CustomerStatus",
	ScheduleWorkOrder: "ScheduleWorkOrder",
	UpdateWorkOrder:   "UpdateWorkOrder",
	CompleteWorkOrder: "CompleteWorkOrder",
	LargeOrderLine:    "LargeOrderLine",
}

// The kit's constants.
const (
	// Order-entry: 5·Ir terminals, negative-exponential cycle times of
	// mean 5 s cut at 5×.
	orderTerminalsPerIr = 5
	orderCycleMean      = 5 * time.Second
	orderCycleTruncate  = 5
	// Manufacturing: 3·Ir planned lines, stations 333 ms apart; one
	// large-order line polling every second.
	plannedLinesPerIr  = 3
	stationDelay       = 333 * time.Millisecond
	largeOrderPoll     = time.Second
	largeOrderQty      = 20 // an order line above this is a large order
	defaultLeadTimeDay = 5 * time.Second
	shipAfter          = 7 * 24 * time.Hour

	goodCredit        = "GC"
	badCredit         = "BC"
	newCustomerCredit = 100_000_00 // cents
	siteID            = 1
)

// Workload is ECperf.
type Workload struct{}

var _ workload.Workload = Workload{}

// New returns the workload for the registry.
func New() Workload { return Workload{} }

// orderMix is the order-entry terminals' mix: NewOrder 50%, ChangeOrder
// 20% of which a fifth are cancels, OrderStatus 20%, CustomerStatus 10%.
func orderMix() workload.Mix {
	return workload.Mix{Kind: workload.Weighted, Cards: []workload.Card{
		{Op: NewOrder, Count: 50}, {Op: ChangeOrder, Count: 16}, {Op: CancelOrder, Count: 4},
		{Op: OrderStatus, Count: 20}, {Op: CustomerStatus, Count: 10},
	}}
}

// plannedLine is a planned line's work order: schedule, then three
// stations each stationDelay apart.
func plannedLine(scale float64) workload.Mix {
	d := time.Duration(float64(stationDelay) * scale)
	return workload.Mix{Kind: workload.Sequence, Cards: []workload.Card{
		{Op: ScheduleWorkOrder, Count: 1, Delay: d}, {Op: UpdateWorkOrder, Count: 1, Delay: d},
		{Op: UpdateWorkOrder, Count: 1, Delay: d}, {Op: CompleteWorkOrder, Count: 1, Delay: d},
	}}
}

func (Workload) Info() workload.Info {
	return workload.Info{
		Name:       "ecperf",
		Title:      "ECperf: order entry, manufacturing, supply chain and corporate domains",
		Reference:  "ECperf 1.1 kit; Kounev & Buchmann (2002, 2003)",
		Operations: opNames[:],
		Mix:        orderMix(),
		// BBops/min: order-entry transactions plus work orders completed.
		Metric: workload.Metric{Name: "BBops/min", Per: time.Minute,
			Ops: []string{"NewOrder", "ChangeOrder", "CancelOrder", "OrderStatus", "CustomerStatus", "CompleteWorkOrder"}},
		Defaults: config.Defaults{
			Clients:       1, // the terminals come from Ir
			ServerThreads: 20,
			Duration:      2 * time.Minute,
			RampUp:        20 * time.Second,
			RampDown:      0,
		},
		Persistence: []container.Persistence{container.CMP, container.BMP, container.BMPChecked, container.Direct},
		Entities:    entityTypes,
		Grouped:     true,
		Options:     DefaultOptions,
		Example:     "--ir 2 --po-dispatch queue --cycle-scale 0.1 --duration 30s --ramp-up 5s",
		Validity: &workload.Validity{
			ResponseTimes: []workload.ResponseTime{
				{Ops: []string{"NewOrder", "ChangeOrder", "CancelOrder", "OrderStatus", "CustomerStatus"}, Quantile: 0.9, Max: 2 * time.Second},
				{Ops: []string{"ScheduleWorkOrder", "UpdateWorkOrder", "CompleteWorkOrder"}, Quantile: 0.9, Max: 5 * time.Second},
			},
			Mix: []workload.Share{
				{Ops: []string{"NewOrder"}, Percent: 50}, {Ops: []string{"ChangeOrder", "CancelOrder"}, Percent: 20},
				{Ops: []string{"OrderStatus"}, Percent: 20}, {Ops: []string{"CustomerStatus"}, Percent: 10},
			},
			MixTolerance: 0.05,
		},
	}
}

func (Workload) Load(ctx context.Context, db *store.DB, p workload.LoadParams) (workload.LoadReport, error) {
	return load(ctx, db, p)
}

// app is ECperf readied for one run: the homes, the reference data, the
// dispatch of purchase orders.
type app struct {
	ctr      *container.Container
	ir       int
	pop      population
	scale    float64
	unsorted bool
	// discounts by rule (c_discount), in percent.
	discounts map[string]int64
	// beans are the server threads' domains: the container's session
	// beans, or hand-written SQL under --persistence direct.
	beans    []domains
	dispatch *dispatch
	checker  *checker
	// listed is the emulator's record of the run's POs, taken by Stop;
	// listErr why it could not be taken.
	listed  []emulator.POSummary
	listErr error
	// largeScheduled and largeCompleted count the work orders the
	// large-order lines scheduled and completed.
	largeScheduled, largeCompleted atomic.Int64
	// drain is the state of Stop's wait for the POs (drain.go).
	drain drainState
	// Stop runs once: a test's cleanup and the run may both call it.
	stopOnce sync.Once
	stopErr  error

	customer, orderCustomer, order, orderLine, item, itemRW, part, bom, workOrder, largeOrder,
	inventory, suppComponent, purchaseOrder, poLine, outbox *container.Home
	// priceEvery: one NewOrder in priceEvery changes an item's price
	// (--price-change-every; 0: none).
	priceEvery int
}

var (
	_ workload.EntityRun  = (*app)(nil)
	_ workload.Grouped    = (*app)(nil)
	_ workload.Stopper    = (*app)(nil)
	_ workload.StopStatus = (*app)(nil)
)

// Start readies a run: the container, the reference data, the emulator
// (in-process unless --emulator), the delivery receiver, and the agents of
// --po-dispatch.
func (Workload) Start(ctx context.Context, db *store.DB, p workload.RunParams) (workload.Run, error) {
	cfg := optionsOf(p.Options)
	a := &app{ir: max(p.Scale, 1), pop: populationAt(max(p.Scale, 1)), scale: cfg.CycleScale, unsorted: cfg.UnsortedAccess, priceEvery: cfg.PriceChangeEvery}
	if a.scale <= 0 {
		a.scale = 1
	}
	threads := max(p.Threads, 1)
	// The agents' threads follow the terminals': the receiver, then the
	// senders.
	newThread, err := a.domainsOf(ctx, db, p)
	if err != nil {
		return nil, err
	}
	for i := 0; i < threads; i++ {
		a.beans = append(a.beans, newThread(i))
	}
	if a.discounts, err = readDiscounts(ctx, db); err != nil {
		return nil, err
	}
	if _, err = reclaimSent(ctx, db); err != nil {
		return nil, err
	}
	if a.checker, err = newChecker(ctx, db); err != nil {
		return nil, err
	}
	if err = startDispatch(ctx, db, a, cfg, p.Common.NoLoad, p.Dir, threads, newThread); err != nil {
		return nil, err
	}
	return a, nil
}

// domainsOf readies the run's persistence and returns how to make a
// server thread's domains: session beans on the entity container, or the
// hand-written SQL of --persistence direct.
func (a *app) domainsOf(ctx context.Context, db *store.DB, p workload.RunParams) (func(thread int) domains, error) {
	if !p.Persistence.Container() {
		stmts, err := prepareDirect(ctx, db)
		if err != nil {
			return nil, err
		}
		return func(thread int) domains { return &direct{directStmts: stmts, app: a, db: db.Thread(thread)} }, nil
	}
	var err error
	if a.ctr, err = p.NewContainer(ctx, db, entityTypes); err != nil {
		return nil, err
	}
	home := func(t *container.Type) *container.Home { return a.ctr.Home(t.Name) }
	a.customer, a.orderCustomer, a.order, a.orderLine, a.item = home(customerType), home(orderCustomerType), home(orderType), home(orderLineType), home(itemType)
	a.itemRW = home(itemRWType)
	a.part, a.bom, a.workOrder, a.largeOrder, a.inventory = home(partType), home(bomType), home(workOrderType), home(largeOrderType), home(inventoryType)
	a.suppComponent, a.purchaseOrder, a.poLine, a.outbox = home(suppComponentType), home(purchaseOrderType), home(poLineType), home(outboxType)
	return func(thread int) domains { return &bean{app: a, thread: thread} }, nil
}

// readDiscounts reads the corporate domain's discount rules.
func readDiscounts(ctx context.Context, db *store.DB) (map[string]int64, error) {
	s, err := db.Prepare(ctx, store.Statement{Name: "ecperf-discounts", SQL: "SELECT d_id, d_percent FROM c_discount"})
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("read c_discount: %w", err)
	}
	defer rows.Close()
	out := make(map[string]int64)
	for rows.Next() {
		var id string
		var pct int64
		if err := rows.Scan(&id, &pct); err != nil {
			return nil, err
		}
		out[id] = pct
	}
	return out, rows.Err()
}

// startDispatch starts the emulator (unless external), the receiver and
// the agents of the dispatch mode. It sets a.dispatch itself, before any
// agent starts, because the agents reach the dispatch through a.
func startDispatch(ctx context.Context, db *store.DB, a *app, cfg Options, noLoad bool, dir string, threads int, newThread func(int) domains) (err error) {
	d := &dispatch{mode: cfg.PODispatch, unit: time.Duration(cfg.LeadTimeUnit), kick: make(chan struct{}, 1),
		receiving: make(chan struct{}, 1), watched: make(map[int64]*watched)}
	if d.mode == "" {
		d.mode = dispatchSync
	}
	if d.unit <= 0 {
		d.unit = time.Duration(float64(defaultLeadTimeDay) * a.scale)
	}
	d.receiver = newThread(threads)
	for i := range cfg.POSenders {
		d.senders = append(d.senders, newThread(threads+1+i))
	}
	a.dispatch = d
	var id [6]byte
	rand.Read(id[:])
	d.run = "ecperf-" + hex.EncodeToString(id[:])
	defer func() {
		if err != nil {
			// Start failed: what it started is released, promptly if the
			// failure was an interrupt.
			grace := stopGrace
			if ctx.Err() != nil {
				grace = stopGraceInterrupted
			}
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
			d.close(cctx)
			cancel()
		}
	}()
	agentCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.cancel = cancel

	emuURL := cfg.Emulator
	if emuURL == "" {
		if d.server, err = emulator.New(emulator.Config{LeadTimeUnit: d.unit, ResponseDelay: time.Duration(cfg.EmulatorDelay)}); err != nil {
			return err
		}
		ln, err := listenLocal()
		if err != nil {
			return err
		}
		emuURL = "http://" + ln.Addr().String()
		d.agents.Add(1)
		go func() {
			defer d.agents.Done()
			d.server.Serve(agentCtx, ln)
		}()
	}
	if d.emu, err = emulator.NewClient(emuURL, &http.Client{Timeout: emulatorCallTimeout}); err != nil {
		return fmt.Errorf("--emulator: %w", err)
	}
	// An emulator that does not answer would fail every sync transaction,
	// or leave every PO to the drain: better said now.
	probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = d.emu.Stats(probeCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("--emulator %s: the supplier emulator does not answer: %w", emuURL, err)
	}
	if err := d.listen(agentCtx, cfg.Receiver); err != nil {
		return err
	}
	// Every PO the emulator acknowledges is watched until delivered, and
	// sent again when overdue (resend.go), whatever the dispatch.
	d.db = db
	if d.poStatusOf, err = db.Prepare(ctx, store.Statement{Name: "ecperf-po-status",
		SQL: "SELECT po_status FROM s_purchase_order WHERE po_number = ?"}); err != nil {
		return err
	}
	d.agents.Add(1)
	go d.resendLoop(agentCtx)

	interval := time.Duration(float64(largeOrderPoll) * a.scale)
	switch d.mode {
	case dispatchSync:
		// No agent sends under sync; what an earlier run left unsent goes
		// out now, before the terminals start.
		d.sendUnsentNow(ctx, a.checker.unsent, db)
	case dispatchPoller:
		d.agents.Add(1)
		go d.poll(agentCtx, interval, a.checker.unsent, db)
	case dispatchQueue:
		d.stream = streamFor(db.DSN().String())
		if d.broker, err = messaging.OpenWith(ctx, messaging.Config{URL: cfg.Broker, StoreDir: dir, StreamReplicas: cfg.StreamReplicas}); err != nil {
			return brokerError(err)
		}
		if !noLoad {
			// A fresh population: messages of an earlier run name POs
			// that no longer exist.
			if err := d.broker.DeleteQueue(ctx, d.stream); err != nil {
				return err
			}
		}
		if d.queue, err = d.broker.Queue(ctx, d.stream); err != nil {
			return brokerError(err)
		}
		// Message ids carry this run's name: PO numbers repeat after a
		// reload, and a restarted run relays POs an earlier one published.
		if d.outbox, err = messaging.NewOutbox(ctx, db, d.queue, messaging.OutboxConfig{
			Table: outboxType.Table, IDColumn: outboxType.Key[0].Name, MessageIDPrefix: d.run + "/"}); err != nil {
			return err
		}
		if err := enqueueUnsent(ctx, db); err != nil {
			return err
		}
		d.agents.Add(1)
		go func() {
			defer d.agents.Done()
			d.outbox.Run(agentCtx, interval)
		}()
		for _, sender := range d.senders {
			// One message at a time per sender: messages prefetched behind a
			// slow send would outwait their AckWait and be sent twice.
			c, err := d.queue.ConsumeWith(agentCtx, messaging.ConsumerConfig{Durable: poDurable, Prefetch: 1}, func(ctx context.Context, data []byte) error {
				n, err := parsePONumber(data)
				if err != nil {
					return nil // not ours to send; acknowledged so it does not loop
				}
				return d.sendAgent(ctx, sender, n)
			})
			if err != nil {
				return err
			}
			d.consumers = append(d.consumers, c)
		}
	}
	return nil
}

// brokerError is err of the broker's opening or its queue's creation:
// more stream replicas than the broker can keep is a usage error.
func brokerError(err error) error {
	if errors.Is(err, messaging.ErrReplicas) {
		return config.Usage(err)
	}
	return fmt.Errorf("--broker: %w", err)
}

func parsePONumber(data []byte) (int64, error) { return strconv.ParseInt(string(data), 10, 64) }

// Groups are the kit's terminals: 5·Ir order-entry, 3·Ir planned lines,
// one large-order line.
func (a *app) Groups() []workload.Group {
	ir := a.ir
	return []workload.Group{
		{Name: "order-entry", Clients: orderTerminalsPerIr * ir, Mix: orderMix(), Pacing: workload.Pacing{
			Kind: workload.Cycle, Mean: time.Duration(float64(orderCycleMean) * a.scale), Dist: workload.NegExp, Truncate: orderCycleTruncate}},
		{Name: "planned-lines", Clients: plannedLinesPerIr * ir, Mix: plannedLine(a.scale), Pacing: workload.Pacing{Kind: workload.Cycle}},
		{Name: "large-order-lines", Clients: largeOrderLines(ir), Mix: largeOrderLine(a.scale), Pacing: workload.Pacing{Kind: workload.Cycle}},
	}
}

// largeOrderLines is how many large-order lines build large orders at
// once: ⌈Ir/2⌉. Each takes one large order a round of about 2 s (the
// poll's second and three stations); NewOrder makes about 0.14·Ir a
// second, so one line, serial, would fall behind from Ir 4.
func largeOrderLines(ir int) int { return (ir + 1) / 2 }

// largeOrderLine is a large-order line's round: take a waiting large
// order (scheduling its work order), then the planned line's three
// stations; a poll that finds none ends the round.
func largeOrderLine(scale float64) workload.Mix {
	m := plannedLine(scale)
	m.Cards[0] = workload.Card{Op: LargeOrderLine, Count: 1, Delay: time.Duration(float64(largeOrderPoll) * scale)}
	return m
}

// EntityStats are the container's counters by type.
// EntityStats are the container's counters by type; none under direct
// persistence.
func (a *app) EntityStats() []workload.EntityStats {
	if a.ctr == nil {
		return nil
	}
	return workload.ContainerStats(a.ctr)
}

func (a *app) NewClient(group, n int, rng *mrand.Rand) workload.Client {
	return newClient(a, group, n, rng)
}

func listenLocal() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
