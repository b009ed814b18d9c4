package tpcapp

import "github.com/tierbench/tierbench/internal/container"

// The entity types of TPC-App on the entity container, one per table as
// Hibernate maps them in the seed's DBT4 (its @Entity classes, every
// column a property, none lazy): an item read loads its image with the
// rest of the row, which is the seed's first finding. Field indexes follow
// the declarations (the constants beside each type).
//
// Stock, orders and order lines are written by the shipping and
// inventory agents, in SQL outside the container: their types are
// Updated (under database concurrency a read-write transaction reads them
// with locks, so that BMP's store of an unchanged instance cannot write
// back a value an agent has changed since) and keep commit option C
// and database concurrency whatever the run's (Preset), so that no cached
// instance outlives the transaction that read it and only the database's
// locks, which the agents take too, order the writers. --entity can still
// override that, at the user's word.
var writtenOutside = container.Preset{CommitOption: container.OptionC, Concurrency: container.Database}

func col(name string, k container.Kind) container.Column {
	return container.Column{Name: name, Kind: k}
}

const (
	cUname = iota
	cPasswd
	cBusinessName
	cBusinessInfo
	cFirstName
	cLastName
	cPhone
	cEmail
	cAddrID
	cPaymentMethod
	cCardNumber
	cCardName
	cCardExpiry
	cPOID
	cDiscount
	cSince
)

var customerType = &container.Type{
	Name: "Customer", Table: "customer",
	Key: []container.Column{col("c_id", container.Int)},
	Fields: []container.Column{
		col("c_uname", container.String), col("c_passwd", container.String), col("c_business_name", container.String),
		col("c_business_info", container.String), col("c_contact_fname", container.String), col("c_contact_lname", container.String),
		col("c_contact_phone", container.String), col("c_contact_email", container.String), col("c_addr_id", container.Int),
		col("c_payment_method", container.String), col("c_cc_number", container.String), col("c_cc_name", container.String),
		col("c_cc_expiry", container.String), col("c_po_id", container.String), col("c_discount", container.Int),
		col("c_since", container.Time),
	},
	KeyGen:  container.KeySequence,
	Updated: true, // ChangePaymentMethod
}

const (
	addrStreet1 = iota
	addrStreet2
	addrCity
	addrState
	addrZip
	addrCountry
)

var addressType = &container.Type{
	Name: "Address", Table: "address",
	Key: []container.Column{col("addr_id", container.Int)},
	Fields: []container.Column{
		col("addr_street1", container.String), col("addr_street2", container.String), col("addr_city", container.String),
		col("addr_state", container.String), col("addr_zip", container.String), col("addr_co_id", container.Int),
	},
	KeyGen: container.KeySequence,
	Finders: []container.Finder{
		// "Store the address unless already present": the lowest key of an
		// equal address, as Direct's query finds it.
		{Name: "same", Where: "addr_zip = ? AND addr_street1 = ? AND addr_street2 = ? AND addr_city = ? AND addr_state = ? AND addr_co_id = ?",
			OrderBy: "addr_id", Limit: 1},
	},
}

const coZone = 3

var countryType = &container.Type{
	Name: "Country", Table: "country",
	Key: []container.Column{col("co_id", container.Int)},
	Fields: []container.Column{
		col("co_name", container.String), col("co_exchange", container.Float), col("co_currency", container.String), col("co_zone", container.Int),
	},
}

const (
	aFirst = iota
	aLast
)

var authorType = &container.Type{
	Name: "Author", Table: "author",
	Key: []container.Column{col("a_id", container.Int)},
	Fields: []container.Column{
		col("a_fname", container.String), col("a_lname", container.String), col("a_mname", container.String),
		col("a_dob", container.Time), col("a_bio", container.String),
	},
}

const (
	iTitle = iota
	iAuthor
	iPubDate
	iPublisher
	iSubject
	iDesc
	iSRP
	iCost
	iISBN
	iPages
	iBacking
	iDimensions
	iVolume
	iImageSize
	iImage
	iImagePath
)

var itemType = &container.Type{
	Name: "Item", Table: "item",
	Key: []container.Column{col("i_id", container.Int)},
	Fields: []container.Column{
		col("i_title", container.String), col("i_a_id", container.Int), col("i_pub_date", container.Time),
		col("i_publisher", container.String), col("i_subject", container.String), col("i_desc", container.String),
		col("i_srp", container.Int), col("i_cost", container.Int), col("i_isbn", container.String), col("i_page", container.Int),
		col("i_backing", container.String), col("i_dimensions", container.String), col("i_volume", container.Int),
		col("i_image_size", container.Int), col("i_image", container.Bytes),
		// NULL unless --item-images file: Bytes reads NULL as nil.
		col("i_image_path", container.Bytes),
	},
	Finders: []container.Finder{
		// The limit is the request's: a parameter after the ORDER BY.
		{Name: "newProducts", Where: "i_subject = ? AND i_pub_date >= ?", OrderBy: "i_pub_date DESC, i_id LIMIT ?", Many: true},
	},
	Updated: true, // ChangeItem
}

const sQty = 0

var stockType = &container.Type{
	Name: "Stock", Table: "stock",
	Key:     []container.Column{col("s_i_id", container.Int)},
	Fields:  []container.Column{col("s_qty", container.Int), col("s_pending", container.Int)},
	Updated: true, // by the shipping and inventory agents
	Preset:  writtenOutside,
}

const (
	oCustomer = iota
	oDate
	oSubTotal
	oDiscount
	oTax
	oShipCost
	oTotal
	oShipType
	oShipAddr
	oStatus
	oPayment
	oAuthCode
)

var orderType = &container.Type{
	Name: "Order", Table: "orders",
	Key: []container.Column{col("o_id", container.Int)},
	Fields: []container.Column{
		col("o_c_id", container.Int), col("o_date", container.Time), col("o_sub_total", container.Int), col("o_discount", container.Int),
		col("o_tax", container.Int), col("o_ship_cost", container.Int), col("o_total", container.Int), col("o_ship_type", container.String),
		col("o_ship_addr_id", container.Int), col("o_status", container.String), col("o_payment_method", container.String),
		col("o_auth_code", container.String),
	},
	KeyGen: container.KeySequence,
	Finders: []container.Finder{
		{Name: "lastOfCustomer", Where: "o_c_id = ?", OrderBy: "o_id DESC LIMIT ?", Many: true},
	},
	Updated: true, // by the shipping agents
	Preset:  writtenOutside,
}

const (
	olOrder = iota
	olItem
	olQty
	olPrice
	olStatus
)

var orderLineType = &container.Type{
	Name: "OrderLine", Table: "order_line",
	Key: []container.Column{col("ol_id", container.Int)},
	Fields: []container.Column{
		col("ol_o_id", container.Int), col("ol_i_id", container.Int), col("ol_qty", container.Int), col("ol_price", container.Int),
		col("ol_status", container.String),
	},
	KeyGen: container.KeySequence,
	Finders: []container.Finder{
		{Name: "ofOrder", Where: "ol_o_id = ?", OrderBy: "ol_id", Many: true},
	},
	Updated: true, // by the shipping agents
	Preset:  writtenOutside,
}

// shipOutboxType is the shipping queue's transactional outbox: an order's
// row is created in the transaction that stores the order, and the relay
// (shipping.go) publishes and deletes it.
var shipOutboxType = &container.Type{
	Name: "ShipOutbox", Table: "ship_outbox",
	Key:    []container.Column{col("so_o_id", container.Int)},
	Fields: []container.Column{col("so_created", container.Time)},
	Preset: writtenOutside,
}

var entityTypes = []*container.Type{customerType, addressType, countryType, authorType, itemType, stockType, orderType, orderLineType, shipOutboxType}
