package tpcapp

import (
	"encoding/base64"
	"time"
)

// Image is an item's image: base64 in JSON and in SOAP, as XML cannot
// carry raw bytes.
type Image []byte

func (im Image) MarshalText() ([]byte, error) {
	out := make([]byte, base64.StdEncoding.EncodedLen(len(im)))
	base64.StdEncoding.Encode(out, im)
	return out, nil
}

func (im *Image) UnmarshalText(b []byte) error {
	out := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(out, b)
	*im = out[:n]
	return err
}

// The seven business methods (section 3.1.1 of the seed; the reference's
// list); the order is their id.
const (
	NewCustomer = iota
	ChangePaymentMethod
	CreateOrder
	OrderStatus
	NewProducts
	ProductDetail
	ChangeItem
	numOps
)

var opNames = [numOps]string{
	NewCustomer:         "NewCustomer",
	ChangePaymentMethod: "ChangePaymentMethod",
	CreateOrder:         "CreateOrder",
	OrderStatus:         "OrderStatus",
	NewProducts:         "NewProducts",
	ProductDetail:       "ProductDetail",
	ChangeItem:          "ChangeItem",
}

// Payment methods.
const (
	CreditCard    = "CC"
	PurchaseOrder = "PO"
)

// Order and line statuses. An order is PENDING when every line was in
// stock when it was placed, BACK_ORDERED otherwise; the shipping agent
// makes it SHIPPED, or PARTIAL when some line was still short.
const (
	StatusPending     = "PENDING"
	StatusBackOrdered = "BACK_ORDERED"
	StatusShipped     = "SHIPPED"
	StatusPartial     = "PARTIAL"
)

// ShipTypes are the ways an order can ship, each with its base cost.
var ShipTypes = []string{"AIR", "UPS", "FEDEX", "SHIP", "COURIER", "MAIL"}

// Address is a postal address as requests carry it.
type Address struct {
	Street1 string `json:"street1" xml:"street1"`
	Street2 string `json:"street2" xml:"street2"`
	City    string `json:"city" xml:"city"`
	State   string `json:"state" xml:"state"`
	Zip     string `json:"zip" xml:"zip"`
	Country int64  `json:"country" xml:"country"`
}

// Payment is how a customer pays: by credit card (the card's fields) or by
// purchase order (POID).
type Payment struct {
	Method     string `json:"method" xml:"method"`
	CardNumber string `json:"card_number,omitempty" xml:"card_number,omitempty"`
	CardName   string `json:"card_name,omitempty" xml:"card_name,omitempty"`
	CardExpiry string `json:"card_expiry,omitempty" xml:"card_expiry,omitempty"`
	POID       string `json:"po_id,omitempty" xml:"po_id,omitempty"`
}

type NewCustomerRequest struct {
	Uname        string  `json:"uname" xml:"uname"`
	Passwd       string  `json:"passwd" xml:"passwd"`
	BusinessName string  `json:"business_name" xml:"business_name"`
	BusinessInfo string  `json:"business_info" xml:"business_info"`
	FirstName    string  `json:"first_name" xml:"first_name"`
	LastName     string  `json:"last_name" xml:"last_name"`
	Phone        string  `json:"phone" xml:"phone"`
	Email        string  `json:"email" xml:"email"`
	Address      Address `json:"address" xml:"address"`
	Payment      Payment `json:"payment" xml:"payment"`
	// Discount in basis points (0..5000).
	Discount int64 `json:"discount" xml:"discount"`
}

type NewCustomerResult struct {
	CustomerID int64 `json:"customer_id" xml:"customer_id"`
}

type ChangePaymentMethodRequest struct {
	CustomerID int64   `json:"customer_id" xml:"customer_id"`
	Payment    Payment `json:"payment" xml:"payment"`
}

type ChangePaymentMethodResult struct {
	PaymentMethod string `json:"payment_method" xml:"payment_method"`
}

type LineRequest struct {
	ItemID int64 `json:"item_id" xml:"item_id"`
	Qty    int64 `json:"qty" xml:"qty"`
}

type CreateOrderRequest struct {
	CustomerID  int64         `json:"customer_id" xml:"customer_id"`
	ShipAddress Address       `json:"ship_address" xml:"ship_address"`
	ShipType    string        `json:"ship_type" xml:"ship_type"`
	Lines       []LineRequest `json:"lines" xml:"lines>line"`
	// Reference identifies the request to the payment gateway.
	Reference string `json:"reference" xml:"reference"`
}

// Line is an order line as stored.
type Line struct {
	ItemID int64  `json:"item_id" xml:"item_id"`
	Qty    int64  `json:"qty" xml:"qty"`
	Price  int64  `json:"price" xml:"price"`
	Status string `json:"status" xml:"status"`
	// Title is the item's, as OrderStatus reports it.
	Title string `json:"title,omitempty" xml:"title,omitempty"`
}

// Order is an order and its lines; money in cents.
type Order struct {
	ID       int64     `json:"order_id" xml:"order_id"`
	Date     time.Time `json:"date" xml:"date"`
	Status   string    `json:"status" xml:"status"`
	SubTotal int64     `json:"sub_total" xml:"sub_total"`
	Discount int64     `json:"discount" xml:"discount"`
	Tax      int64     `json:"tax" xml:"tax"`
	ShipCost int64     `json:"ship_cost" xml:"ship_cost"`
	Total    int64     `json:"total" xml:"total"`
	ShipType string    `json:"ship_type" xml:"ship_type"`
	Lines    []Line    `json:"lines" xml:"lines>line"`
}

type CreateOrderResult struct {
	Order Order `json:"order" xml:"order"`
}

type OrderStatusRequest struct {
	CustomerID int64  `json:"customer_id" xml:"customer_id"`
	Passwd     string `json:"passwd" xml:"passwd"`
	Count      int    `json:"count" xml:"count"`
}

type OrderStatusResult struct {
	BusinessName string  `json:"business_name" xml:"business_name"`
	Orders       []Order `json:"orders" xml:"orders>order"`
}

type NewProductsRequest struct {
	Subject string `json:"subject" xml:"subject"`
	// CutoffMinutes: items published within this many minutes before now
	// (1..10).
	CutoffMinutes int `json:"cutoff_minutes" xml:"cutoff_minutes"`
	Limit         int `json:"limit" xml:"limit"`
}

// Product is an item as the catalogue lists it.
type Product struct {
	ID      int64     `json:"item_id" xml:"item_id"`
	Title   string    `json:"title" xml:"title"`
	Author  string    `json:"author" xml:"author"`
	PubDate time.Time `json:"pub_date" xml:"pub_date"`
	Cost    int64     `json:"cost" xml:"cost"`
	// authorFirst is the author's first name until joinAuthor puts it in
	// front of the last name that Author holds as scanned.
	authorFirst string
}

func (p *Product) joinAuthor() { p.Author, p.authorFirst = p.authorFirst+" "+p.Author, "" }

type NewProductsResult struct {
	Products []Product `json:"products" xml:"products>product"`
}

type ProductDetailRequest struct {
	ItemIDs []int64 `json:"item_ids" xml:"item_ids>id"`
}

// Detail is an item with everything the catalogue has on it, its image
// included.
type Detail struct {
	Product
	Publisher  string `json:"publisher" xml:"publisher"`
	Subject    string `json:"subject" xml:"subject"`
	Desc       string `json:"desc" xml:"desc"`
	SRP        int64  `json:"srp" xml:"srp"`
	ISBN       string `json:"isbn" xml:"isbn"`
	Pages      int64  `json:"pages" xml:"pages"`
	Backing    string `json:"backing" xml:"backing"`
	Dimensions string `json:"dimensions" xml:"dimensions"`
	Stock      int64  `json:"stock" xml:"stock"`
	Image      Image  `json:"image" xml:"image"`
}

type ProductDetailResult struct {
	Items []Detail `json:"items" xml:"items>item"`
}

type ChangeItemRequest struct {
	ItemIDs []int64 `json:"item_ids" xml:"item_ids>id"`
}

type ItemDate struct {
	ID      int64     `json:"item_id" xml:"item_id"`
	PubDate time.Time `json:"pub_date" xml:"pub_date"`
}

type ChangeItemResult struct {
	Items []ItemDate `json:"items" xml:"items>item"`
}
