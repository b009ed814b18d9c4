// Package partner is TPC-App's external partners as real HTTP services:
// Purchase Order Verification (POV), the Payment Gateway Emulator (PGE),
// the Inventory Control Emulator (ICE) and the Shipping Notification
// Emulator (SNE), which receives a notice with a label image for every
// order shipped. The application server calls
// them over the network and waits through their response time, which
// follows a configurable distribution (the seed replaced all three with a
// fixed 500 ms sleep in the server's own process). `tierbench emulator
// pov|pge|ice` serves one alone on any host; a run starts its own
// in-process unless told where they are.
//
// Approval is decided by a hash of the request's key against the approval
// ratio, so the same request always gets the same answer (a retried
// transaction is not approved once and declined the next time) and a test
// can predict it (Approves). ICE remembers every reorder it accepted, and
// SNE every order it was told of, so that a reorder or a notice sent twice
// is answered as a duplicate and counted once.
//
// partner depends on nothing of tierbench's but jsonhttp and its own wire
// types.
package partner

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/tierbench/tierbench/internal/jsonhttp"
)

// Kind is which partner a server emulates.
type Kind string

const (
	POV Kind = "pov"
	PGE Kind = "pge"
	ICE Kind = "ice"
	SNE Kind = "sne"
)

// Kinds are the partners in the order the CLI lists them.
var Kinds = []Kind{POV, PGE, ICE, SNE}

// ParseKind checks a partner's name.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("partner %q: want pov (purchase order verification), pge (payment gateway), ice (inventory control) or sne (shipping notification)", s)
}

// Title names a partner in messages.
func (k Kind) Title() string {
	switch k {
	case POV:
		return "purchase order verification (POV)"
	case PGE:
		return "payment gateway emulator (PGE)"
	case ICE:
		return "inventory control emulator (ICE)"
	case SNE:
		return "shipping notification emulator (SNE)"
	}
	return string(k)
}

// The API's paths; each server answers its own kind's and PathStats.
const (
	PathVerify    = "/v1/pov/verifications"
	PathAuthorize = "/v1/pge/authorizations"
	PathReorder   = "/v1/ice/reorders"
	PathNotice    = "/v1/sne/notices"
	PathStats     = "/v1/stats"
)

// VerifyRequest asks POV whether a customer may pay by purchase order.
type VerifyRequest struct {
	// POID is the customer's purchase-order account; it decides approval.
	POID     string `json:"po_id"`
	Customer string `json:"customer"`
}

// AuthorizeRequest asks PGE to authorize a credit-card payment.
type AuthorizeRequest struct {
	CardNumber string `json:"card_number"`
	CardName   string `json:"card_name"`
	Expiry     string `json:"expiry"`
	// Reference identifies the payment (the order's reference); with the
	// card number it decides approval.
	Reference   string `json:"reference"`
	AmountCents int64  `json:"amount_cents"`
}

// ReorderRequest asks ICE to replenish an item's stock. Run and ReorderID
// identify the reorder: ICE accepts each once.
type ReorderRequest struct {
	Run       string `json:"run"`
	ReorderID int64  `json:"reorder_id"`
	ItemID    int64  `json:"item_id"`
	Quantity  int64  `json:"quantity"`
}

// NoticeRequest tells SNE that an order shipped, with its shipping label.
// Run and OrderID identify the notice: SNE accepts each once.
type NoticeRequest struct {
	Run      string `json:"run"`
	OrderID  int64  `json:"order_id"`
	ShipDate string `json:"ship_date"`
	ShipType string `json:"ship_type"`
	// Lines are the order's lines that shipped.
	Lines int `json:"lines"`
	// Label is the shipping label, a PNG image (base64 in the JSON).
	Label []byte `json:"label"`
}

// NoticeResponse is SNE's answer: accepted, the first time or again.
type NoticeResponse struct {
	Accepted  bool `json:"accepted"`
	Duplicate bool `json:"duplicate"`
}

// Decision is POV's and PGE's answer. A decline is the partner's business
// answer (200), not a failure.
type Decision struct {
	Approved bool   `json:"approved"`
	AuthCode string `json:"auth_code,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ReorderResponse is ICE's answer: accepted, the first time or again.
type ReorderResponse struct {
	Accepted  bool `json:"accepted"`
	Duplicate bool `json:"duplicate"`
}

// ErrorResponse is the body of every 4xx and 5xx.
type ErrorResponse = jsonhttp.ErrorBody

// Stats are a partner's counters since it started.
type Stats struct {
	Kind Kind `json:"kind"`
	// Requests are the well-formed requests answered 200.
	Requests int64 `json:"requests"`
	Approved int64 `json:"approved"`
	Declined int64 `json:"declined"`
	// Duplicates are ICE reorders and SNE notices received again
	// (counted in Requests, not in Approved).
	Duplicates int64 `json:"duplicates"`
	// LabelBytes are the bytes of the label images SNE received.
	LabelBytes int64 `json:"label_bytes,omitempty"`
	// Failed are requests answered 503 by --fail-rate, before any effect.
	Failed int64 `json:"failed"`
	// Rejected are malformed requests answered 4xx.
	Rejected int64 `json:"rejected"`
}

// Counts are the counters by their JSON names, for a result.
func (st Stats) Counts() map[string]int64 {
	c := map[string]int64{"requests": st.Requests, "approved": st.Approved, "declined": st.Declined,
		"duplicates": st.Duplicates, "failed": st.Failed, "rejected": st.Rejected}
	if st.Kind == SNE {
		c["label_bytes"] = st.LabelBytes
	}
	return c
}

// Approves says whether a partner with approval ratio approve approves a
// request whose key is key: the key's hash, as a fraction of 2^64, below
// approve.
func Approves(key string, approve float64) bool {
	if approve >= 1 {
		return true
	}
	if approve <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return float64(mix64(h.Sum64())) < approve*math.Exp2(64)
}

// mix64 is splitmix64's finalizer: FNV's high bits barely differ between
// keys that differ in their last characters (PO-1, PO-2, …), and the
// decision reads the high bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// authorizeKey is the key PGE decides a payment by.
func authorizeKey(r AuthorizeRequest) string { return r.CardNumber + "/" + r.Reference }
