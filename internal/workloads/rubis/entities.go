package rubis

import "github.com/tierbench/tierbench/internal/container"

// The entity types of the EJB versions of RUBiS (EJB_EntityBean_id: one
// entity bean per table), over the tables of schema/*.sql with their
// names unchanged. Field indexes follow the declarations (the constants
// below).
//
// Keys of new rows come from the container's KeySequence: on PostgreSQL
// the tables' own SERIAL sequences, which the load moves past its keys
// and the direct tier draws from too; elsewhere counting up from the
// largest key when the container starts, as AUTO_INCREMENT and SQLite's
// rowid do after the loader's explicit keys. The original's IDManager
// bean, one row of the ids table updated by every insert, would queue
// every registration, bid, comment and purchase on that row, which the
// direct tier does not do either; ids is left as the loader wrote it.
//
// Finders that page (the searches) carry "LIMIT ? OFFSET ?" after their
// ORDER BY: the container appends ORDER BY, then a fixed Limit, and the
// page is a parameter here.
var (
	userType = &container.Type{
		Name:  "Users",
		Table: "users",
		Key:   []container.Column{{Name: "id", Kind: container.Int}},
		Fields: []container.Column{
			{Name: "firstname", Kind: container.String},
			{Name: "lastname", Kind: container.String},
			{Name: "nickname", Kind: container.String},
			{Name: "password", Kind: container.String},
			{Name: "email", Kind: container.String},
			{Name: "rating", Kind: container.Int},
			{Name: "balance", Kind: container.Float},
			{Name: "creation_date", Kind: container.Time},
			{Name: "region", Kind: container.Int},
		},
		KeyGen: container.KeySequence,
		Finders: []container.Finder{
			// The PHP's login, compared by the database as the direct
			// tier's query compares it (on MySQL, by the column's
			// collation).
			{Name: "byLogin", Where: "nickname = ? AND password = ?"},
			// RegisterUser's "is this nickname taken" (UserHome.findByNickName).
			{Name: "byNickname", Where: "nickname = ?"},
		},
		Updated: true, // StoreComment rates the user
	}
	itemType = &container.Type{
		Name:   "Items",
		Table:  "items",
		Key:    []container.Column{{Name: "id", Kind: container.Int}},
		Fields: itemFields,
		KeyGen: container.KeySequence,
		Finders: []container.Finder{
			// The PHP pages have no ORDER BY; paging needs one to be stable.
			{Name: "byCategory", Where: "category = ? AND end_date >= ?", OrderBy: "id LIMIT ? OFFSET ?", Many: true},
			// The direct tier's join with users, as a condition on items.
			{Name: "byCategoryRegion", Where: "category = ? AND seller IN (SELECT id FROM users WHERE region = ?) AND end_date >= ?",
				OrderBy: "id LIMIT ? OFFSET ?", Many: true},
			{Name: "selling", Where: "seller = ? AND end_date >= ?", OrderBy: "id", Many: true},
			{Name: "sold", Where: "seller = ? AND end_date < ? AND end_date >= ?", OrderBy: "id", Many: true},
		},
		Updated: true, // StoreBid, StoreBuyNow
	}
	// oldItemType is old_items as its own type rather than direct SQL: the
	// pages read it as they read items (ViewItem and ViewBidHistory fall
	// back to it, AboutMe lists what was won and sold there), and nothing
	// writes it during a run.
	oldItemType = &container.Type{
		Name:   "OldItems",
		Table:  "old_items",
		Key:    []container.Column{{Name: "id", Kind: container.Int}},
		Fields: itemFields,
		Finders: []container.Finder{
			{Name: "sold", Where: "seller = ? AND end_date < ? AND end_date >= ?", OrderBy: "id", Many: true},
		},
	}
	bidType = &container.Type{
		Name:  "Bids",
		Table: "bids",
		Key:   []container.Column{{Name: "id", Kind: container.Int}},
		Fields: []container.Column{
			{Name: "user_id", Kind: container.Int},
			{Name: "item_id", Kind: container.Int},
			{Name: "qty", Kind: container.Int},
			{Name: "bid", Kind: container.Float},
			{Name: "max_bid", Kind: container.Float},
			{Name: "date", Kind: container.Time},
		},
		KeyGen: container.KeySequence,
		Finders: []container.Finder{
			// Newest first: the bid history's order, from which the price
			// is also worked out.
			{Name: "byItem", Where: "item_id = ?", OrderBy: "date DESC, id DESC", Many: true},
			{Name: "byUser", Where: "user_id = ?", OrderBy: "id", Many: true},
		},
	}
	commentType = &container.Type{
		Name:  "Comments",
		Table: "comments",
		Key:   []container.Column{{Name: "id", Kind: container.Int}},
		Fields: []container.Column{
			{Name: "from_user_id", Kind: container.Int},
			{Name: "to_user_id", Kind: container.Int},
			{Name: "item_id", Kind: container.Int},
			{Name: "rating", Kind: container.Int},
			{Name: "date", Kind: container.Time},
			{Name: "comment", Kind: container.String},
		},
		KeyGen:  container.KeySequence,
		Finders: []container.Finder{{Name: "aboutUser", Where: "to_user_id = ?", OrderBy: "id", Many: true}},
	}
	buyNowType = &container.Type{
		Name:  "BuyNow",
		Table: "buy_now",
		Key:   []container.Column{{Name: "id", Kind: container.Int}},
		Fields: []container.Column{
			{Name: "buyer_id", Kind: container.Int},
			{Name: "item_id", Kind: container.Int},
			{Name: "qty", Kind: container.Int},
			{Name: "date", Kind: container.Time},
		},
		KeyGen:  container.KeySequence,
		Finders: []container.Finder{{Name: "boughtSince", Where: "buyer_id = ? AND date >= ?", OrderBy: "id", Many: true}},
	}
	// Categories and regions are read only (the population's; no page
	// adds one). A finder needs a condition: "all" has a true one.
	categoryType = &container.Type{
		Name:    "Categories",
		Table:   "categories",
		Key:     []container.Column{{Name: "id", Kind: container.Int}},
		Fields:  []container.Column{{Name: "name", Kind: container.String}},
		Finders: []container.Finder{{Name: "all", Where: "1 = 1", OrderBy: "id", Many: true}},
	}
	regionType = &container.Type{
		Name:   "Regions",
		Table:  "regions",
		Key:    []container.Column{{Name: "id", Kind: container.Int}},
		Fields: []container.Column{{Name: "name", Kind: container.String}},
		Finders: []container.Finder{
			{Name: "all", Where: "1 = 1", OrderBy: "id", Many: true},
			{Name: "byName", Where: "name = ?"},
		},
	}
	entityTypes = []*container.Type{userType, itemType, oldItemType, bidType, commentType, buyNowType, categoryType, regionType}
)

// itemFields are the columns of items and old_items after id, in Item's
// order.
var itemFields = []container.Column{
	{Name: "name", Kind: container.String},
	{Name: "description", Kind: container.String},
	{Name: "initial_price", Kind: container.Float},
	{Name: "quantity", Kind: container.Int},
	{Name: "reserve_price", Kind: container.Float},
	{Name: "buy_now", Kind: container.Float},
	{Name: "nb_of_bids", Kind: container.Int},
	{Name: "max_bid", Kind: container.Float},
	{Name: "start_date", Kind: container.Time},
	{Name: "end_date", Kind: container.Time},
	{Name: "seller", Kind: container.Int},
	{Name: "category", Kind: container.Int},
}

// Field indexes.
const (
	userFirstname = iota
	userLastname
	userNickname
	userPassword
	userEmail
	userRating
	userBalance
	userCreationDate
	userRegion
)

const (
	itName = iota
	itDescription
	itInitialPrice
	itQuantity
	itReservePrice
	itBuyNow
	itNbOfBids
	itMaxBid
	itStartDate
	itEndDate
	itSeller
	itCategory
)

const (
	bidUser = iota
	bidItem
	bidQty
	bidBid
	bidMaxBid
	bidDate
)

const (
	commentFrom = iota
	commentTo
	commentItem
	commentRating
	commentDate
	commentText
)

const (
	buyNowBuyer = iota
	buyNowItem
	buyNowQty
	buyNowDate
)

// nameField is the one field of categories and regions.
const nameField = 0

// warmed are the types --warmup reads into the container before the run:
// those nearly every page reads by key.
var warmed = []*container.Type{categoryType, regionType, userType, itemType}
