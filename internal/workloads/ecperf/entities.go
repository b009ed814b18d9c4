package ecperf

import "github.com/tierbench/tierbench/internal/container"

// Column shorthands for the declarations below.
func intCol(name string) container.Column { return container.Column{Name: name, Kind: container.Int} }
func strCol(name string) container.Column {
	return container.Column{Name: name, Kind: container.String}
}
func timeCol(name string) container.Column { return container.Column{Name: name, Kind: container.Time} }

// The entity types: one per table the four domains touch, declared with
// every column (the container inserts new instances whole). Field indexes
// are the constants after each type.
var (
	// Corporate domain.
	customerType = &container.Type{
		Name: "Customer", Table: "c_customer", Key: []container.Column{intCol("c_id")},
		Fields: []container.Column{
			strCol("c_first"), strCol("c_last"), strCol("c_street1"), strCol("c_street2"), strCol("c_city"),
			strCol("c_state"), strCol("c_country"), strCol("c_zip"), strCol("c_phone"), strCol("c_contact"),
			timeCol("c_since"), intCol("c_balance"), strCol("c_credit"), intCol("c_credit_limit"), intCol("c_ytd_payment"),
		},
		// Updated: the balance is what the customer owes.
		Version: "version", KeyGen: container.KeySequence, Updated: true,
	}
	// Customer domain.
	orderCustomerType = &container.Type{
		Name: "OrderCustomer", Table: "o_customer", Key: []container.Column{intCol("c_id")},
		Fields: []container.Column{
			strCol("c_first"), strCol("c_last"), strCol("c_street1"), strCol("c_street2"), strCol("c_city"),
			strCol("c_state"), strCol("c_country"), strCol("c_zip"), strCol("c_phone"), strCol("c_contact"),
			timeCol("c_since"),
		},
		Version: "version",
	}
	orderType = &container.Type{
		Name: "Order", Table: "o_orders", Key: []container.Column{intCol("o_id")},
		Fields: []container.Column{
			intCol("o_c_id"), intCol("o_ol_cnt"), intCol("o_discount"), intCol("o_total"), intCol("o_status"),
			timeCol("o_entry_date"), timeCol("o_ship_date"),
		},
		Version: "version", KeyGen: container.KeySequence, Updated: true,
		Finders: []container.Finder{{Name: "byCustomer", Where: "o_c_id = ?", OrderBy: "o_id DESC", Limit: customerStatusOrders, Many: true}},
	}
	orderLineType = &container.Type{
		Name: "OrderLine", Table: "o_orderline", Key: []container.Column{intCol("ol_o_id"), intCol("ol_id")},
		Fields:  []container.Column{intCol("ol_i_id"), intCol("ol_qty"), intCol("ol_status"), timeCol("ol_ship_date")},
		Version: "version", Updated: true,
		Finders: []container.Finder{{Name: "byOrder", Where: "ol_o_id = ?", OrderBy: "ol_id", Many: true}},
	}
	itemType = &container.Type{
		Name: "Item", Table: "o_item", Key: []container.Column{intCol("i_id")},
		Fields:  []container.Column{strCol("i_name"), strCol("i_desc"), intCol("i_price"), intCol("i_discount")},
		Version: "version",
	}
	// itemRWType maps o_item again, as the read-write bean of the
	// read-mostly pattern (Kounev & Buchmann): the kit never changes an
	// item, so nothing writes through it unless --price-change-every
	// says so; --entity Item.read-mostly=ItemRW then has its commits
	// invalidate Item's cached prices (docs/ecperf.md).
	itemRWType = &container.Type{
		Name: "ItemRW", Table: "o_item", Key: []container.Column{intCol("i_id")},
		Fields:  []container.Column{strCol("i_name"), strCol("i_desc"), intCol("i_price"), intCol("i_discount")},
		Version: "version", Updated: true,
	}
	// Manufacturing domain.
	partType = &container.Type{
		Name: "Part", Table: "m_parts", Key: []container.Column{intCol("p_id")},
		Fields: []container.Column{
			strCol("p_name"), strCol("p_desc"), strCol("p_rev"), intCol("p_planner"), intCol("p_type"),
			intCol("p_ind"), intCol("p_lomark"), intCol("p_himark"),
		},
	}
	bomType = &container.Type{
		Name: "BOM", Table: "m_bom", Key: []container.Column{intCol("b_assembly_id"), intCol("b_comp_id")},
		Fields: []container.Column{intCol("b_line_no"), intCol("b_qty"), intCol("b_ops"), strCol("b_eng_change"), strCol("b_ops_desc")},
		Finders: []container.Finder{
			{Name: "byAssembly", Where: "b_assembly_id = ?", OrderBy: "b_comp_id", Many: true},
			// The kit's order: the BOM's line numbers, not the keys.
			{Name: "byAssemblyLine", Where: "b_assembly_id = ?", OrderBy: "b_line_no", Many: true},
		},
	}
	workOrderType = &container.Type{
		Name: "WorkOrder", Table: "m_workorder", Key: []container.Column{intCol("wo_number")},
		Fields: []container.Column{
			intCol("wo_o_id"), intCol("wo_ol_id"), intCol("wo_status"), intCol("wo_assembly_id"), intCol("wo_orig_qty"),
			intCol("wo_comp_qty"), timeCol("wo_due_date"), timeCol("wo_start_date"),
		},
		Version: "version", KeyGen: container.KeySequence, Updated: true,
	}
	largeOrderType = &container.Type{
		Name: "LargeOrder", Table: "m_largeorder", Key: []container.Column{intCol("lo_id")},
		Fields:  []container.Column{intCol("lo_o_id"), intCol("lo_ol_id"), intCol("lo_assembly_id"), intCol("lo_qty"), timeCol("lo_due_date")},
		Version: "version", KeyGen: container.KeySequence, Updated: true,
		Finders: []container.Finder{
			{Name: "pending", Where: "lo_id > ?", OrderBy: "lo_id", Limit: largeOrdersPerPoll, Many: true},
			{Name: "byOrder", Where: "lo_o_id = ?", OrderBy: "lo_id", Many: true},
		},
	}
	inventoryType = &container.Type{
		Name: "Inventory", Table: "m_inventory", Key: []container.Column{intCol("in_p_id")},
		Fields:  []container.Column{intCol("in_qty"), intCol("in_ordered"), strCol("in_location"), intCol("in_acc_code"), timeCol("in_act_date")},
		Version: "version", Updated: true,
	}
	// Supplier domain.
	suppComponentType = &container.Type{
		Name: "SuppComponent", Table: "s_supp_component", Key: []container.Column{intCol("sc_p_id"), intCol("sc_supp_id")},
		Fields: []container.Column{intCol("sc_price"), intCol("sc_qty"), intCol("sc_discount"), intCol("sc_del_date")},
		// The cheapest supplier first, the quicker of equals.
		Finders: []container.Finder{{Name: "byPart", Where: "sc_p_id = ?", OrderBy: "sc_price, sc_del_date, sc_supp_id", Limit: 1, Many: true}},
	}
	purchaseOrderType = &container.Type{
		Name: "PurchaseOrder", Table: "s_purchase_order", Key: []container.Column{intCol("po_number")},
		Fields:  []container.Column{intCol("po_supp_id"), intCol("po_site_id"), intCol("po_status"), timeCol("po_created")},
		Version: "version", KeyGen: container.KeySequence, Updated: true,
		Finders: []container.Finder{{Name: "unsent", Where: "po_status = ?", OrderBy: "po_number", Limit: posPerPoll, Many: true}},
	}
	poLineType = &container.Type{
		Name: "POLine", Table: "s_purchase_orderline", Key: []container.Column{intCol("pol_po_id"), intCol("pol_number")},
		Fields:  []container.Column{intCol("pol_p_id"), intCol("pol_qty"), intCol("pol_balance"), timeCol("pol_deldate"), strCol("pol_message")},
		Version: "version", Updated: true,
		Finders: []container.Finder{{Name: "byPO", Where: "pol_po_id = ?", OrderBy: "pol_number", Many: true}},
	}
	// outboxType is the transactional outbox: a PO's row is created in the
	// transaction that creates the PO, and the relay publishes and deletes
	// it after commit.
	outboxType = &container.Type{
		Name: "Outbox", Table: "s_outbox", Key: []container.Column{intCol("ob_po_number")},
		Fields: []container.Column{timeCol("ob_created")},
		// Written only by its own creators; never cached.
		Preset: container.Preset{CommitOption: container.OptionC},
	}

	entityTypes = []*container.Type{
		customerType, orderCustomerType, orderType, orderLineType, itemType, itemRWType,
		partType, bomType, workOrderType, largeOrderType, inventoryType,
		suppComponentType, purchaseOrderType, poLineType, outboxType,
	}
)

const (
	cFirst = iota
	cLast
	cStreet1
	cStreet2
	cCity
	cState
	cCountry
	cZip
	cPhone
	cContact
	cSince
	cBalance
	cCredit
	cCreditLimit
	cYTDPayment
)

const (
	oCustomer = iota
	oLineCount
	oDiscount
	oTotal
	oStatus
	oEntryDate
	oShipDate
)

const (
	olItem = iota
	olQty
	olStatus
	olShipDate
)

const (
	iName = iota
	iDesc
	iPrice
	iDiscount
)

const (
	pLomark = 6
	pHimark = 7
)

const (
	bLineNo = iota
	bQty
)

const (
	woOrder = iota
	woOrderLine
	woStatus
	woAssembly
	woOrigQty
	woCompQty
	woDueDate
	woStartDate
)

const (
	loOrder = iota
	loOrderLine
	loAssembly
	loQty
	loDueDate
)

const (
	inQty = iota
	inOrdered
	inLocation
	inAccCode
	inActDate
)

const (
	scPrice = iota
	scQty
	scDiscount
	scLeadTime
)

const (
	poSupplier = iota
	poSite
	poStatus
	poCreated
)

const (
	polPart = iota
	polQty
	polBalance
	polDelDate
	polMessage
)

// Status codes of the schema.
const (
	orderOpen    = 1
	orderShipped = 2

	woOpen      = 1
	woCompleted = 4

	poUnsent   = 0
	poSent     = 1
	poReceived = 2
)

// Bounds of finders.
const (
	customerStatusOrders = 10
	largeOrdersPerPoll   = 100
	posPerPoll           = 50
)
