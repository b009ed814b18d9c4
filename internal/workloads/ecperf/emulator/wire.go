package emulator

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/jsonhttp"
)

// Paths of the emulator's HTTP API.
const (
	PathPurchaseOrders = "/v1/purchase-orders"
	PathStats          = "/v1/stats"
	pathRuns           = "/v1/runs/"
)

// RunPath is the path of a run's resource (DELETE forgets the run).
func RunPath(run string) string { return pathRuns + url.PathEscape(run) }

// RunPurchaseOrdersPath is the path listing a run's POs.
func RunPurchaseOrdersPath(run string) string { return RunPath(run) + "/purchase-orders" }

// PO is a purchase order sent by the supplier domain
// (POST /v1/purchase-orders).
type PO struct {
	Run        string   `json:"run"`
	PONumber   int64    `json:"po_number"`
	SupplierID int64    `json:"supplier_id"`
	SiteID     int64    `json:"site_id"`
	Lines      []POLine `json:"lines"`
	// DeliverTo is the absolute http(s) URL the delivery is POSTed to.
	DeliverTo string `json:"deliver_to"`
	// LeadTimeUnit is the sender's unit of LeadTime ("500ms"): a run
	// with its times scaled sends its own, which an emulator started
	// alone uses instead of its --lead-time-unit; empty: the emulator's.
	LeadTimeUnit string `json:"lead_time_unit,omitempty"`
}

// MaxLeadTimeUnit bounds a PO's own unit (the kit's is 5 s).
const MaxLeadTimeUnit = time.Hour

// unit is the PO's lead-time unit, or def when it carries none; Validate
// has checked it.
func (po *PO) unit(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(po.LeadTimeUnit); err == nil && po.LeadTimeUnit != "" {
		return d
	}
	return def
}

// POLine is one line of a PO.
type POLine struct {
	Line   int    `json:"line"`
	PartID string `json:"part_id"`
	Qty    int    `json:"qty"`
	// LeadTime is in units of Config.LeadTimeUnit (the kit: 2..10 × 5 s).
	LeadTime int `json:"lead_time"`
}

// Delivery is what the emulator POSTs to a PO's DeliverTo once its lead
// time has passed. It may arrive more than once only if the receiver
// answered 2xx too late (after the attempt timeout).
type Delivery struct {
	Run      string         `json:"run"`
	PONumber int64          `json:"po_number"`
	Lines    []DeliveryLine `json:"lines"`
}

// DeliveryLine is one delivered line of a PO.
type DeliveryLine struct {
	Line   int    `json:"line"`
	PartID string `json:"part_id"`
	Qty    int    `json:"qty"`
}

// Statuses of a POResponse.
const (
	StatusAccepted  = "accepted"  // 202: scheduled for delivery
	StatusDuplicate = "duplicate" // 200: already received in this run; not scheduled again
)

// POResponse answers a PO that passed validation.
type POResponse struct {
	Status string `json:"status"`
}

// ErrorResponse is the body of every 4xx and 5xx answer.
type ErrorResponse = jsonhttp.ErrorBody

// POSummary is one PO of a run (GET /v1/runs/{run}/purchase-orders).
type POSummary struct {
	PONumber int64 `json:"po_number"`
	// Received is how many times the PO was sent: 1 + duplicates.
	Received  int  `json:"received"`
	Delivered bool `json:"delivered"`
}

// ForgetResponse answers DELETE /v1/runs/{run}.
type ForgetResponse struct {
	// Forgotten is how many POs of the run were dropped.
	Forgotten int `json:"forgotten"`
	// Cancelled is how many of those were still pending; they will not be
	// delivered.
	Cancelled int `json:"cancelled"`
}

// Validate reports every rule the PO breaks, each naming its field, joined
// in one error; nil if the PO is acceptable.
func (po *PO) Validate() error {
	var errs []error
	if po.Run == "" {
		errs = append(errs, errors.New("run is empty"))
	}
	if po.PONumber <= 0 {
		errs = append(errs, fmt.Errorf("po_number is %d, want > 0", po.PONumber))
	}
	if len(po.Lines) == 0 {
		errs = append(errs, errors.New("lines is empty, want at least one line"))
	}
	seen := make(map[int]bool, len(po.Lines))
	for i, l := range po.Lines {
		if l.PartID == "" {
			errs = append(errs, fmt.Errorf("lines[%d].part_id is empty", i))
		}
		if l.Qty <= 0 {
			errs = append(errs, fmt.Errorf("lines[%d].qty is %d, want > 0", i, l.Qty))
		}
		if l.LeadTime < 0 {
			errs = append(errs, fmt.Errorf("lines[%d].lead_time is %d, want >= 0", i, l.LeadTime))
		}
		if seen[l.Line] {
			errs = append(errs, fmt.Errorf("lines[%d].line %d is a duplicate line number", i, l.Line))
		}
		seen[l.Line] = true
	}
	if err := checkDeliverTo(po.DeliverTo); err != nil {
		errs = append(errs, err)
	}
	if po.LeadTimeUnit != "" {
		if d, err := time.ParseDuration(po.LeadTimeUnit); err != nil || d <= 0 || d > MaxLeadTimeUnit {
			errs = append(errs, fmt.Errorf("lead_time_unit %q: want a duration above 0 and at most %v, e.g. 500ms", po.LeadTimeUnit, MaxLeadTimeUnit))
		}
	}
	return errors.Join(errs...)
}

func checkDeliverTo(s string) error {
	if s == "" {
		return errors.New("deliver_to is empty, want an absolute http(s) URL")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("deliver_to %q is not an absolute http(s) URL", s)
	}
	return nil
}

// leadTime is the PO's lead time in units: its lines' maximum.
func (po *PO) leadTime() int {
	m := 0
	for _, l := range po.Lines {
		m = max(m, l.LeadTime)
	}
	return m
}

// delivery is the document delivering po.
func (po *PO) delivery() Delivery {
	d := Delivery{Run: po.Run, PONumber: po.PONumber, Lines: make([]DeliveryLine, len(po.Lines))}
	for i, l := range po.Lines {
		d.Lines[i] = DeliveryLine{Line: l.Line, PartID: l.PartID, Qty: l.Qty}
	}
	return d
}

// sentence joins a joined error's lines into one line for the wire.
func sentence(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
