package rubis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/workloads/rubis/rubispb"
)

// The business tier across a process boundary: ServeAuction answers the
// Auction service of rubispb with an Auction, RemoteAuction is an Auction
// that calls it. Each Auction call is one remote call whatever the
// protocol (internal/remote carries the generated service over grpc or
// http alike); results and page errors come back as the implementation
// behind the server returned them, so the web tier cannot tell.

// ServeAuction registers on s the Auction service answered by a, with
// threads server threads (remote.Threads: each call on its own thread's
// store session, the others waiting, as the web tier's Site does in one
// process). A page error crosses as FailedPrecondition with a
// rubispb.PageError detail; any other error as remote.FailureStatus.
func ServeAuction(s grpc.ServiceRegistrar, a Auction, threads int) {
	rubispb.RegisterAuctionServer(s, &sessionBean{a: a, threads: remote.NewThreads(threads)})
}

// sessionBean is the remote interface of the session and facade styles'
// business tier: one call per interaction, answered by the Auction behind
// it (Servlets under session, Facade under facade).
type sessionBean struct {
	rubispb.UnimplementedAuctionServer
	a       Auction
	threads *remote.Threads
}

// serve runs m on a free thread, waiting for one while all are busy or
// until the caller gives up, and converts its result with out.
func serve[Req, Res, Reply any](ctx context.Context, b *sessionBean, m func(context.Context, int, Req) (Res, error), req Req, out func(Res) *Reply) (*Reply, error) {
	thread, err := b.threads.Take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(thread)
	res, err := m(ctx, thread, req)
	if err != nil {
		return nil, errorStatus(err)
	}
	return out(res), nil
}

// errorStatus is the status err crosses the layer as.
func errorStatus(err error) error {
	var pe *PageError
	if errors.As(err, &pe) {
		st, derr := status.New(codes.FailedPrecondition, err.Error()).WithDetails(&rubispb.PageError{Title: pe.Title, Message: pe.Message})
		if derr != nil {
			return status.Errorf(codes.Internal, "%v (its page error could not be sent: %v)", err, derr)
		}
		return st.Err()
	}
	return remote.FailureStatus(err)
}

// RemoteAuction is the Auction behind conn, a connection to a tier that
// ServeAuction answers. The thread argument of its methods is not sent:
// the business tier runs each call on a thread of its own pool. A page
// error comes back as the same *PageError; any other error is the
// layer's status (status.Code reads it) wrapped with the method's name.
// With an error the result is the zero value: an implementation in
// process may return part of one (Servlets does), which no caller reads.
func RemoteAuction(conn grpc.ClientConnInterface) Auction {
	return sessionClient{rubispb.NewAuctionClient(conn)}
}

// sessionClient is the web tier's Auction under the session and facade
// styles: each interaction one call to the sessionBean of the business
// tier.
type sessionClient struct{ c rubispb.AuctionClient }

var _ Auction = sessionClient{}

// invoke makes the call of method with req and converts its reply with in.
func invoke[Req, Reply, Res any](ctx context.Context, method string, call func(context.Context, *Req, ...grpc.CallOption) (*Reply, error), req *Req, in func(*Reply) Res) (Res, error) {
	reply, err := call(ctx, req)
	if err != nil {
		var zero Res
		return zero, remoteError(method, err)
	}
	return in(reply), nil
}

// remoteError turns the status of a page error back into the *PageError.
func remoteError(method string, err error) error {
	if st, ok := status.FromError(err); ok && st.Code() == codes.FailedPrecondition {
		for _, d := range st.Details() {
			if pe, ok := d.(*rubispb.PageError); ok {
				return &PageError{Title: pe.GetTitle(), Message: pe.GetMessage()}
			}
		}
	}
	return remote.FailureError(fmt.Errorf("remote %s: %w", method, err))
}

// The methods, client side then server side, in Auction's order.

func (r sessionClient) RegisterUser(ctx context.Context, _ int, req RegisterUserRequest) (RegisterUserResult, error) {
	return invoke(ctx, "RegisterUser", r.c.RegisterUser, &rubispb.RegisterUserRequest{Firstname: req.Firstname, Lastname: req.Lastname,
		Nickname: req.Nickname, Password: req.Password, Email: req.Email, Region: req.Region}, registerUserResultFromPB)
}

func (b *sessionBean) RegisterUser(ctx context.Context, r *rubispb.RegisterUserRequest) (*rubispb.RegisterUserResult, error) {
	return serve(ctx, b, b.a.RegisterUser, RegisterUserRequest{Firstname: r.GetFirstname(), Lastname: r.GetLastname(),
		Nickname: r.GetNickname(), Password: r.GetPassword(), Email: r.GetEmail(), Region: r.GetRegion()}, registerUserResultToPB)
}

func (r sessionClient) BrowseCategories(ctx context.Context, _ int, _ BrowseCategoriesRequest) (BrowseCategoriesResult, error) {
	return invoke(ctx, "BrowseCategories", r.c.BrowseCategories, &rubispb.BrowseCategoriesRequest{},
		func(p *rubispb.BrowseCategoriesResult) BrowseCategoriesResult {
			return BrowseCategoriesResult{Categories: each(p.GetCategories(), categoryFromPB)}
		})
}

func (b *sessionBean) BrowseCategories(ctx context.Context, _ *rubispb.BrowseCategoriesRequest) (*rubispb.BrowseCategoriesResult, error) {
	return serve(ctx, b, b.a.BrowseCategories, BrowseCategoriesRequest{}, func(res BrowseCategoriesResult) *rubispb.BrowseCategoriesResult {
		return &rubispb.BrowseCategoriesResult{Categories: each(res.Categories, categoryToPB)}
	})
}

func (r sessionClient) SearchItemsByCategory(ctx context.Context, _ int, req SearchItemsByCategoryRequest) (SearchItemsResult, error) {
	return invoke(ctx, "SearchItemsByCategory", r.c.SearchItemsByCategory, &rubispb.SearchItemsByCategoryRequest{Category: req.Category,
		Page: int64(req.Page), NbOfItems: int64(req.NbOfItems)}, searchItemsResultFromPB)
}

func (b *sessionBean) SearchItemsByCategory(ctx context.Context, r *rubispb.SearchItemsByCategoryRequest) (*rubispb.SearchItemsResult, error) {
	return serve(ctx, b, b.a.SearchItemsByCategory, SearchItemsByCategoryRequest{Category: r.GetCategory(),
		Page: int(r.GetPage()), NbOfItems: int(r.GetNbOfItems())}, searchItemsResultToPB)
}

func (r sessionClient) BrowseRegions(ctx context.Context, _ int, _ BrowseRegionsRequest) (BrowseRegionsResult, error) {
	return invoke(ctx, "BrowseRegions", r.c.BrowseRegions, &rubispb.BrowseRegionsRequest{},
		func(p *rubispb.BrowseRegionsResult) BrowseRegionsResult {
			return BrowseRegionsResult{Regions: each(p.GetRegions(), regionFromPB)}
		})
}

func (b *sessionBean) BrowseRegions(ctx context.Context, _ *rubispb.BrowseRegionsRequest) (*rubispb.BrowseRegionsResult, error) {
	return serve(ctx, b, b.a.BrowseRegions, BrowseRegionsRequest{}, func(res BrowseRegionsResult) *rubispb.BrowseRegionsResult {
		return &rubispb.BrowseRegionsResult{Regions: each(res.Regions, regionToPB)}
	})
}

func (r sessionClient) BrowseCategoriesInRegion(ctx context.Context, _ int, req BrowseCategoriesInRegionRequest) (BrowseCategoriesInRegionResult, error) {
	return invoke(ctx, "BrowseCategoriesInRegion", r.c.BrowseCategoriesInRegion, &rubispb.BrowseCategoriesInRegionRequest{Region: req.Region},
		func(p *rubispb.BrowseCategoriesInRegionResult) BrowseCategoriesInRegionResult {
			return BrowseCategoriesInRegionResult{Region: regionFromPB(p.GetRegion()), Categories: each(p.GetCategories(), categoryFromPB)}
		})
}

func (b *sessionBean) BrowseCategoriesInRegion(ctx context.Context, r *rubispb.BrowseCategoriesInRegionRequest) (*rubispb.BrowseCategoriesInRegionResult, error) {
	return serve(ctx, b, b.a.BrowseCategoriesInRegion, BrowseCategoriesInRegionRequest{Region: r.GetRegion()},
		func(res BrowseCategoriesInRegionResult) *rubispb.BrowseCategoriesInRegionResult {
			return &rubispb.BrowseCategoriesInRegionResult{Region: regionToPB(res.Region), Categories: each(res.Categories, categoryToPB)}
		})
}

func (r sessionClient) SearchItemsByRegion(ctx context.Context, _ int, req SearchItemsByRegionRequest) (SearchItemsResult, error) {
	return invoke(ctx, "SearchItemsByRegion", r.c.SearchItemsByRegion, &rubispb.SearchItemsByRegionRequest{Region: req.Region,
		Category: req.Category, Page: int64(req.Page), NbOfItems: int64(req.NbOfItems)}, searchItemsResultFromPB)
}

func (b *sessionBean) SearchItemsByRegion(ctx context.Context, r *rubispb.SearchItemsByRegionRequest) (*rubispb.SearchItemsResult, error) {
	return serve(ctx, b, b.a.SearchItemsByRegion, SearchItemsByRegionRequest{Region: r.GetRegion(), Category: r.GetCategory(),
		Page: int(r.GetPage()), NbOfItems: int(r.GetNbOfItems())}, searchItemsResultToPB)
}

func (r sessionClient) ViewItem(ctx context.Context, _ int, req ViewItemRequest) (ViewItemResult, error) {
	return invoke(ctx, "ViewItem", r.c.ViewItem, &rubispb.ViewItemRequest{ItemId: req.ItemID},
		func(p *rubispb.ViewItemResult) ViewItemResult {
			return ViewItemResult{ItemPrice: itemPriceFromPB(p.GetItemPrice())}
		})
}

func (b *sessionBean) ViewItem(ctx context.Context, r *rubispb.ViewItemRequest) (*rubispb.ViewItemResult, error) {
	return serve(ctx, b, b.a.ViewItem, ViewItemRequest{ItemID: r.GetItemId()},
		func(res ViewItemResult) *rubispb.ViewItemResult {
			return &rubispb.ViewItemResult{ItemPrice: itemPriceToPB(res.ItemPrice)}
		})
}

func (r sessionClient) ViewUserInfo(ctx context.Context, _ int, req ViewUserInfoRequest) (ViewUserInfoResult, error) {
	return invoke(ctx, "ViewUserInfo", r.c.ViewUserInfo, &rubispb.ViewUserInfoRequest{UserId: req.UserID},
		func(p *rubispb.ViewUserInfoResult) ViewUserInfoResult {
			return ViewUserInfoResult{User: userFromPB(p.GetUser()), Comments: each(p.GetComments(), commentFromPB)}
		})
}

func (b *sessionBean) ViewUserInfo(ctx context.Context, r *rubispb.ViewUserInfoRequest) (*rubispb.ViewUserInfoResult, error) {
	return serve(ctx, b, b.a.ViewUserInfo, ViewUserInfoRequest{UserID: r.GetUserId()}, func(res ViewUserInfoResult) *rubispb.ViewUserInfoResult {
		return &rubispb.ViewUserInfoResult{User: userToPB(res.User), Comments: each(res.Comments, commentToPB)}
	})
}

func (r sessionClient) ViewBidHistory(ctx context.Context, _ int, req ViewBidHistoryRequest) (ViewBidHistoryResult, error) {
	return invoke(ctx, "ViewBidHistory", r.c.ViewBidHistory, &rubispb.ViewBidHistoryRequest{ItemId: req.ItemID},
		func(p *rubispb.ViewBidHistoryResult) ViewBidHistoryResult {
			return ViewBidHistoryResult{ItemID: p.GetItemId(), ItemName: p.GetItemName(), Bids: each(p.GetBids(), bidFromPB)}
		})
}

func (b *sessionBean) ViewBidHistory(ctx context.Context, r *rubispb.ViewBidHistoryRequest) (*rubispb.ViewBidHistoryResult, error) {
	return serve(ctx, b, b.a.ViewBidHistory, ViewBidHistoryRequest{ItemID: r.GetItemId()}, func(res ViewBidHistoryResult) *rubispb.ViewBidHistoryResult {
		return &rubispb.ViewBidHistoryResult{ItemId: res.ItemID, ItemName: res.ItemName, Bids: each(res.Bids, bidToPB)}
	})
}

func (r sessionClient) BuyNow(ctx context.Context, _ int, req BuyNowRequest) (BuyNowResult, error) {
	return invoke(ctx, "BuyNow", r.c.BuyNow, &rubispb.BuyNowRequest{Nickname: req.Nickname, Password: req.Password, ItemId: req.ItemID},
		func(p *rubispb.BuyNowResult) BuyNowResult {
			return BuyNowResult{UserID: p.GetUserId(), Item: itemFromPB(p.GetItem()), SellerNickname: p.GetSellerNickname()}
		})
}

func (b *sessionBean) BuyNow(ctx context.Context, r *rubispb.BuyNowRequest) (*rubispb.BuyNowResult, error) {
	return serve(ctx, b, b.a.BuyNow, BuyNowRequest{Nickname: r.GetNickname(), Password: r.GetPassword(), ItemID: r.GetItemId()},
		func(res BuyNowResult) *rubispb.BuyNowResult {
			return &rubispb.BuyNowResult{UserId: res.UserID, Item: itemToPB(res.Item), SellerNickname: res.SellerNickname}
		})
}

func (r sessionClient) StoreBuyNow(ctx context.Context, _ int, req StoreBuyNowRequest) (StoreBuyNowResult, error) {
	return invoke(ctx, "StoreBuyNow", r.c.StoreBuyNow, &rubispb.StoreBuyNowRequest{UserId: req.UserID, ItemId: req.ItemID, Qty: req.Qty, MaxQty: req.MaxQty},
		func(p *rubispb.StoreBuyNowResult) StoreBuyNowResult { return StoreBuyNowResult{Qty: p.GetQty()} })
}

func (b *sessionBean) StoreBuyNow(ctx context.Context, r *rubispb.StoreBuyNowRequest) (*rubispb.StoreBuyNowResult, error) {
	return serve(ctx, b, b.a.StoreBuyNow, StoreBuyNowRequest{UserID: r.GetUserId(), ItemID: r.GetItemId(), Qty: r.GetQty(), MaxQty: r.GetMaxQty()},
		func(res StoreBuyNowResult) *rubispb.StoreBuyNowResult {
			return &rubispb.StoreBuyNowResult{Qty: res.Qty}
		})
}

func (r sessionClient) PutBid(ctx context.Context, _ int, req PutBidRequest) (PutBidResult, error) {
	return invoke(ctx, "PutBid", r.c.PutBid, &rubispb.PutBidRequest{Nickname: req.Nickname, Password: req.Password, ItemId: req.ItemID},
		func(p *rubispb.PutBidResult) PutBidResult {
			return PutBidResult{UserID: p.GetUserId(), ItemPrice: itemPriceFromPB(p.GetItemPrice()), MinBid: p.GetMinBid()}
		})
}

func (b *sessionBean) PutBid(ctx context.Context, r *rubispb.PutBidRequest) (*rubispb.PutBidResult, error) {
	return serve(ctx, b, b.a.PutBid, PutBidRequest{Nickname: r.GetNickname(), Password: r.GetPassword(), ItemID: r.GetItemId()},
		func(res PutBidResult) *rubispb.PutBidResult {
			return &rubispb.PutBidResult{UserId: res.UserID, ItemPrice: itemPriceToPB(res.ItemPrice), MinBid: res.MinBid}
		})
}

func (r sessionClient) StoreBid(ctx context.Context, _ int, req StoreBidRequest) (StoreBidResult, error) {
	return invoke(ctx, "StoreBid", r.c.StoreBid, &rubispb.StoreBidRequest{UserId: req.UserID, ItemId: req.ItemID, MinBid: req.MinBid,
		Bid: req.Bid, MaxBid: req.MaxBid, Qty: req.Qty, MaxQty: req.MaxQty},
		func(*rubispb.StoreBidResult) StoreBidResult { return StoreBidResult{} })
}

func (b *sessionBean) StoreBid(ctx context.Context, r *rubispb.StoreBidRequest) (*rubispb.StoreBidResult, error) {
	return serve(ctx, b, b.a.StoreBid, StoreBidRequest{UserID: r.GetUserId(), ItemID: r.GetItemId(), MinBid: r.GetMinBid(),
		Bid: r.GetBid(), MaxBid: r.GetMaxBid(), Qty: r.GetQty(), MaxQty: r.GetMaxQty()},
		func(StoreBidResult) *rubispb.StoreBidResult { return &rubispb.StoreBidResult{} })
}

func (r sessionClient) PutComment(ctx context.Context, _ int, req PutCommentRequest) (PutCommentResult, error) {
	return invoke(ctx, "PutComment", r.c.PutComment, &rubispb.PutCommentRequest{Nickname: req.Nickname, Password: req.Password,
		ItemId: req.ItemID, To: req.To},
		func(p *rubispb.PutCommentResult) PutCommentResult {
			return PutCommentResult{UserID: p.GetUserId(), Nickname: p.GetNickname(), Item: itemFromPB(p.GetItem()), To: userFromPB(p.GetTo())}
		})
}

func (b *sessionBean) PutComment(ctx context.Context, r *rubispb.PutCommentRequest) (*rubispb.PutCommentResult, error) {
	return serve(ctx, b, b.a.PutComment, PutCommentRequest{Nickname: r.GetNickname(), Password: r.GetPassword(), ItemID: r.GetItemId(), To: r.GetTo()},
		func(res PutCommentResult) *rubispb.PutCommentResult {
			return &rubispb.PutCommentResult{UserId: res.UserID, Nickname: res.Nickname, Item: itemToPB(res.Item), To: userToPB(res.To)}
		})
}

func (r sessionClient) StoreComment(ctx context.Context, _ int, req StoreCommentRequest) (StoreCommentResult, error) {
	return invoke(ctx, "StoreComment", r.c.StoreComment, &rubispb.StoreCommentRequest{From: req.From, To: req.To, ItemId: req.ItemID,
		Rating: req.Rating, Comment: req.Comment},
		func(*rubispb.StoreCommentResult) StoreCommentResult { return StoreCommentResult{} })
}

func (b *sessionBean) StoreComment(ctx context.Context, r *rubispb.StoreCommentRequest) (*rubispb.StoreCommentResult, error) {
	return serve(ctx, b, b.a.StoreComment, StoreCommentRequest{From: r.GetFrom(), To: r.GetTo(), ItemID: r.GetItemId(),
		Rating: r.GetRating(), Comment: r.GetComment()},
		func(StoreCommentResult) *rubispb.StoreCommentResult { return &rubispb.StoreCommentResult{} })
}

func (r sessionClient) SelectCategoryToSellItem(ctx context.Context, _ int, req SelectCategoryToSellItemRequest) (SelectCategoryToSellItemResult, error) {
	return invoke(ctx, "SelectCategoryToSellItem", r.c.SelectCategoryToSellItem,
		&rubispb.SelectCategoryToSellItemRequest{Nickname: req.Nickname, Password: req.Password},
		func(p *rubispb.SelectCategoryToSellItemResult) SelectCategoryToSellItemResult {
			return SelectCategoryToSellItemResult{UserID: p.GetUserId(), Categories: each(p.GetCategories(), categoryFromPB)}
		})
}

func (b *sessionBean) SelectCategoryToSellItem(ctx context.Context, r *rubispb.SelectCategoryToSellItemRequest) (*rubispb.SelectCategoryToSellItemResult, error) {
	return serve(ctx, b, b.a.SelectCategoryToSellItem, SelectCategoryToSellItemRequest{Nickname: r.GetNickname(), Password: r.GetPassword()},
		func(res SelectCategoryToSellItemResult) *rubispb.SelectCategoryToSellItemResult {
			return &rubispb.SelectCategoryToSellItemResult{UserId: res.UserID, Categories: each(res.Categories, categoryToPB)}
		})
}

func (r sessionClient) RegisterItem(ctx context.Context, _ int, req RegisterItemRequest) (RegisterItemResult, error) {
	return invoke(ctx, "RegisterItem", r.c.RegisterItem, &rubispb.RegisterItemRequest{UserId: req.UserID, CategoryId: req.CategoryID,
		Name: req.Name, Description: req.Description, InitialPrice: req.InitialPrice, ReservePrice: req.ReservePrice, BuyNow: req.BuyNow,
		Duration: req.Duration, Quantity: req.Quantity},
		func(p *rubispb.RegisterItemResult) RegisterItemResult {
			return RegisterItemResult{Item: itemFromPB(p.GetItem())}
		})
}

func (b *sessionBean) RegisterItem(ctx context.Context, r *rubispb.RegisterItemRequest) (*rubispb.RegisterItemResult, error) {
	return serve(ctx, b, b.a.RegisterItem, RegisterItemRequest{UserID: r.GetUserId(), CategoryID: r.GetCategoryId(),
		Name: r.GetName(), Description: r.GetDescription(), InitialPrice: r.GetInitialPrice(), ReservePrice: r.GetReservePrice(), BuyNow: r.GetBuyNow(),
		Duration: r.GetDuration(), Quantity: r.GetQuantity()},
		func(res RegisterItemResult) *rubispb.RegisterItemResult {
			return &rubispb.RegisterItemResult{Item: itemToPB(res.Item)}
		})
}

func (r sessionClient) AboutMe(ctx context.Context, _ int, req AboutMeRequest) (AboutMeResult, error) {
	return invoke(ctx, "AboutMe", r.c.AboutMe, &rubispb.AboutMeRequest{Nickname: req.Nickname, Password: req.Password}, aboutMeResultFromPB)
}

func (b *sessionBean) AboutMe(ctx context.Context, r *rubispb.AboutMeRequest) (*rubispb.AboutMeResult, error) {
	return serve(ctx, b, b.a.AboutMe, AboutMeRequest{Nickname: r.GetNickname(), Password: r.GetPassword()}, aboutMeResultToPB)
}

// The results shared by two methods, or too long to sit in one.

func registerUserResultToPB(res RegisterUserResult) *rubispb.RegisterUserResult {
	return &rubispb.RegisterUserResult{User: userToPB(res.User), Region: regionToPB(res.Region)}
}

func registerUserResultFromPB(p *rubispb.RegisterUserResult) RegisterUserResult {
	return RegisterUserResult{User: userFromPB(p.GetUser()), Region: regionFromPB(p.GetRegion())}
}

func searchItemsResultToPB(res SearchItemsResult) *rubispb.SearchItemsResult {
	return &rubispb.SearchItemsResult{Items: each(res.Items, itemSummaryToPB)}
}

func searchItemsResultFromPB(p *rubispb.SearchItemsResult) SearchItemsResult {
	return SearchItemsResult{Items: each(p.GetItems(), itemSummaryFromPB)}
}

func aboutMeResultToPB(res AboutMeResult) *rubispb.AboutMeResult {
	return &rubispb.AboutMeResult{User: userToPB(res.User), Password: res.Password,
		Bidding: each(res.Bidding, func(b AboutMeBid) *rubispb.AboutMeBid {
			return &rubispb.AboutMeBid{Item: itemToPB(b.Item), YourMaxBid: b.YourMaxBid, SellerNickname: b.SellerNickname}
		}),
		Won: each(res.Won, func(w AboutMeWon) *rubispb.AboutMeWon {
			return &rubispb.AboutMeWon{Item: itemToPB(w.Item), SellerNickname: w.SellerNickname}
		}),
		Bought: each(res.Bought, func(b AboutMeBought) *rubispb.AboutMeBought {
			return &rubispb.AboutMeBought{Item: itemToPB(b.Item), Qty: b.Qty, Price: b.Price, Date: timeToPB(b.Date), SellerNickname: b.SellerNickname}
		}),
		Selling: each(res.Selling, itemToPB), Sold: each(res.Sold, itemToPB), Comments: each(res.Comments, commentToPB)}
}

func aboutMeResultFromPB(p *rubispb.AboutMeResult) AboutMeResult {
	return AboutMeResult{User: userFromPB(p.GetUser()), Password: p.GetPassword(),
		Bidding: each(p.GetBidding(), func(b *rubispb.AboutMeBid) AboutMeBid {
			return AboutMeBid{Item: itemFromPB(b.GetItem()), YourMaxBid: b.GetYourMaxBid(), SellerNickname: b.GetSellerNickname()}
		}),
		Won: each(p.GetWon(), func(w *rubispb.AboutMeWon) AboutMeWon {
			return AboutMeWon{Item: itemFromPB(w.GetItem()), SellerNickname: w.GetSellerNickname()}
		}),
		Bought: each(p.GetBought(), func(b *rubispb.AboutMeBought) AboutMeBought {
			return AboutMeBought{Item: itemFromPB(b.GetItem()), Qty: b.GetQty(), Price: b.GetPrice(), Date: timeFromPB(b.GetDate()), SellerNickname: b.GetSellerNickname()}
		}),
		Selling: each(p.GetSelling(), itemFromPB), Sold: each(p.GetSold(), itemFromPB), Comments: each(p.GetComments(), commentFromPB)}
}

// The rows the results are made of. A FromPB function reads a nil
// message as the zero value (the getters do), which is how a zero row
// travels only when the sender sent none.

func categoryToPB(c Category) *rubispb.Category { return &rubispb.Category{Id: c.ID, Name: c.Name} }
func categoryFromPB(p *rubispb.Category) Category {
	return Category{ID: p.GetId(), Name: p.GetName()}
}

func regionToPB(r Region) *rubispb.Region { return &rubispb.Region{Id: r.ID, Name: r.Name} }
func regionFromPB(p *rubispb.Region) Region {
	return Region{ID: p.GetId(), Name: p.GetName()}
}

func userToPB(u User) *rubispb.User {
	return &rubispb.User{Id: u.ID, Firstname: u.Firstname, Lastname: u.Lastname, Nickname: u.Nickname, Email: u.Email,
		Rating: u.Rating, Balance: u.Balance, CreationDate: timeToPB(u.CreationDate), Region: u.Region}
}

func userFromPB(p *rubispb.User) User {
	return User{ID: p.GetId(), Firstname: p.GetFirstname(), Lastname: p.GetLastname(), Nickname: p.GetNickname(), Email: p.GetEmail(),
		Rating: p.GetRating(), Balance: p.GetBalance(), CreationDate: timeFromPB(p.GetCreationDate()), Region: p.GetRegion()}
}

func itemToPB(it Item) *rubispb.Item {
	return &rubispb.Item{Id: it.ID, Name: it.Name, Description: it.Description, InitialPrice: it.InitialPrice, Quantity: it.Quantity,
		ReservePrice: it.ReservePrice, BuyNow: it.BuyNow, NbOfBids: it.NbOfBids, MaxBid: it.MaxBid,
		StartDate: timeToPB(it.StartDate), EndDate: timeToPB(it.EndDate), Seller: it.Seller, Category: it.Category, Old: it.Old}
}

func itemFromPB(p *rubispb.Item) Item {
	return Item{ID: p.GetId(), Name: p.GetName(), Description: p.GetDescription(), InitialPrice: p.GetInitialPrice(), Quantity: p.GetQuantity(),
		ReservePrice: p.GetReservePrice(), BuyNow: p.GetBuyNow(), NbOfBids: p.GetNbOfBids(), MaxBid: p.GetMaxBid(),
		StartDate: timeFromPB(p.GetStartDate()), EndDate: timeFromPB(p.GetEndDate()), Seller: p.GetSeller(), Category: p.GetCategory(), Old: p.GetOld()}
}

func itemSummaryToPB(s ItemSummary) *rubispb.ItemSummary {
	return &rubispb.ItemSummary{Id: s.ID, Name: s.Name, InitialPrice: s.InitialPrice, MaxBid: s.MaxBid, NbOfBids: s.NbOfBids, EndDate: timeToPB(s.EndDate)}
}

func itemSummaryFromPB(p *rubispb.ItemSummary) ItemSummary {
	return ItemSummary{ID: p.GetId(), Name: p.GetName(), InitialPrice: p.GetInitialPrice(), MaxBid: p.GetMaxBid(), NbOfBids: p.GetNbOfBids(),
		EndDate: timeFromPB(p.GetEndDate())}
}

func itemPriceToPB(p ItemPrice) *rubispb.ItemPrice {
	return &rubispb.ItemPrice{Item: itemToPB(p.Item), SellerNickname: p.SellerNickname, CurrentPrice: p.CurrentPrice, Bids: p.Bids,
		BuyNowOffered: p.BuyNowOffered}
}

func itemPriceFromPB(p *rubispb.ItemPrice) ItemPrice {
	return ItemPrice{Item: itemFromPB(p.GetItem()), SellerNickname: p.GetSellerNickname(), CurrentPrice: p.GetCurrentPrice(), Bids: p.GetBids(),
		BuyNowOffered: p.GetBuyNowOffered()}
}

func commentToPB(c Comment) *rubispb.Comment {
	return &rubispb.Comment{Id: c.ID, From: c.From, FromNickname: c.FromNickname, ItemId: c.ItemID, Rating: c.Rating, Date: timeToPB(c.Date), Text: c.Text}
}

func commentFromPB(p *rubispb.Comment) Comment {
	return Comment{ID: p.GetId(), From: p.GetFrom(), FromNickname: p.GetFromNickname(), ItemID: p.GetItemId(), Rating: p.GetRating(),
		Date: timeFromPB(p.GetDate()), Text: p.GetText()}
}

func bidToPB(b Bid) *rubispb.Bid {
	return &rubispb.Bid{UserId: b.UserID, Nickname: b.Nickname, Qty: b.Qty, Bid: b.Bid, MaxBid: b.MaxBid, Date: timeToPB(b.Date)}
}

func bidFromPB(p *rubispb.Bid) Bid {
	return Bid{UserID: p.GetUserId(), Nickname: p.GetNickname(), Qty: p.GetQty(), Bid: p.GetBid(), MaxBid: p.GetMaxBid(), Date: timeFromPB(p.GetDate())}
}

// timeToPB is t as a Timestamp; the zero time is no Timestamp at all (it
// is year 1, which a Timestamp holds, but absent costs nothing).
func timeToPB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// timeFromPB is the instant of p in UTC, the location every backend
// returns; no Timestamp is the zero time (AsTime would make it 1970).
func timeFromPB(p *timestamppb.Timestamp) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.AsTime()
}

// each converts every element of in with f; none is nil, as the
// implementations return a list without rows (and as proto3 cannot carry
// an empty list apart from a nil one).
func each[T, U any](in []T, f func(T) U) []U {
	if len(in) == 0 {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
