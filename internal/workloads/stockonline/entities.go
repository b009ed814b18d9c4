package stockonline

import "github.com/tierbench/tierbench/internal/container"

// The four entity types of section 3.6, one per table (Table 3 gives their
// behaviour in a 100-client run). Field indexes follow the declarations.
var (
	accountType = &container.Type{
		Name:  "Account",
		Table: "SubAccount",
		Key:   []container.Column{{Name: "sub_accno", Kind: container.Int}},
		Fields: []container.Column{
			{Name: "sub_name", Kind: container.String},
			{Name: "sub_address", Kind: container.String},
			{Name: "sub_credit", Kind: container.Int},
		},
		Version: "version",
		KeyGen:  container.KeySequence,
		Updated: true, // UpdateAccount
	}
	itemType = &container.Type{
		Name:  "Item",
		Table: "StockItem",
		Key:   []container.Column{{Name: "stock_id", Kind: container.Int}},
		Fields: []container.Column{
			{Name: "stock_code", Kind: container.String},
			{Name: "company_name", Kind: container.String},
			{Name: "current_value", Kind: container.Int},
			{Name: "high_value", Kind: container.Int},
			{Name: "low_value", Kind: container.Int},
		},
		Version: "version",
		Finders: []container.Finder{{Name: "byCode", Where: "stock_code = ?"}},
	}
	holdingType = &container.Type{
		Name:  "Holding",
		Table: "StockHolding",
		Key: []container.Column{
			{Name: "sub_accno", Kind: container.Int},
			{Name: "stock_id", Kind: container.Int},
		},
		Fields:  []container.Column{{Name: "amount", Kind: container.Int}},
		Version: "version",
		Finders: []container.Finder{{Name: "byAccount", Where: "sub_accno = ? AND amount > 0", OrderBy: "stock_id", Limit: maxHoldingStatement, Many: true}},
		Updated: true, // BuyStock, SellStock
	}
	transactionType = &container.Type{
		Name:  "Transaction",
		Table: "StockTransaction",
		Key:   []container.Column{{Name: "trans_id", Kind: container.Int}},
		Fields: []container.Column{
			{Name: "trans_type", Kind: container.String},
			{Name: "sub_accno", Kind: container.Int},
			{Name: "stock_id", Kind: container.Int},
			{Name: "amount", Kind: container.Int},
			{Name: "price", Kind: container.Int},
			{Name: "trans_date", Kind: container.Time},
		},
		KeyGen: container.KeySequence,
		// Created and never used again: the paper fixes it to option C
		// ("otherwise it would need a large cache, but … a cache is
		// wasted on it").
		Preset: container.Preset{CommitOption: container.OptionC},
	}
	entityTypes = []*container.Type{accountType, itemType, holdingType, transactionType}
)

// Field indexes.
const (
	accountName = iota
	accountAddress
	accountCredit
)

const (
	itemCode = iota
	itemCompany
	itemCurrent
	itemHigh
	itemLow
)

const holdingAmount = 0

const (
	transType = iota
	transAccount
	transStock
	transAmount
	transPrice
	transDate
)

// warmed are the types the paper's warm-up reads ("read-only operations on
// Account, Item, and Holding objects").
var warmed = []*container.Type{accountType, itemType, holdingType}
