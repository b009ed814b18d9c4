package ecperf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierbench/tierbench/internal/messaging"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workloads/ecperf/emulator"
)

// The --po-dispatch modes.
const (
	dispatchSync   = "sync"
	dispatchPoller = "poller"
	dispatchQueue  = "queue"
)

// The durable consumer's name on the broker.
const poDurable = "po-sender"

// streamFor names the PO stream of a database: runs on the same database
// share it (a restarted run consumes what a killed one published), runs on
// different databases sharing a broker do not.
func streamFor(dsn string) string {
	sum := sha256.Sum256([]byte(dsn))
	return "ECPERF_PO_" + hex.EncodeToString(sum[:6])
}

// dispatch carries purchase orders to the Supplier Emulator as
// --po-dispatch says, and takes the deliveries back.
type dispatch struct {
	mode string
	run  string // the emulator's name for this run
	unit time.Duration
	emu  *emulator.Client
	// deliverTo is the receiver's URL, given to the emulator in each PO.
	deliverTo string

	// senders and receiver are the agents' own server threads' beans;
	// each is used by one goroutine at a time. Several senders work at
	// once, as a pool of message-driven beans does, so one slow send does
	// not hold up the others. receiving (capacity 1) is the receiver's
	// lock, a channel so that a delivery waiting for it gives up when its
	// request or the run ends.
	senders   []domains
	receiving chan struct{}
	receiver  domains

	// db and poStatusOf let the watcher see whether an overdue PO is still
	// awaiting its delivery.
	db         *store.DB
	poStatusOf *store.Stmt
	// watched are the POs the emulator acknowledged and that are not yet
	// delivered, by number (resend.go).
	watchMu sync.Mutex
	watched map[int64]*watched

	kick      chan struct{} // poller: a PO committed
	outbox    *messaging.Outbox
	broker    *messaging.Broker
	queue     *messaging.Queue
	consumers []*messaging.Consumer
	server    *emulator.Server // the in-process emulator, if any
	http      *http.Server     // the delivery receiver
	stream    string
	cancel    context.CancelFunc
	agents    sync.WaitGroup

	sends, sendFailures, deliveries atomic.Int64
	// deliveriesAgain counts deliveries of POs already received (an old
	// emulator and a new one both delivering a re-sent PO): answered 2xx,
	// changing nothing.
	deliveriesAgain atomic.Int64
	// resends counts POs sent again after their delivery deadline;
	// resentAccepted those of them the emulator accepted as new (it had
	// lost them), the rest it answered "duplicate".
	resends, resentAccepted atomic.Int64
	// sentThenAborted are the POs sync transactions sent before they
	// aborted: the reference's flaw (a send cannot be undone), which
	// leaves them at the emulator and not in the database. The PO check
	// accepts those and no others.
	abortedMu       sync.Mutex
	sentThenAborted map[int64]bool
	// lastSendErr is the latest failed send, for the checks' detail when
	// POs did not arrive.
	lastSendErr atomic.Pointer[error]
}

// send is one PO to the emulator; a duplicate (sent before) is success.
func (d *dispatch) send(ctx context.Context, doc emulator.PO) error {
	// The unit goes with the PO: an emulator started alone keeps its
	// own for senders that give none, not for this run's scaled times.
	doc.Run, doc.DeliverTo, doc.LeadTimeUnit = d.run, d.deliverTo, d.unit.String()
	if _, err := d.emu.Send(ctx, doc); err != nil {
		d.sendFailures.Add(1)
		err = fmt.Errorf("send PO %d to the supplier emulator: %w", doc.PONumber, err)
		d.lastSendErr.Store(&err)
		return err
	}
	d.sends.Add(1)
	// Watched from the acknowledgement: an emulator that dies before
	// delivering loses the PO, and only the sender can notice.
	d.watch(doc, time.Now())
	return nil
}

// abortedAfterSending records POs sent by a transaction that then
// aborted (or whose commit is in doubt).
func (d *dispatch) abortedAfterSending(numbers []int64) {
	if len(numbers) == 0 {
		return
	}
	d.abortedMu.Lock()
	defer d.abortedMu.Unlock()
	if d.sentThenAborted == nil {
		d.sentThenAborted = make(map[int64]bool)
	}
	for _, n := range numbers {
		d.sentThenAborted[n] = true
	}
}

// sentByAborted says whether PO number was sent by a transaction that
// then aborted.
func (d *dispatch) sentByAborted(number int64) bool {
	d.abortedMu.Lock()
	defer d.abortedMu.Unlock()
	return d.sentThenAborted[number]
}

// committed tells the agent that a transaction committed new POs.
func (d *dispatch) committed() {
	switch d.mode {
	case dispatchPoller:
		select {
		case d.kick <- struct{}{}:
		default:
		}
	case dispatchQueue:
		d.outbox.Kick()
	}
}

// sendAgent sends PO number on sender's thread.
func (d *dispatch) sendAgent(ctx context.Context, sender domains, number int64) error {
	return store.Retry(ctx, maxAgentRetries+1, func() error { return sender.sendUnsent(ctx, number) })
}

// maxAgentRetries bounds an agent's retries of one transaction; a PO
// still failing is sent at the next poll or redelivery.
const maxAgentRetries = 20

// poll is the quick fix's agent: every interval, or when kicked, send the
// unsent POs.
func (d *dispatch) poll(ctx context.Context, interval time.Duration, unsent *store.Stmt, db *store.DB) {
	defer d.agents.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.kick:
		}
		d.sendUnsentNow(ctx, unsent, db)
	}
}

// sendUnsentNow sends every unsent PO once, sender i every
// len(senders)-th. A PO that fails (the emulator is down, the database
// busy) stays unsent for the next poll: nothing is lost, so the failure
// itself needs no report.
func (d *dispatch) sendUnsentNow(ctx context.Context, unsent *store.Stmt, db *store.DB) {
	rows, err := db.Query(ctx, unsent, int64(poUnsent))
	if err != nil {
		return
	}
	var numbers []int64
	for rows.Next() {
		var n int64
		if rows.Scan(&n) != nil {
			break
		}
		numbers = append(numbers, n)
	}
	rows.Close()
	var wg sync.WaitGroup
	for i, sender := range d.senders {
		wg.Go(func() {
			for k := i; k < len(numbers); k += len(d.senders) {
				d.sendAgent(ctx, sender, numbers[k])
			}
		})
	}
	wg.Wait()
}

// receive is the HTTP endpoint the emulator delivers to.
func (d *dispatch) receive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a delivery", http.StatusMethodNotAllowed)
		return
	}
	var del emulator.Delivery
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&del); err != nil {
		http.Error(w, "malformed delivery: "+err.Error(), http.StatusBadRequest)
		return
	}
	if del.Run != d.run {
		http.Error(w, "delivery for run "+strconv.Quote(del.Run)+", this is "+strconv.Quote(d.run), http.StatusNotFound)
		return
	}
	select {
	case d.receiving <- struct{}{}:
	case <-r.Context().Done():
		// The emulator gave up on this attempt, or the run is stopping:
		// the delivery comes again or the checks report it.
		http.Error(w, "the receiver is busy", http.StatusServiceUnavailable)
		return
	}
	var applied bool
	err := store.Retry(r.Context(), maxAgentRetries+1, func() (err error) {
		applied, err = d.receiver.receive(r.Context(), del)
		return err
	})
	<-d.receiving
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	d.unwatch(del.PONumber)
	if applied {
		d.deliveries.Add(1)
	} else {
		d.deliveriesAgain.Add(1)
	}
	w.WriteHeader(http.StatusNoContent)
}

// listen starts the delivery receiver on addr. Its requests' contexts
// derive from ctx, the agents' context, so that stopping the run stops the
// deliveries under way instead of waiting for them.
func (d *dispatch) listen(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--receiver %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/deliveries", d.receive)
	d.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	d.deliverTo = "http://" + ln.Addr().String() + "/deliveries"
	d.agents.Add(1)
	go func() {
		defer d.agents.Done()
		d.http.Serve(ln)
	}()
	return nil
}

// close stops everything the dispatch started, in reverse order, within
// ctx: the agents' context is cancelled first, so every agent's database,
// broker and emulator call ends at once; what would still wait past ctx
// (a connection to drain, a consumer to stop on a broker that went away)
// is closed hard. Nothing is lost that way: a run that stops before its
// drain is over says so in its checks, and its POs are the next run's
// (reclaimSent, enqueueUnsent).
func (d *dispatch) close(ctx context.Context) error {
	var errs []error
	if d.cancel != nil {
		d.cancel()
	}
	for _, c := range d.consumers {
		if err := c.StopContext(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop the PO senders: %w", err))
		}
	}
	if d.http != nil {
		// Deliveries under way end with the agents' context; what is still
		// open after a few seconds is closed. That loses nothing: the drain
		// has seen every PO delivered or the checks say which were not, and
		// net/http counts a connection the emulator dialled but never used
		// as busy for 5 s.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if d.http.Shutdown(sctx) != nil {
			d.http.Close()
		}
		cancel()
	}
	if d.server != nil {
		d.server.Close() // cancels its delivery attempts: prompt
	}
	agents := make(chan struct{})
	go func() { d.agents.Wait(); close(agents) }()
	select {
	case <-agents:
	case <-ctx.Done():
		// Every agent honours the cancelled context; one still busy is in
		// a call that ignores it (none is known), and it ends by itself.
		errs = append(errs, fmt.Errorf("the PO agents did not stop in time: %w", context.Cause(ctx)))
	}
	if d.broker != nil {
		if d.queue != nil && d.broker.Embedded() {
			errs = append(errs, d.broker.DeleteQueue(ctx, d.stream))
		}
		errs = append(errs, d.broker.CloseContext(ctx))
	}
	return errors.Join(errs...)
}

// failures describes why POs may be missing: the latest failed send and
// relay pass, if any.
func (d *dispatch) failures() string {
	var out []string
	if p := d.lastSendErr.Load(); p != nil {
		out = append(out, fmt.Sprintf("%d sends failed, the last: %v", d.sendFailures.Load(), *p))
	}
	if d.outbox != nil {
		if err := d.outbox.LastErr(); err != nil {
			out = append(out, fmt.Sprintf("%d relay passes failed, the last: %v", d.outbox.Stats().Errors, err))
		}
	}
	return strings.Join(out, "; ")
}

// reclaimSent makes the POs an earlier process sent but never saw
// delivered this run's to send again: their deliveries were addressed to a
// receiver that is gone (a killed run), so they would stay open forever.
// The emulator keeps POs per run, so the resend is new to it and delivers
// once, here. It runs before the checker takes its baseline, so these POs
// count as this run's. A run that ended normally leaves none: its drain
// waits for every delivery.
func reclaimSent(ctx context.Context, db *store.DB) (int64, error) {
	s, err := db.Prepare(ctx, store.Statement{Name: "ecperf-reclaim-sent",
		SQL: "UPDATE s_purchase_order SET po_status = ? WHERE po_status = ?"})
	if err != nil {
		return 0, err
	}
	res, err := db.Exec(ctx, s, int64(poUnsent), int64(poSent))
	if err != nil {
		return 0, fmt.Errorf("reclaim the POs an earlier run sent: %w", err)
	}
	return res.RowsAffected, nil
}

// enqueueUnsent gives every unsent PO without an outbox row one, so the
// queue carries it: a killed run may have published a PO (and deleted its
// row) to an embedded broker whose storage died with it, or reclaimSent
// made it unsent again.
func enqueueUnsent(ctx context.Context, db *store.DB) error {
	s, err := db.Prepare(ctx, store.Statement{Name: "ecperf-enqueue-unsent",
		SQL: "INSERT INTO s_outbox (ob_po_number, ob_created) SELECT po_number, ? FROM s_purchase_order p " +
			"WHERE po_status = ? AND NOT EXISTS (SELECT 1 FROM s_outbox o WHERE o.ob_po_number = p.po_number)"})
	if err != nil {
		return err
	}
	if _, err := db.Exec(ctx, s, time.Now().UTC(), int64(poUnsent)); err != nil {
		return fmt.Errorf("enqueue the POs an earlier run left unsent: %w", err)
	}
	return nil
}
