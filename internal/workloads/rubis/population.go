package rubis

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/tierbench/tierbench/internal/workloads/rubis/browser"
)

// The population per unit of scale. Scale 100 is the paper's database (the
// RUBiS client's rubis.properties and the paper, section 4): 1,000,000
// users, about 33,000 active items, 500,000 old items; scale 1, the
// default, is 1% of it. Categories and regions do not scale.
const (
	usersPerScale       = 10_000 // × 100 = 1,000,000 users
	activeItemsPerScale = 330    // × 100 = 33,000 active items
	oldItemsPerScale    = 5_000  // × 100 = 500,000 old items
	numCategories       = 20
	numRegions          = 62
	// maxScale keeps every id inside the 32-bit INTEGER columns of the
	// original schema (items and comments: 5,330 per scale) and the
	// ratings table in memory to a few hundred megabytes.
	maxScale = 10_000
)

// The item and comment rules of the RUBiS client's InitDB and
// rubis.properties.
const (
	percentUniqueItems  = 80   // quantity 1; the others draw 1..maxItemQuantity
	percentReservePrice = 40   // reserve = initial price + 0..maxPriceAddend
	percentBuyNow       = 10   // buy now = initial + reserve + 0..maxPriceAddend
	maxItemQuantity     = 10   // database_max_quantity_for_multiple_items
	maxInitialPrice     = 5000 // initial price 1..5000
	maxPriceAddend      = 999
	maxDescriptionLen   = 8192 // database_item_description_length: 1..8192 bytes
	maxCommentLen       = 2048 // database_comment_max_length: 1..2048 bytes
	maxBidsPerItem      = 20   // database_max_bids_per_item: 0..19 bids
	maxBidIncrement     = 10   // each bid raises the minimum by 1..10
	maxAuctionDays      = 7    // an auction lasts 1..7 days
	commentsPerItem     = 1    // InitDB writes one comment per item
)

// The times of the population relative to the load's time base ("now").
const (
	day = int64(24 * time.Hour / time.Second)
	// minTimeLeft is the least an active auction still has to run at the
	// time base, so that searches during a run find every loaded auction
	// open for at least that long.
	minTimeLeft = int64(time.Hour / time.Second)
	// Old auctions ended between minEndedAgo and maxEndedAgo before the
	// time base, so AboutMe's "last 30 days" finds some and not all.
	minEndedAgo = int64(time.Minute / time.Second)
	maxEndedAgo = 60 * day
	// Users registered between userSinceMax and userSinceMin before the
	// time base, before any auction of the population started.
	userSinceMax = 2 * 365 * day
	userSinceMin = maxEndedAgo + maxAuctionDays*day
)

// commentRatings are the values a comment rates its user with (InitDB's
// ratingValue, and StoreComment's choices).
var commentRatings = [...]int64{-5, -3, 0, 3, 5}

// population is the size of the database at a scale. Item ids run over
// old_items first, then items (as InitDB numbered them, old items first),
// so that an id names one item in either table.
type population struct {
	Users       int64
	OldItems    int64
	ActiveItems int64
	// deal is the category (from 0) of each active item, a byte each in
	// id order, under SpreadOriginal; empty under SpreadEven. A string
	// keeps populations comparable by value.
	deal string
}

// populationAt is the population at scale (0 means the default, 1).
func populationAt(scale int) (population, error) {
	if scale == 0 {
		scale = 1
	}
	if scale < 0 || scale > maxScale {
		return population{}, fmt.Errorf("rubis scale %d: want 1..%d (100 is the paper's database)", scale, maxScale)
	}
	s := int64(scale)
	return population{Users: usersPerScale * s, OldItems: oldItemsPerScale * s, ActiveItems: activeItemsPerScale * s}, nil
}

// Items is the number of items of both tables; ids run 1..Items.
func (p population) Items() int64 { return p.OldItems + p.ActiveItems }

// FirstActiveItem is the id of the first row of items; old_items holds
// 1..FirstActiveItem-1.
func (p population) FirstActiveItem() int64 { return p.OldItems + 1 }

// Comments is the number of comments: one per item, comment i about item i.
func (p population) Comments() int64 { return commentsPerItem * p.Items() }

// The users' credentials and names: the browser's, so that a browser logs
// in as user id knowing only id.
var (
	nickname  = browser.Nickname
	password  = browser.Password
	firstname = browser.Firstname
	lastname  = browser.Lastname
	email     = browser.Email
)

// regionOf is user id's region: InitDB gives its i-th user (from 0) the
// region i mod 62 of its list, whose ids count from 1.
func regionOf(user int64) int64 { return (user-1)%numRegions + 1 }

// The spreads of the active items over the categories
// (--items-per-category).
const (
	// SpreadOriginal deals them as InitDB does given the kit's
	// ebay_simple_categories.txt: the file's count of each category,
	// scaled to the population, is its share.
	SpreadOriginal = "original"
	// SpreadEven deals item i (from 0) to category i mod 20.
	SpreadEven = "even"
)

// withSpread is p with its active items dealt as spread says (empty:
// SpreadOriginal).
func (p population) withSpread(spread string) (population, error) {
	switch spread {
	case "", SpreadOriginal:
		p.deal = string(dealOriginal(p.OldItems, p.ActiveItems, categoryItems))
	case SpreadEven:
		p.deal = ""
	default:
		return p, fmt.Errorf("--items-per-category %q: want %s or %s", spread, SpreadOriginal, SpreadEven)
	}
	return p, nil
}

// categoryOf is item id's category. InitDB deals its i-th item (from 0)
// to category i mod 20, and an active one, when that category has all
// its share, to the next category that has not.
func (p population) categoryOf(id int64) int64 {
	if p.deal == "" || id < p.FirstActiveItem() {
		return (id-1)%numCategories + 1
	}
	return int64(p.deal[id-p.FirstActiveItem()]) + 1
}

// dealOriginal deals active items old+1..old+active as InitDB does, each
// category's share being its count in counts scaled to active (largest
// remainders take the items the rounding left): the category (from 0)
// of each.
func dealOriginal(old, active int64, counts []int64) []uint8 {
	share := apportion(counts, active)
	deal := make([]uint8, active)
	for k := range deal {
		c := (old + int64(k)) % int64(len(share))
		for share[c] == 0 {
			c = (c + 1) % int64(len(share))
		}
		share[c]--
		deal[k] = uint8(c)
	}
	return deal
}

// apportion divides n in proportion to weights (Hamilton's method: the
// floors, then one more to the largest remainders, the earlier first on
// a tie); the parts add up to n.
func apportion(weights []int64, n int64) []int64 {
	var total int64
	for _, w := range weights {
		total += w
	}
	parts := make([]int64, len(weights))
	order := make([]int, len(weights))
	left := n
	for i, w := range weights {
		parts[i] = w * n / total
		left -= parts[i]
		order[i] = i
	}
	rem := func(i int) int64 { return weights[i] * n % total }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rem(b), rem(a)) })
	for _, i := range order[:left] {
		parts[i]++
	}
	return parts
}

func itemName(id int64) string {
	return "RUBiS automatically generated item #" + strconv.FormatInt(id, 10)
}

// The random streams of the population: each row draws from its own
// stream, a function of (seed, table, id), so that no table depends on how
// many numbers another drew, and any row can be regenerated alone (the
// items' bid counts and the users' ratings are computed that way).
const (
	streamItems    = 0x1e3a_0001
	streamBids     = 0x1e3a_0002
	streamComments = 0x1e3a_0003
)

// generator regenerates rows of one population; it owns its random state,
// so each row source has its own and sources may run concurrently.
type generator struct {
	pop  population
	seed uint64
	now  time.Time
	src  rand.PCG
	rng  *rand.Rand
}

func newGenerator(pop population, seed uint64, now time.Time) *generator {
	g := &generator{pop: pop, seed: seed, now: now}
	g.rng = rand.New(&g.src)
	return g
}

// stream positions the generator's random state at row id of a table.
func (g *generator) stream(table, id uint64) *rand.Rand {
	g.src.Seed(mix64(g.seed^table), mix64(id^(table<<40)))
	return g.rng
}

// mix64 is SplitMix64's finaliser: a bijection that scatters nearby inputs
// (consecutive ids) over the whole state space.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (g *generator) at(seconds int64) time.Time {
	return g.now.Add(time.Duration(seconds) * time.Second)
}

// item is one row of items or old_items, without its bids.
type item struct {
	id                   int64
	seller               int64
	descriptionLen       int
	initialPrice         int64
	reservePrice, buyNow int64 // 0: none
	quantity             int64
	start, end           time.Time
	nbBids               int // active items only: old items carry no bids
}

// item draws item id. The seller comes first, so sellerOf draws it alone.
func (g *generator) item(id int64) item {
	r := g.stream(streamItems, uint64(id))
	it := item{id: id, seller: 1 + r.Int64N(g.pop.Users)}
	it.descriptionLen = 1 + r.IntN(maxDescriptionLen)
	it.initialPrice = 1 + r.Int64N(maxInitialPrice)
	if r.IntN(100) < percentReservePrice {
		it.reservePrice = it.initialPrice + r.Int64N(maxPriceAddend+1)
	}
	if r.IntN(100) < percentBuyNow {
		it.buyNow = it.initialPrice + it.reservePrice + r.Int64N(maxPriceAddend+1)
	}
	it.quantity = 1
	if r.IntN(100) >= percentUniqueItems {
		it.quantity = 1 + r.Int64N(maxItemQuantity)
	}
	duration := (1 + r.Int64N(maxAuctionDays)) * day
	if id < g.pop.FirstActiveItem() {
		// An old auction ran its whole duration and ended in the past.
		ended := minEndedAgo + r.Int64N(maxEndedAgo-minEndedAgo+1)
		it.end = g.at(-ended)
		it.start = it.end.Add(-time.Duration(duration) * time.Second)
		return it
	}
	// An active auction started up to its duration less minTimeLeft ago
	// (InitDB starts them all at "now"; spreading the starts gives runs a
	// mix of auctions about to close and fresh ones).
	elapsed := r.Int64N(duration - minTimeLeft + 1)
	it.start = g.at(-elapsed)
	it.end = it.start.Add(time.Duration(duration) * time.Second)
	it.nbBids = r.IntN(maxBidsPerItem)
	return it
}

// sellerOf is item id's seller without drawing the rest of the item.
func (g *generator) sellerOf(id int64) int64 {
	return 1 + g.stream(streamItems, uint64(id)).Int64N(g.pop.Users)
}

// bid is one row of bids, less its id.
type bid struct {
	itemID int64
	user   int64
	qty    int64
	bid    int64
	maxBid int64
	at     time.Time
}

// bids draws item it's bids into out (InitDB's rules: each raises the
// minimum bid, which starts at the initial price, by 1..10; its max bid is
// the minimum plus twice that; its quantity 1..the item's) and returns
// them with the item's max_bid, the largest of their max bids as StoreBid
// keeps it (0 without bids). Bids are dated evenly between the auction's
// start and the time base, in the order they raise the price.
func (g *generator) bids(it *item, out *[maxBidsPerItem]bid) (bids []bid, maxBid int64) {
	r := g.stream(streamBids, uint64(it.id))
	elapsed := int64(g.now.Sub(it.start) / time.Second)
	minBid := it.initialPrice
	n := int64(it.nbBids)
	for j := range it.nbBids {
		add := 1 + r.Int64N(maxBidIncrement)
		b := bid{user: 1 + r.Int64N(g.pop.Users), qty: 1 + r.Int64N(it.quantity), bid: minBid + add, maxBid: minBid + 2*add,
			itemID: it.id}
		b.at = it.start.Add(time.Duration(elapsed*int64(j+1)/(n+1)) * time.Second)
		minBid += add
		maxBid = max(maxBid, b.maxBid)
		out[j] = b
	}
	return out[:it.nbBids], maxBid
}

// comment is comment id (about item id, from a random user to its seller).
type comment struct {
	from   int64
	rating int64
	text   string
}

func (g *generator) comment(id int64) comment {
	r := g.stream(streamComments, uint64(id))
	k := r.IntN(len(commentRatings))
	n := 1 + r.IntN(maxCommentLen)
	return comment{rating: commentRatings[k], text: commentTexts[k][:n], from: 1 + r.Int64N(g.pop.Users)}
}

// commentDate is when the comment on item it was left: at the end of an
// old auction, at the time base for an active one.
func (g *generator) commentDate(it *item) time.Time {
	if it.end.Before(g.now) {
		return it.end
	}
	return g.now
}

// userSince is user id's creation_date: spread evenly, in id order, over
// the window before any auction of the population.
func (g *generator) userSince(id int64) time.Time {
	span := userSinceMax - userSinceMin
	return g.at(-userSinceMax + (id-1)*span/g.pop.Users)
}

// userRatings sums, for each user, the ratings of the comments about them:
// the users.rating that StoreComment would have left (users start at 0).
// Index 0 is unused.
func (g *generator) userRatings() []int32 {
	ratings := make([]int32, g.pop.Users+1)
	for id := int64(1); id <= g.pop.Comments(); id++ {
		c := g.comment(id)
		ratings[g.sellerOf(id)] += int32(c.rating)
	}
	return ratings
}

// bidCount is the number of bids the population holds.
func (g *generator) bidCount() int64 {
	var n int64
	for id := g.pop.FirstActiveItem(); id <= g.pop.Items(); id++ {
		it := g.item(id)
		n += int64(it.nbBids)
	}
	return n
}

// descriptionText and commentTexts are repeated to their longest length;
// a row's text is a prefix, as InitDB cuts its static text, so making one
// allocates nothing. ASCII only, so that lengths in bytes and characters
// agree on every dialect.
var (
	descriptionText = repeatTo("This auction item was generated for the RUBiS benchmark. It is in fine condition, "+
		"works as described and ships within two business days of payment. The seller answers questions quickly and "+
		"packs carefully; international buyers are welcome. Please read the whole description before bidding: the "+
		"photographs show the actual item, any wear is mentioned here, and the reserve, if any, is reasonable. ", maxDescriptionLen)
	commentTexts = [len(commentRatings)]string{
		repeatTo("Very bad experience: the item never matched its description. Avoid this seller. ", maxCommentLen),
		repeatTo("Below average: slow shipping and poor packing. Not recommended. ", maxCommentLen),
		repeatTo("A neutral deal: neither good nor bad, the item arrived as expected. ", maxCommentLen),
		repeatTo("Above average: a fair deal and a seller you can trust. ", maxCommentLen),
		repeatTo("Excellent seller: fast, friendly and exactly as described. Great deal! ", maxCommentLen),
	}
)

func repeatTo(s string, n int) string {
	b := make([]byte, 0, n+len(s))
	for len(b) < n {
		b = append(b, s...)
	}
	return string(b[:n])
}
