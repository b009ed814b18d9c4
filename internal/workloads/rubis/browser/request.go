package browser

import (
	"strconv"
)

// request builds the URL of state into b.url, as the original's
// computeURLFromState does, and returns the state it ends up requesting.
// The random draws are made in the original's order.
func (b *Browser) request(state int) int {
	for {
		if b.hasPage && b.page.sorry {
			// "Nothing matched the request, we have to go back."
			b.stats.SorryBacks++
			state = b.back()
		}
		switch state {
		case ViewItem:
			id := b.itemID()
			if id < 0 {
				b.stats.NoIDBacks++
				state = b.back()
				continue
			}
			b.script("ViewItem.php").num("itemId", id)
		case ViewUserInfo:
			id := b.pageUserID()
			if id < 0 {
				b.stats.NoIDBacks++
				state = b.back()
				continue
			}
			b.script("ViewUserInfo.php").num("userId", id)
		case PutBid:
			id := b.itemID()
			if id < 0 {
				b.stats.NoIDBacks++
				state = b.back()
				continue
			}
			b.script("PutBid.php").num("itemId", id).login()
		default:
			b.build(state)
		}
		return state
	}
}

// back is the original's backToPreviousState inside computeURLFromState:
// the popped state, or Home (reset) when there is no history.
func (b *Browser) back() int {
	s, ok := b.walk.GoBack()
	if !ok {
		b.stats.Resets++
	}
	return s
}

// build writes the URL of a state that needs no id to go on.
func (b *Browser) build(state int) {
	switch state {
	case Home:
		b.html("index.html")
	case Register:
		b.html("register.html")
	case RegisterUser:
		var i int
		if b.cfg.UniqueNicknames {
			// Disjoint per browser: id in the high bits, a count below.
			i = b.cfg.Users + 1 + b.id<<20 + b.registered
		} else {
			i = b.cfg.Users + b.rng.IntN(1000000) + 1
		}
		b.registered++
		id := int64(i)
		b.script("RegisterUser.php").str("firstname", Firstname(id)).str("lastname", Lastname(id)).
			str("nickname", Nickname(id)).str("email", Email(id)).
			str("password", Password(id)).str("region", b.cfg.Regions[i%len(b.cfg.Regions)])
	case Browse:
		b.html("browse.html")
	case BrowseCategories:
		b.script("BrowseCategories.php")
	case SearchItemsInCategory:
		c := b.rng.IntN(len(b.cfg.Categories))
		b.script("SearchItemsByCategory.php").num("category", b.oneBased(c)).
			str("categoryName", b.cfg.Categories[c]).num("page", b.pageNo()).num("nbOfItems", b.cfg.ItemsPerPage)
	case BrowseRegions:
		b.script("BrowseRegions.php")
	case BrowseCategoriesInRegion:
		r := b.rng.IntN(len(b.cfg.Regions))
		b.script("BrowseCategories.php").str("region", b.cfg.Regions[r])
	case SearchItemsInRegion:
		c := b.rng.IntN(len(b.cfg.Categories))
		r := b.rng.IntN(len(b.cfg.Regions))
		b.script("SearchItemsByRegion.php").num("region", b.oneBased(r)).num("category", b.oneBased(c)).
			str("categoryName", b.cfg.Categories[c]).num("page", b.pageNo()).num("nbOfItems", b.cfg.ItemsPerPage)
	case ViewBidHistory:
		b.script("ViewBidHistory.php").num("itemId", b.itemID())
	case BuyNowAuth:
		b.script("BuyNowAuth.php").num("itemId", b.itemID())
	case BuyNow:
		b.script("BuyNow.php").num("itemId", b.itemID()).login()
	case StoreBuyNow:
		maxQty := max(b.field(b.page.maxQty), 1)
		qty := b.rng.IntN(maxQty) + 1
		b.script("StoreBuyNow.php").num("itemId", b.itemID()).num("userId", b.userID()).
			num("qty", qty).num("maxQty", maxQty)
	case PutBidAuth:
		b.script("PutBidAuth.php").num("itemId", b.itemID())
	case StoreBid:
		maxQty := max(b.field(b.page.maxQty), 1)
		qty := b.rng.IntN(maxQty) + 1
		minBid := float32(-1)
		if b.hasPage && b.page.hasMinBid {
			minBid = b.page.minBid
		}
		add := float32(b.rng.IntN(10) + 1)
		bid, maxBid := minBid+add, minBid+add*2
		b.script("StoreBid.php").num("itemId", b.itemID()).num("userId", b.userID()).
			float("minBid", minBid).num("maxQty", maxQty).float("bid", bid).float("maxBid", maxBid).num("qty", qty)
	case PutCommentAuth:
		item := b.itemID()
		b.script("PutCommentAuth.php").num("itemId", item).num("to", b.pageTo())
	case PutComment:
		item := b.itemID()
		b.script("PutComment.php").num("itemId", item).num("to", b.pageTo()).login()
	case StoreComment:
		r := b.rng.IntN(len(ratings))
		n := b.rng.IntN(b.cfg.Policy.CommentMaxLength) + 1
		item := b.itemID()
		b.script("StoreComment.php").num("itemId", item).num("to", b.field(b.page.formTo)).
			num("from", b.userID()).num("rating", ratings[r]).str("comment", prefix(comments[r], n))
	case Sell:
		b.html("sell.html")
	case SelectCategoryToSellItem:
		b.script("BrowseCategories.php").login()
	case SellItemForm:
		c := b.rng.IntN(len(b.cfg.Categories))
		b.script("SellItemForm.php").num("user", b.userID()).num("category", b.oneBased(c))
	case RegisterItem:
		b.registerItem()
	case AboutMeAuth:
		b.html("about_me.html")
	case AboutMe:
		b.script("AboutMe.php").login()
	}
}

// registerItem makes up an item as the original does.
func (b *Browser) registerItem() {
	p, total := b.cfg.Policy, b.cfg.Items
	rng := b.rng
	i := total + rng.IntN(1000000) + 1
	desc := prefix(description, rng.IntN(p.ItemDescriptionLength)+1)
	initial := float32(rng.IntN(5000) + 1)
	var reserve, buyNow float32
	if float64(rng.IntN(total)) < p.PercentReservePrice*float64(total)/100 {
		reserve = float32(rng.IntN(1000)) + initial
	}
	if float64(rng.IntN(total)) < p.PercentBuyNow*float64(total)/100 {
		buyNow = float32(rng.IntN(1000)) + initial + reserve
	}
	duration := rng.IntN(7) + 1
	qty := 1
	if float64(rng.IntN(total)) >= p.PercentUniqueItems*float64(total)/100 {
		qty = rng.IntN(p.MaxItemQty) + 1
	}
	c := rng.IntN(len(b.cfg.Categories))
	b.script("RegisterItem.php").str("name", "RUBiS automatically generated item #"+strconv.Itoa(i)).
		str("description", desc).float("initialPrice", initial).float("reservePrice", reserve).
		float("buyNow", buyNow).num("duration", duration).num("quantity", qty).
		num("userId", b.userID()).num("categoryId", b.oneBased(c))
}

// prefix is what the original's length loop leaves of a text: it means to
// repeat the text up to n characters, then keeps only the text's first
// ((n-1) mod len)+1.
func prefix(s string, n int) string {
	for len(s) < n {
		n -= len(s)
	}
	return s[:n]
}

// itemID is the original's extractItemIdFromHTML: one of the page's
// itemId= occurrences, uniformly; the last one extracted when the page has
// none; -1 without a page.
func (b *Browser) itemID() int {
	if !b.hasPage {
		return -1
	}
	ids := b.page.itemIDs
	if len(ids) == 0 {
		return b.lastItemID
	}
	b.lastItemID = ids[b.rng.IntN(len(ids))]
	return b.lastItemID
}

// pageUserID is extractIntFromHTML("userId="): the page's first, or the
// last one extracted when the page has none.
func (b *Browser) pageUserID() int {
	if !b.hasPage {
		return -1
	}
	if b.page.userID < 0 {
		return b.lastUserID
	}
	b.lastUserID = b.page.userID
	return b.lastUserID
}

// pageTo is extractIntFromHTML("to="): the page's first.
func (b *Browser) pageTo() int {
	if !b.hasPage {
		return -1
	}
	return b.page.to
}

// field is extractIntFromHTML for a form field already read.
func (b *Browser) field(v int) int {
	if !b.hasPage {
		return -1
	}
	return v
}

// pageNo is extractPageFromHTML: with two &page= links, either at even
// odds; with one, that one; else 0.
func (b *Browser) pageNo() int {
	if !b.hasPage || b.page.nPages == 0 {
		return 0
	}
	if b.page.nPages == 1 || b.rng.IntN(100000) < 50000 {
		return b.page.pages[0]
	}
	return b.page.pages[1]
}

// userID is the id the original puts in forms: its 0-based draw.
func (b *Browser) userID() int { return b.oneBased(b.user) }

func (b *Browser) oneBased(i int) int {
	if b.cfg.OneBasedIDs {
		return i + 1
	}
	return i
}

// The users' credentials and names, as the original's InitDB made them
// and its client logs in with: the loader writes them, the browsers send
// them, so they are made here once.
const (
	nicknamePrefix = "user"
	passwordPrefix = "password"
)

// Nickname, Password, Firstname, Lastname and Email are user id's.
func Nickname(id int64) string  { return nicknamePrefix + strconv.FormatInt(id, 10) }
func Password(id int64) string  { return passwordPrefix + strconv.FormatInt(id, 10) }
func Firstname(id int64) string { return "Great" + strconv.FormatInt(id, 10) }
func Lastname(id int64) string  { return "User" + strconv.FormatInt(id, 10) }
func Email(id int64) string {
	n := strconv.FormatInt(id, 10)
	return "Great" + n + ".User" + n + "@rubis.com"
}

// URL writing: a small builder over b.url so that a request allocates
// nothing but the string.

func (b *Browser) html(name string) {
	b.url = append(append(append(b.url[:0], b.site...), '/'), name...)
	b.query = false
}

func (b *Browser) script(name string) *Browser {
	b.html(name)
	return b
}

func (b *Browser) sep(key string) {
	if b.query {
		b.url = append(b.url, '&')
	} else {
		b.url = append(b.url, '?')
		b.query = true
	}
	b.url = append(append(b.url, key...), '=')
}

func (b *Browser) num(key string, v int) *Browser {
	b.sep(key)
	b.url = strconv.AppendInt(b.url, int64(v), 10)
	return b
}

func (b *Browser) str(key, v string) *Browser {
	b.sep(key)
	b.url = appendJavaEncoded(b.url, v)
	return b
}

func (b *Browser) float(key string, v float32) *Browser {
	b.sep(key)
	b.url = appendJavaFloat(b.url, v)
	return b
}

// login adds the session user's nickname and password, appended in place
// (they need no encoding): an authenticated page allocates no more than
// another.
func (b *Browser) login() *Browser {
	id := int64(b.user + 1)
	b.sep("nickname")
	b.url = strconv.AppendInt(append(b.url, nicknamePrefix...), id, 10)
	b.sep("password")
	b.url = strconv.AppendInt(append(b.url, passwordPrefix...), id, 10)
	return b
}

// The original's made-up texts.
var (
	ratings  = [...]int{-5, -3, 0, 3, 5}
	comments = [...]string{
		"This is a very bad comment. Stay away from this seller !!<br>",
		"This is a comment below average. I don't recommend this user !!<br>",
		"This is a neutral comment. It is neither a good or a bad seller !!<br>",
		"This is a comment above average. You can trust this seller even if it is not the best deal !!<br>",
		"This is an excellent comment. You can make really great deals with this seller !!<br>",
	}
)

const description = "This incredible item is exactly what you need !<br>It has a lot of very nice features including " +
	"a coffee option.<br>It comes with a free license for the free RUBiS software, that's really cool. But RUBiS even if it " +
	"is free, is <B>(C) Rice University/INRIA 2001</B>. It is really hard to write an interesting generic description for " +
	"automatically generated items, but who will really read this <br>You can also check some cool software available on " +
	"http://sci-serv.inrialpes.fr. There is a very cool DSM system called SciFS for SCI clusters, but you will need some " +
	"SCI adapters to be able to run it ! Else you can still try CART, the amazing 'Cluster Administration and Reservation " +
	"Tool'. All those software are open source, so don't hesitate ! If you have a SCI Cluster you can also try the Whoops! " +
	"clustered web server. Actually Whoops! stands for something ! Yes, it is a Web cache with tcp Handoff, On the fly " +
	"cOmpression, parallel Pull-based lru for Sci clusters !! Ok, that was a lot of fun but now it is starting to be quite late " +
	"and I'll have to go to bed very soon, so I think if you need more information, just go on <h1>http://sci-serv.inrialpes.fr</h1> " +
	"or you can even try http://www.cs.rice.edu and try to find where Emmanuel Cecchet or Julie Marguerite are and you will " +
	"maybe get fresh news about all that !!<br>"
