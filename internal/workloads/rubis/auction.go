package rubis

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Auction is the RUBiS business tier: one method per interaction that
// touches data, each on a server thread's store session (thread, as a
// stockonline Step.Thread: 0 <= thread < the run's server threads, and
// one caller per thread at a time). Requests and results are plain data,
// so the web tier renders pages from them and a remote tier can carry
// them; the web tier depends on nothing else of the business tier.
//
// An outcome the original shows on its error page (a wrong password, an
// unknown item, a nickname taken, a bid too low) is a *PageError; any
// other error is a failure of the tier (a database unreachable, retries
// exhausted).
type Auction interface {
	RegisterUser(ctx context.Context, thread int, r RegisterUserRequest) (RegisterUserResult, error)
	BrowseCategories(ctx context.Context, thread int, r BrowseCategoriesRequest) (BrowseCategoriesResult, error)
	SearchItemsByCategory(ctx context.Context, thread int, r SearchItemsByCategoryRequest) (SearchItemsResult, error)
	BrowseRegions(ctx context.Context, thread int, r BrowseRegionsRequest) (BrowseRegionsResult, error)
	BrowseCategoriesInRegion(ctx context.Context, thread int, r BrowseCategoriesInRegionRequest) (BrowseCategoriesInRegionResult, error)
	SearchItemsByRegion(ctx context.Context, thread int, r SearchItemsByRegionRequest) (SearchItemsResult, error)
	ViewItem(ctx context.Context, thread int, r ViewItemRequest) (ViewItemResult, error)
	ViewUserInfo(ctx context.Context, thread int, r ViewUserInfoRequest) (ViewUserInfoResult, error)
	ViewBidHistory(ctx context.Context, thread int, r ViewBidHistoryRequest) (ViewBidHistoryResult, error)
	BuyNow(ctx context.Context, thread int, r BuyNowRequest) (BuyNowResult, error)
	StoreBuyNow(ctx context.Context, thread int, r StoreBuyNowRequest) (StoreBuyNowResult, error)
	PutBid(ctx context.Context, thread int, r PutBidRequest) (PutBidResult, error)
	StoreBid(ctx context.Context, thread int, r StoreBidRequest) (StoreBidResult, error)
	PutComment(ctx context.Context, thread int, r PutCommentRequest) (PutCommentResult, error)
	StoreComment(ctx context.Context, thread int, r StoreCommentRequest) (StoreCommentResult, error)
	SelectCategoryToSellItem(ctx context.Context, thread int, r SelectCategoryToSellItemRequest) (SelectCategoryToSellItemResult, error)
	RegisterItem(ctx context.Context, thread int, r RegisterItemRequest) (RegisterItemResult, error)
	AboutMe(ctx context.Context, thread int, r AboutMeRequest) (AboutMeResult, error)
}

// PageError is a business outcome the original shows on its error page;
// Title is the page's subject ("Authentication", "PutBid"), Message what
// went wrong in the original's words. Messages of things that do not
// exist contain "Sorry", which the RUBiS client reads as "go back".
type PageError struct {
	Title   string
	Message string
}

func (e *PageError) Error() string { return e.Title + ": " + e.Message }

// IsPageError reports whether err is, or wraps, a *PageError.
func IsPageError(err error) bool {
	var pe *PageError
	return errors.As(err, &pe)
}

// The page errors shared by several interactions, in the PHP pages' words.
var (
	errNoAccount = func(title string) *PageError {
		return &PageError{Title: title, Message: "You don't have an account on RUBiS! You have to register first."}
	}
	errNoItem = func(title string) *PageError {
		return &PageError{Title: title, Message: "Sorry, but this item does not exist."}
	}
	errNoUser = func(title string) *PageError {
		return &PageError{Title: title, Message: "Sorry, but this user does not exist."}
	}
)

// Searches show this many items per page unless the request says
// otherwise (the RUBiS client's workload_number_of_items_per_page), and
// never more than MaxItemsPerPage.
const (
	DefaultItemsPerPage = 20
	MaxItemsPerPage     = 100
)

// Category is a row of categories; Region a row of regions.
type Category struct {
	ID   int64
	Name string
}

type Region struct {
	ID   int64
	Name string
}

// User is a row of users, less the password.
type User struct {
	ID           int64
	Firstname    string
	Lastname     string
	Nickname     string
	Email        string
	Rating       int64
	Balance      float64
	CreationDate time.Time
	Region       int64
}

// Item is a row of items or, when Old, of old_items.
type Item struct {
	ID           int64
	Name         string
	Description  string
	InitialPrice float64
	Quantity     int64
	ReservePrice float64
	BuyNow       float64
	NbOfBids     int64
	MaxBid       float64
	StartDate    time.Time
	EndDate      time.Time
	Seller       int64
	Category     int64
	Old          bool
}

// ItemSummary is a line of a search: an open auction.
type ItemSummary struct {
	ID           int64
	Name         string
	InitialPrice float64
	MaxBid       float64
	NbOfBids     int64
	EndDate      time.Time
}

// Price is what the search pages show: the highest max bid, or the
// initial price before any bid.
func (s ItemSummary) Price() float64 {
	if s.MaxBid == 0 {
		return s.InitialPrice
	}
	return s.MaxBid
}

// Comment is a comment about a user, with its author's nickname.
type Comment struct {
	ID           int64
	From         int64
	FromNickname string
	ItemID       int64
	Rating       int64
	Date         time.Time
	Text         string
}

// Bid is a line of a bid history, with the bidder's nickname.
type Bid struct {
	UserID   int64
	Nickname string
	Qty      int64
	Bid      float64
	MaxBid   float64
	Date     time.Time
}

// ItemPrice is an item as ViewItem and PutBid show it: the current price
// as the PHP pages compute it from the bids (the highest bid, or for a
// multi-quantity item the bid at which the quantity runs out; the initial
// price without bids), and whether it can still be bought now (only
// before the first bid).
type ItemPrice struct {
	Item
	SellerNickname string
	CurrentPrice   float64
	Bids           int64 // counted from bids, as the PHP does
	BuyNowOffered  bool
}

type RegisterUserRequest struct {
	Firstname, Lastname, Nickname, Password, Email string
	// Region is the region's name, as the registration form asks for it.
	Region string
}

type RegisterUserResult struct {
	User   User
	Region Region
}

type BrowseCategoriesRequest struct{}

type BrowseCategoriesResult struct{ Categories []Category }

// SearchItemsByCategoryRequest: page counts from 0, NbOfItems items each.
type SearchItemsByCategoryRequest struct {
	Category  int64
	Page      int
	NbOfItems int
}

type SearchItemsResult struct{ Items []ItemSummary }

type BrowseRegionsRequest struct{}

type BrowseRegionsResult struct{ Regions []Region }

// BrowseCategoriesInRegionRequest names the region by id (the links of
// BrowseRegions) or by name (the RUBiS client sends names).
type BrowseCategoriesInRegionRequest struct{ Region string }

type BrowseCategoriesInRegionResult struct {
	Region     Region
	Categories []Category
}

type SearchItemsByRegionRequest struct {
	Region    int64
	Category  int64
	Page      int
	NbOfItems int
}

type ViewItemRequest struct{ ItemID int64 }

type ViewItemResult struct{ ItemPrice }

type ViewUserInfoRequest struct{ UserID int64 }

type ViewUserInfoResult struct {
	User     User
	Comments []Comment
}

type ViewBidHistoryRequest struct{ ItemID int64 }

type ViewBidHistoryResult struct {
	ItemID   int64
	ItemName string
	Bids     []Bid // newest first
}

type BuyNowRequest struct {
	Nickname, Password string
	ItemID             int64
}

type BuyNowResult struct {
	UserID         int64
	Item           Item
	SellerNickname string
}

// StoreBuyNowRequest: MaxQty is the quantity the BuyNow page offered; the
// database decides what is really left.
type StoreBuyNowRequest struct {
	UserID, ItemID int64
	Qty, MaxQty    int64
}

type StoreBuyNowResult struct{ Qty int64 }

// check refuses, as the original's page does before any query, a quantity
// the form did not offer.
func (r StoreBuyNowRequest) check() error {
	const title = "StoreBuyNow"
	if r.Qty > r.MaxQty {
		return &PageError{Title: title,
			Message: fmt.Sprintf("You cannot request %d items because only %d are proposed!", r.Qty, r.MaxQty)}
	}
	if r.Qty < 1 {
		return &PageError{Title: title, Message: fmt.Sprintf("You cannot request %d items.", r.Qty)}
	}
	return nil
}

type PutBidRequest struct {
	Nickname, Password string
	ItemID             int64
}

type PutBidResult struct {
	UserID int64
	ItemPrice
	MinBid float64 // the current price + 1
}

// StoreBidRequest carries the PutBid form: MinBid and MaxQty are what the
// page offered, Bid, MaxBid and Qty what the user entered.
type StoreBidRequest struct {
	UserID, ItemID      int64
	MinBid, Bid, MaxBid float64
	Qty, MaxQty         int64
}

type StoreBidResult struct{}

type PutCommentRequest struct {
	Nickname, Password string
	ItemID             int64
	To                 int64
}

type PutCommentResult struct {
	UserID   int64
	Nickname string
	Item     Item
	To       User
}

type StoreCommentRequest struct {
	From, To, ItemID int64
	Rating           int64
	Comment          string
}

type StoreCommentResult struct{}

type SelectCategoryToSellItemRequest struct{ Nickname, Password string }

type SelectCategoryToSellItemResult struct {
	UserID     int64
	Categories []Category
}

// RegisterItemRequest: Duration in days from now.
type RegisterItemRequest struct {
	UserID, CategoryID                 int64
	Name, Description                  string
	InitialPrice, ReservePrice, BuyNow float64
	Duration                           int64
	Quantity                           int64
}

type RegisterItemResult struct{ Item Item }

type AboutMeRequest struct{ Nickname, Password string }

// AboutMeResult is the user's page. Won and Sold are the items that
// ended in the last 30 days (from items or old_items) that the user bid
// on, or sold; Bought the purchases of the last 30 days.
type AboutMeResult struct {
	User     User
	Password string // for the PutBid links of the page, as the PHP writes them
	Bidding  []AboutMeBid
	Won      []AboutMeWon
	Bought   []AboutMeBought
	Selling  []Item
	Sold     []Item
	Comments []Comment
}

// AboutMeBid is an open auction the user bid on, with their highest max bid.
type AboutMeBid struct {
	Item           Item
	YourMaxBid     float64
	SellerNickname string
}

type AboutMeWon struct {
	Item           Item
	SellerNickname string
}

type AboutMeBought struct {
	Item           Item
	Qty            int64
	Price          float64 // buy_now price × quantity
	Date           time.Time
	SellerNickname string
}

// multiUnitPrice is the PHP's price of a multi-unit auction: walking the
// highest bids, highest first, the bid at which the units bid for exceed
// the quantity offered; price (the highest bid) when they never do.
func multiUnitPrice(top []Bid, quantity int64, price float64) float64 {
	var units int64
	for _, b := range top {
		if units += b.Qty; units > quantity {
			return b.Bid
		}
	}
	return price
}
