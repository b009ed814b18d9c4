package rubis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Facade is the RUBiS business tier on the entity container, as the EJB
// versions of RUBiS run it. It serves three styles: facade (a session
// facade over local entity beans on a business tier, served by
// ServeAuction), local (the same in the web tier's process) and, over
// remote entity beans (NewRemoteEntityFacade), the web tier of entity.
// In each, each interaction is a session-facade method
// that runs as one container-managed transaction, finds entity beans by
// key or by finder and reads and writes them field by field; the
// container's persistence strategy (cmp, bmp) decides the SQL, its commit
// option what stays cached, its concurrency strategy who waits.
//
// The beans are reached through entityTx (entityaccess.go): in process
// (NewFacade: the facade on the business tier, or the local style), or
// on a business tier of their own, each finder, field access and
// transaction boundary a remote call (NewRemoteEntityFacade: the entity
// style).
//
// Its results and database effects are those of Servlets: the same rows,
// the same page errors. Pages that only read run in read-only
// transactions; a transaction chosen as the victim of a lock wait,
// deadlock or conflict runs again up to writeAttempts times, as Servlets'
// writes do.
type Facade struct {
	// ctr is the container in this process; nil when the beans are on a
	// business tier of their own (NewRemoteEntityFacade).
	ctr  *container.Container
	ents entities
	now  func() time.Time
}

var _ Auction = (*Facade)(nil)

// NewFacade is the business tier over ctr, a container of RUBiS's
// entity types (entityTypes).
func NewFacade(ctr *container.Container) (*Facade, error) {
	ents, err := newLocalEntities(ctr)
	if err != nil {
		return nil, err
	}
	return &Facade{ctr: ctr, ents: ents, now: time.Now}, nil
}

// openContainer starts a container of RUBiS's entity types over db with
// the resolved settings, its caches warmed first when warm is set (its
// counters then start from zero), and the business tier over it.
func openContainer(ctx context.Context, db *store.DB, p workload.RunParams, warm bool) (*Facade, error) {
	ctr, err := p.NewContainer(ctx, db, entityTypes)
	if err != nil {
		return nil, err
	}
	if warm {
		for _, t := range warmed {
			if err := ctr.Warm(ctx, ctr.Home(t.Name)); err != nil {
				return nil, fmt.Errorf("warm-up of %s: %w", t.Name, err)
			}
		}
		ctr.ResetStats()
	}
	return NewFacade(ctr)
}

// EntityStats are the container's counters by entity type; none when
// the container is on another tier.
func (b *Facade) EntityStats() []workload.EntityStats { return workload.ContainerStats(b.ctr) }

// entitySite is the site served by Facade: its counters go into the result.
type entitySite struct {
	site
	beans *Facade
}

func (s entitySite) EntityStats() []workload.EntityStats { return s.beans.EntityStats() }

// EntityStats of a run are its site's, when the container serves it.
func (r *run) EntityStats() []workload.EntityStats {
	if s, ok := r.site.(workload.EntityRun); ok {
		return s.EntityStats()
	}
	return nil
}

var _ workload.EntityRun = (*run)(nil)

// clock is now as the database stores times (see Servlets.clock).
func (b *Facade) clock() time.Time { return timeBase(b.now()) }

// inTx runs fn as one container transaction on thread, read-write when
// write is set: committed when fn returns nil, rolled back otherwise (fn's
// error returned unchanged, so page errors pass through). A run that the
// container or the database chose as a victim runs again after a short
// pause, up to writeAttempts runs.
func (b *Facade) inTx(ctx context.Context, thread int, write bool, fn func(tx entityTx) error) error {
	return store.Retry(ctx, writeAttempts, func() error { return b.once(ctx, thread, write, fn) })
}

func (b *Facade) once(ctx context.Context, thread int, write bool, fn func(tx entityTx) error) error {
	tx, err := b.ents.begin(ctx, thread, write)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit, nothing to undo
	err = fn(tx)
	// A field access that failed outranks whatever fn made of its zero
	// value, a page error included.
	if ferr := tx.Err(); ferr != nil {
		return ferr
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

func (b *Facade) read(ctx context.Context, thread int, fn func(tx entityTx) error) error {
	return b.inTx(ctx, thread, false, fn)
}

func (b *Facade) write(ctx context.Context, thread int, fn func(tx entityTx) error) error {
	return b.inTx(ctx, thread, true, fn)
}

func idKey(id int64) container.Key { return container.Key{A: id} }

func isNotFound(err error) bool { return errors.Is(err, container.ErrNotFound) }

// The beans' fields as the interface's plain data.

func userFrom(u entityRef) User {
	return User{ID: u.Key().A, Firstname: u.String(userFirstname), Lastname: u.String(userLastname), Nickname: u.String(userNickname),
		Email: u.String(userEmail), Rating: u.Int(userRating), Balance: u.Float(userBalance), CreationDate: u.Time(userCreationDate),
		Region: u.Int(userRegion)}
}

func itemFrom(i entityRef, old bool) Item {
	return Item{ID: i.Key().A, Name: i.String(itName), Description: i.String(itDescription), InitialPrice: i.Float(itInitialPrice),
		Quantity: i.Int(itQuantity), ReservePrice: i.Float(itReservePrice), BuyNow: i.Float(itBuyNow), NbOfBids: i.Int(itNbOfBids),
		MaxBid: i.Float(itMaxBid), StartDate: i.Time(itStartDate), EndDate: i.Time(itEndDate), Seller: i.Int(itSeller),
		Category: i.Int(itCategory), Old: old}
}

func summaryFrom(i entityRef) ItemSummary {
	return ItemSummary{ID: i.Key().A, Name: i.String(itName), InitialPrice: i.Float(itInitialPrice), MaxBid: i.Float(itMaxBid),
		NbOfBids: i.Int(itNbOfBids), EndDate: i.Time(itEndDate)}
}

func categoryFrom(i entityRef) Category {
	return Category{ID: i.Key().A, Name: i.String(nameField)}
}
func regionFrom(i entityRef) Region {
	return Region{ID: i.Key().A, Name: i.String(nameField)}
}

// authenticate finds the user of nickname and password, or returns the
// page error of title when there is none.
func (b *Facade) authenticate(tx entityTx, title, nickname, password string) (entityRef, error) {
	u, err := tx.FindOne(homeUsers, "byLogin", nickname, password)
	if isNotFound(err) {
		return nil, errNoAccount(title)
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate %q: %w", nickname, err)
	}
	return u, nil
}

// nickname of user id; "" when there is no such user (Servlets' LEFT JOIN).
func (b *Facade) nickname(tx entityTx, id int64) (string, error) {
	u, err := tx.Find(homeUsers, idKey(id))
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("user %d: %w", id, err)
	}
	return u.String(userNickname), nil
}

// item finds item id in items or, when old is allowed and items has none,
// in old_items; the page error of title when neither has it.
func (b *Facade) item(tx entityTx, title string, id int64, old bool) (Item, error) {
	i, err := tx.Find(homeItems, idKey(id))
	if err == nil {
		return itemFrom(i, false), nil
	}
	if isNotFound(err) && old {
		if i, err = tx.Find(homeOldItems, idKey(id)); err == nil {
			return itemFrom(i, true), nil
		}
	}
	if isNotFound(err) {
		return Item{}, errNoItem(title)
	}
	return Item{}, fmt.Errorf("item %d: %w", id, err)
}

// itemPrice finds item id (see item), its seller's nickname, and the price
// its bids make, as Servlets.itemPrice works it out.
func (b *Facade) itemPrice(tx entityTx, title string, id int64, old bool) (ItemPrice, error) {
	var p ItemPrice
	var err error
	if p.Item, err = b.item(tx, title, id, old); err != nil {
		return p, err
	}
	if p.SellerNickname, err = b.nickname(tx, p.Seller); err != nil {
		return p, err
	}
	bids, err := tx.FindMany(homeBids, "byItem", id)
	if err != nil {
		return p, fmt.Errorf("bids of item %d: %w", id, err)
	}
	// Each bid's amount read once: under the entity style every read is
	// a remote call.
	type amount struct {
		ref entityRef
		bid float64
	}
	amounts := make([]amount, len(bids))
	var maxBid float64
	for n, x := range bids {
		amounts[n] = amount{x, x.Float(bidBid)}
		maxBid = max(maxBid, amounts[n].bid)
	}
	if maxBid == 0 {
		p.CurrentPrice = p.InitialPrice
		p.BuyNowOffered = p.BuyNow > 0
		return p, nil
	}
	p.Bids = int64(len(bids))
	p.CurrentPrice = maxBid
	if p.Quantity > 1 {
		// The Quantity highest bids, highest first, earliest first among
		// equal ones, as Servlets' query orders them.
		slices.SortFunc(amounts, func(a, b amount) int {
			return cmp.Or(cmp.Compare(b.bid, a.bid), cmp.Compare(a.ref.Key().A, b.ref.Key().A))
		})
		top := make([]Bid, min(int64(len(amounts)), p.Quantity))
		for n := range top {
			top[n] = Bid{Bid: amounts[n].bid, Qty: amounts[n].ref.Int(bidQty)}
		}
		p.CurrentPrice = multiUnitPrice(top, p.Quantity, maxBid)
	}
	return p, nil
}

// commentsAbout are the comments about user id, oldest first, with their
// authors' nicknames.
func (b *Facade) commentsAbout(tx entityTx, id int64) ([]Comment, error) {
	cs, err := tx.FindMany(homeComments, "aboutUser", id)
	if err != nil {
		return nil, fmt.Errorf("comments about user %d: %w", id, err)
	}
	var out []Comment
	for _, c := range cs {
		from := c.Int(commentFrom)
		nick, err := b.nickname(tx, from)
		if err != nil {
			return nil, err
		}
		out = append(out, Comment{ID: c.Key().A, From: from, FromNickname: nick, ItemID: c.Int(commentItem),
			Rating: c.Int(commentRating), Date: c.Time(commentDate), Text: c.String(commentText)})
	}
	return out, nil
}

func (b *Facade) categories(tx entityTx) ([]Category, error) {
	cs, err := tx.FindMany(homeCategories, "all")
	if err != nil {
		return nil, fmt.Errorf("categories: %w", err)
	}
	var out []Category
	for _, c := range cs {
		out = append(out, categoryFrom(c))
	}
	return out, nil
}

func (b *Facade) RegisterUser(ctx context.Context, thread int, r RegisterUserRequest) (RegisterUserResult, error) {
	const title = "Register user"
	var res RegisterUserResult
	// The nickname is looked up first, as UserHome.findByNickName was;
	// when a concurrent registration of it commits in between, the unique
	// index refuses this one, the container reports a conflict, and the
	// run again finds the nickname taken.
	err := b.write(ctx, thread, func(tx entityTx) error {
		reg, err := tx.FindOne(homeRegions, "byName", r.Region)
		if isNotFound(err) {
			return &PageError{Title: title, Message: "Region " + r.Region + " does not exist in the database!"}
		}
		if err != nil {
			return fmt.Errorf("region %q: %w", r.Region, err)
		}
		res.Region = regionFrom(reg)
		_, err = tx.FindOne(homeUsers, "byNickname", r.Nickname)
		if err == nil {
			return &PageError{Title: title,
				Message: "The nickname you have choosen is already taken by someone else. Please choose a new nickname."}
		}
		if !isNotFound(err) {
			return fmt.Errorf("nickname %q: %w", r.Nickname, err)
		}
		u, err := tx.Create(homeUsers, container.Key{})
		if err != nil {
			return err
		}
		now := b.clock()
		u.SetString(userFirstname, r.Firstname)
		u.SetString(userLastname, r.Lastname)
		u.SetString(userNickname, r.Nickname)
		u.SetString(userPassword, r.Password)
		u.SetString(userEmail, r.Email)
		u.SetInt(userRating, 0)
		u.SetFloat(userBalance, 0)
		u.SetTime(userCreationDate, now)
		u.SetInt(userRegion, res.Region.ID)
		res.User = userFrom(u)
		return nil
	})
	if err != nil && !IsPageError(err) {
		return RegisterUserResult{}, fmt.Errorf("register user %q: %w", r.Nickname, err)
	}
	if err != nil {
		return RegisterUserResult{}, err
	}
	return res, nil
}

func (b *Facade) BrowseCategories(ctx context.Context, thread int, _ BrowseCategoriesRequest) (BrowseCategoriesResult, error) {
	var res BrowseCategoriesResult
	err := b.read(ctx, thread, func(tx entityTx) (err error) {
		res.Categories, err = b.categories(tx)
		return err
	})
	return res, err
}

func (b *Facade) BrowseRegions(ctx context.Context, thread int, _ BrowseRegionsRequest) (BrowseRegionsResult, error) {
	var res BrowseRegionsResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		rs, err := tx.FindMany(homeRegions, "all")
		if err != nil {
			return fmt.Errorf("regions: %w", err)
		}
		res.Regions = nil
		for _, r := range rs {
			res.Regions = append(res.Regions, regionFrom(r))
		}
		return nil
	})
	return res, err
}

func (b *Facade) BrowseCategoriesInRegion(ctx context.Context, thread int, r BrowseCategoriesInRegionRequest) (BrowseCategoriesInRegionResult, error) {
	var res BrowseCategoriesInRegionResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		var reg entityRef
		var err error
		if id, perr := strconv.ParseInt(r.Region, 10, 32); perr == nil {
			reg, err = tx.Find(homeRegions, idKey(id))
		} else {
			reg, err = tx.FindOne(homeRegions, "byName", r.Region)
		}
		if isNotFound(err) {
			return &PageError{Title: "Browse categories", Message: "Sorry, but region " + r.Region + " does not exist."}
		}
		if err != nil {
			return fmt.Errorf("region %q: %w", r.Region, err)
		}
		res.Region = regionFrom(reg)
		res.Categories, err = b.categories(tx)
		return err
	})
	if err != nil {
		return BrowseCategoriesInRegionResult{}, err
	}
	return res, nil
}

func (b *Facade) SearchItemsByCategory(ctx context.Context, thread int, r SearchItemsByCategoryRequest) (SearchItemsResult, error) {
	n := pageSize(r.NbOfItems)
	return b.search(ctx, thread, "byCategory", r.Category, b.clock(), n, r.Page*n)
}

func (b *Facade) SearchItemsByRegion(ctx context.Context, thread int, r SearchItemsByRegionRequest) (SearchItemsResult, error) {
	n := pageSize(r.NbOfItems)
	return b.search(ctx, thread, "byCategoryRegion", r.Category, r.Region, b.clock(), n, r.Page*n)
}

func (b *Facade) search(ctx context.Context, thread int, finder string, args ...any) (SearchItemsResult, error) {
	var res SearchItemsResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		items, err := tx.FindMany(homeItems, finder, args...)
		if err != nil {
			return fmt.Errorf("items %s: %w", finder, err)
		}
		res.Items = nil
		for _, i := range items {
			res.Items = append(res.Items, summaryFrom(i))
		}
		return nil
	})
	return res, err
}

func (b *Facade) ViewItem(ctx context.Context, thread int, r ViewItemRequest) (ViewItemResult, error) {
	var res ViewItemResult
	err := b.read(ctx, thread, func(tx entityTx) (err error) {
		res.ItemPrice, err = b.itemPrice(tx, "Viewing item", r.ItemID, true)
		return err
	})
	return res, err
}

func (b *Facade) ViewUserInfo(ctx context.Context, thread int, r ViewUserInfoRequest) (ViewUserInfoResult, error) {
	var res ViewUserInfoResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		u, err := tx.Find(homeUsers, idKey(r.UserID))
		if isNotFound(err) {
			return errNoUser("Viewing user information")
		}
		if err != nil {
			return fmt.Errorf("user %d: %w", r.UserID, err)
		}
		res.User = userFrom(u)
		res.Comments, err = b.commentsAbout(tx, r.UserID)
		return err
	})
	return res, err
}

func (b *Facade) ViewBidHistory(ctx context.Context, thread int, r ViewBidHistoryRequest) (ViewBidHistoryResult, error) {
	var res ViewBidHistoryResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		it, err := b.item(tx, "Bid history", r.ItemID, true)
		if err != nil {
			return err
		}
		res = ViewBidHistoryResult{ItemID: it.ID, ItemName: it.Name}
		bids, err := tx.FindMany(homeBids, "byItem", r.ItemID)
		if err != nil {
			return fmt.Errorf("bids of item %d: %w", r.ItemID, err)
		}
		for _, x := range bids {
			bid := Bid{UserID: x.Int(bidUser), Qty: x.Int(bidQty), Bid: x.Float(bidBid), MaxBid: x.Float(bidMaxBid), Date: x.Time(bidDate)}
			if bid.Nickname, err = b.nickname(tx, bid.UserID); err != nil {
				return err
			}
			res.Bids = append(res.Bids, bid)
		}
		return nil
	})
	if err != nil {
		return ViewBidHistoryResult{}, err
	}
	return res, nil
}

func (b *Facade) BuyNow(ctx context.Context, thread int, r BuyNowRequest) (BuyNowResult, error) {
	const title = "BuyNow"
	var res BuyNowResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		u, err := b.authenticate(tx, "Authentication", r.Nickname, r.Password)
		if err != nil {
			return err
		}
		res.UserID = u.Key().A
		if res.Item, err = b.item(tx, title, r.ItemID, false); err != nil {
			return err
		}
		res.SellerNickname, err = b.nickname(tx, res.Item.Seller)
		return err
	})
	return res, err
}

func (b *Facade) StoreBuyNow(ctx context.Context, thread int, r StoreBuyNowRequest) (StoreBuyNowResult, error) {
	const title = "StoreBuyNow"
	if err := r.check(); err != nil {
		return StoreBuyNowResult{}, err
	}
	err := b.write(ctx, thread, func(tx entityTx) error {
		now := b.clock()
		it, err := tx.Find(homeItems, idKey(r.ItemID))
		if isNotFound(err) {
			return errNoItem(title)
		}
		if err != nil {
			return fmt.Errorf("item %d: %w", r.ItemID, err)
		}
		left := it.Int(itQuantity)
		if left < r.Qty {
			return &PageError{Title: title, Message: fmt.Sprintf("Sorry, you cannot buy %d of this item: only %d left.", r.Qty, left)}
		}
		// The last units end the auction.
		if left == r.Qty {
			it.SetTime(itEndDate, now)
		}
		it.SetInt(itQuantity, left-r.Qty)
		bn, err := tx.Create(homeBuyNow, container.Key{})
		if err != nil {
			return err
		}
		bn.SetInt(buyNowBuyer, r.UserID)
		bn.SetInt(buyNowItem, r.ItemID)
		bn.SetInt(buyNowQty, r.Qty)
		bn.SetTime(buyNowDate, now)
		return nil
	})
	if err != nil {
		return StoreBuyNowResult{}, err
	}
	return StoreBuyNowResult{Qty: r.Qty}, nil
}

func (b *Facade) PutBid(ctx context.Context, thread int, r PutBidRequest) (PutBidResult, error) {
	var res PutBidResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		u, err := b.authenticate(tx, "Authentication", r.Nickname, r.Password)
		if err != nil {
			return err
		}
		p, err := b.itemPrice(tx, "PutBid", r.ItemID, false)
		if err != nil {
			return err
		}
		res = PutBidResult{UserID: u.Key().A, ItemPrice: p, MinBid: p.CurrentPrice + 1}
		return nil
	})
	if err != nil {
		return PutBidResult{}, err
	}
	return res, nil
}

func (b *Facade) StoreBid(ctx context.Context, thread int, r StoreBidRequest) (StoreBidResult, error) {
	const title = "StoreBid"
	if err := checkBid(r); err != nil {
		return StoreBidResult{}, err
	}
	err := b.write(ctx, thread, func(tx entityTx) error {
		it, err := tx.Find(homeItems, idKey(r.ItemID))
		if isNotFound(err) {
			return errNoItem(title)
		}
		if err != nil {
			return fmt.Errorf("item %d: %w", r.ItemID, err)
		}
		it.SetInt(itNbOfBids, it.Int(itNbOfBids)+1)
		if it.Float(itMaxBid) < r.MaxBid {
			it.SetFloat(itMaxBid, r.MaxBid)
		}
		bid, err := tx.Create(homeBids, container.Key{})
		if err != nil {
			return err
		}
		bid.SetInt(bidUser, r.UserID)
		bid.SetInt(bidItem, r.ItemID)
		bid.SetInt(bidQty, r.Qty)
		bid.SetFloat(bidBid, r.Bid)
		bid.SetFloat(bidMaxBid, r.MaxBid)
		bid.SetTime(bidDate, b.clock())
		return nil
	})
	return StoreBidResult{}, err
}

func (b *Facade) PutComment(ctx context.Context, thread int, r PutCommentRequest) (PutCommentResult, error) {
	const title = "PutComment"
	var res PutCommentResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		u, err := b.authenticate(tx, title, r.Nickname, r.Password)
		if err != nil {
			return err
		}
		res = PutCommentResult{UserID: u.Key().A, Nickname: r.Nickname}
		if res.Item, err = b.item(tx, title, r.ItemID, false); err != nil {
			return err
		}
		to, err := tx.Find(homeUsers, idKey(r.To))
		if isNotFound(err) {
			return errNoUser(title)
		}
		if err != nil {
			return fmt.Errorf("user %d: %w", r.To, err)
		}
		res.To = userFrom(to)
		return nil
	})
	if err != nil {
		return PutCommentResult{}, err
	}
	return res, nil
}

// StoreComment records the comment with its own rating, as Servlets does.
func (b *Facade) StoreComment(ctx context.Context, thread int, r StoreCommentRequest) (StoreCommentResult, error) {
	const title = "StoreComment"
	err := b.write(ctx, thread, func(tx entityTx) error {
		to, err := tx.Find(homeUsers, idKey(r.To))
		if isNotFound(err) {
			return errNoUser(title)
		}
		if err != nil {
			return fmt.Errorf("user %d: %w", r.To, err)
		}
		to.SetInt(userRating, to.Int(userRating)+r.Rating)
		c, err := tx.Create(homeComments, container.Key{})
		if err != nil {
			return err
		}
		c.SetInt(commentFrom, r.From)
		c.SetInt(commentTo, r.To)
		c.SetInt(commentItem, r.ItemID)
		c.SetInt(commentRating, r.Rating)
		c.SetTime(commentDate, b.clock())
		c.SetString(commentText, r.Comment)
		return nil
	})
	return StoreCommentResult{}, err
}

func (b *Facade) SelectCategoryToSellItem(ctx context.Context, thread int, r SelectCategoryToSellItemRequest) (SelectCategoryToSellItemResult, error) {
	var res SelectCategoryToSellItemResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		u, err := b.authenticate(tx, "Authentication", r.Nickname, r.Password)
		if err != nil {
			return err
		}
		res.UserID = u.Key().A
		res.Categories, err = b.categories(tx)
		return err
	})
	if err != nil {
		return SelectCategoryToSellItemResult{}, err
	}
	return res, nil
}

func (b *Facade) RegisterItem(ctx context.Context, thread int, r RegisterItemRequest) (RegisterItemResult, error) {
	start := b.clock()
	it := Item{Name: r.Name, Description: r.Description, InitialPrice: r.InitialPrice, Quantity: r.Quantity,
		ReservePrice: r.ReservePrice, BuyNow: r.BuyNow, StartDate: start, EndDate: start.AddDate(0, 0, int(r.Duration)),
		Seller: r.UserID, Category: r.CategoryID}
	err := b.write(ctx, thread, func(tx entityTx) error {
		i, err := tx.Create(homeItems, container.Key{})
		if err != nil {
			return err
		}
		i.SetString(itName, it.Name)
		i.SetString(itDescription, it.Description)
		i.SetFloat(itInitialPrice, it.InitialPrice)
		i.SetInt(itQuantity, it.Quantity)
		i.SetFloat(itReservePrice, it.ReservePrice)
		i.SetFloat(itBuyNow, it.BuyNow)
		i.SetInt(itNbOfBids, 0)
		i.SetFloat(itMaxBid, 0)
		i.SetTime(itStartDate, it.StartDate)
		i.SetTime(itEndDate, it.EndDate)
		i.SetInt(itSeller, it.Seller)
		i.SetInt(itCategory, it.Category)
		it.ID = i.Key().A
		return nil
	})
	if err != nil {
		return RegisterItemResult{}, fmt.Errorf("register item %q: %w", r.Name, err)
	}
	return RegisterItemResult{Item: it}, nil
}

func (b *Facade) AboutMe(ctx context.Context, thread int, r AboutMeRequest) (AboutMeResult, error) {
	var res AboutMeResult
	err := b.read(ctx, thread, func(tx entityTx) error {
		u, err := b.authenticate(tx, "About me", r.Nickname, r.Password)
		if err != nil {
			return err
		}
		res = AboutMeResult{User: userFrom(u), Password: r.Password}
		uid := res.User.ID
		now := b.clock()
		since := now.AddDate(0, 0, -recentDays)
		if err := b.aboutBids(tx, &res, uid, now, since); err != nil {
			return err
		}
		bought, err := tx.FindMany(homeBuyNow, "boughtSince", uid, since)
		if err != nil {
			return fmt.Errorf("purchases of user %d: %w", uid, err)
		}
		for _, bn := range bought {
			// Servlets joins items: a purchase of an item not there is not shown.
			i, err := tx.Find(homeItems, idKey(bn.Int(buyNowItem)))
			if isNotFound(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("item %d: %w", bn.Int(buyNowItem), err)
			}
			line := AboutMeBought{Item: itemFrom(i, false), Qty: bn.Int(buyNowQty), Date: bn.Time(buyNowDate)}
			line.Price = line.Item.BuyNow * float64(line.Qty)
			if line.SellerNickname, err = b.nickname(tx, line.Item.Seller); err != nil {
				return err
			}
			res.Bought = append(res.Bought, line)
		}
		if res.Selling, err = b.itemsOf(tx, homeItems, "selling", false, uid, now); err != nil {
			return err
		}
		if res.Sold, err = b.itemsOf(tx, homeItems, "sold", false, uid, now, since); err != nil {
			return err
		}
		soldOld, err := b.itemsOf(tx, homeOldItems, "sold", true, uid, now, since)
		if err != nil {
			return err
		}
		res.Sold = append(res.Sold, soldOld...)
		res.Comments, err = b.commentsAbout(tx, uid)
		return err
	})
	if err != nil {
		return AboutMeResult{}, err
	}
	return res, nil
}

// aboutBids fills AboutMe's auctions the user bid on: from the user's
// bids, each item once, by id, with the user's highest max bid; open ones
// are Bidding, those that ended in the window Won (items first, then
// old_items).
func (b *Facade) aboutBids(tx entityTx, res *AboutMeResult, uid int64, now, since time.Time) error {
	bids, err := tx.FindMany(homeBids, "byUser", uid)
	if err != nil {
		return fmt.Errorf("bids of user %d: %w", uid, err)
	}
	highest := make(map[int64]float64)
	for _, x := range bids {
		id, maxBid := x.Int(bidItem), x.Float(bidMaxBid)
		if m, ok := highest[id]; !ok || maxBid > m {
			highest[id] = maxBid
		}
	}
	ids := make([]int64, 0, len(highest))
	for id := range highest {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var wonOld []AboutMeWon
	ended := func(t time.Time) bool { return t.Before(now) && !t.Before(since) }
	for _, id := range ids {
		i, err := tx.Find(homeItems, idKey(id))
		old := false
		if isNotFound(err) {
			i, err = tx.Find(homeOldItems, idKey(id))
			old = true
		}
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("item %d: %w", id, err)
		}
		it := itemFrom(i, old)
		open := !old && !it.EndDate.Before(now)
		if !open && !ended(it.EndDate) {
			continue
		}
		seller, err := b.nickname(tx, it.Seller)
		if err != nil {
			return err
		}
		switch {
		case open:
			res.Bidding = append(res.Bidding, AboutMeBid{Item: it, YourMaxBid: highest[id], SellerNickname: seller})
		case old:
			wonOld = append(wonOld, AboutMeWon{Item: it, SellerNickname: seller})
		default:
			res.Won = append(res.Won, AboutMeWon{Item: it, SellerNickname: seller})
		}
	}
	res.Won = append(res.Won, wonOld...)
	return nil
}

// itemsOf runs a collection finder of items or old_items.
func (b *Facade) itemsOf(tx entityTx, h entityHome, finder string, old bool, args ...any) ([]Item, error) {
	found, err := tx.FindMany(h, finder, args...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", h, finder, err)
	}
	var out []Item
	for _, i := range found {
		out = append(out, itemFrom(i, old))
	}
	return out, nil
}
