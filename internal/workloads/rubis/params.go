package rubis

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The pages' parameters, parsed into the business tier's requests. Names
// are the PHP pages'; like PHP, a form's POST value wins over the query
// string's (the caller merges them: http.Request.Form). What the database
// could not store or compare is refused here, so a request that passes
// never fails in the database for its values: ids within the schema's
// 32-bit INTEGER, texts valid UTF-8 without NUL and within their
// columns, prices finite and bounded.

// ParamError is a missing or malformed page parameter.
type ParamError struct {
	Param   string
	Problem string
}

func (e *ParamError) Error() string { return "parameter " + e.Param + ": " + e.Problem }

// Limits of the values the pages accept.
const (
	maxShortText = 20        // users' names, nickname, password: VARCHAR(20)
	maxEmail     = 50        // users.email
	maxLookup    = 100       // a region or category name looked up, never stored
	maxItemName  = 100       // items.name
	maxLongText  = 65535     // description, comment: MySQL's TEXT, in bytes
	maxPrice     = 1e9       // beyond any auction, within every FLOAT
	maxPage      = 1_000_000 // keeps page × nbOfItems far from overflow
	maxDuration  = 365       // days; DATETIME ends in 9999
	minRating    = -5        // the comment form's choices: -5, -3, 0, 3, 5
	maxRating    = 5
)

type params url.Values

func (p params) value(name string) (string, bool) {
	vs, ok := p[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// text is a required string of at most maxRunes characters (maxBytes
// bytes when maxRunes is 0).
func (p params) text(name string, maxRunes, maxBytes int) (string, error) {
	s, ok := p.value(name)
	if !ok {
		return "", &ParamError{name, "missing"}
	}
	return s, checkText(name, s, maxRunes, maxBytes)
}

func checkText(name, s string, maxRunes, maxBytes int) error {
	switch {
	case !utf8.ValidString(s):
		return &ParamError{name, "not valid UTF-8"}
	case strings.IndexByte(s, 0) >= 0:
		return &ParamError{name, "contains a NUL character"}
	case maxRunes > 0 && utf8.RuneCountInString(s) > maxRunes:
		return &ParamError{name, fmt.Sprintf("longer than %d characters", maxRunes)}
	case maxBytes > 0 && len(s) > maxBytes:
		return &ParamError{name, fmt.Sprintf("longer than %d bytes", maxBytes)}
	}
	return nil
}

// nonEmpty is text that must not be empty.
func (p params) nonEmpty(name string, maxRunes int) (string, error) {
	s, err := p.text(name, maxRunes, 0)
	if err == nil && strings.TrimSpace(s) == "" {
		err = &ParamError{name, "empty"}
	}
	return s, err
}

// integer is a required whole number in [lo, hi].
func (p params) integer(name string, lo, hi int64) (int64, error) {
	s, ok := p.value(name)
	if !ok {
		return 0, &ParamError{name, "missing"}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, &ParamError{name, fmt.Sprintf("%q is not a whole number", clip(s))}
	}
	if n < lo || n > hi {
		return 0, &ParamError{name, fmt.Sprintf("%d is outside %d..%d", n, lo, hi)}
	}
	return n, nil
}

// id is a key of the schema's INTEGER columns. Negative and unknown ids
// are well formed (the RUBiS client sends -1 when it found none): the
// business tier answers that nothing has it.
func (p params) id(name string) (int64, error) { return p.integer(name, math.MinInt32, math.MaxInt32) }

// optionalInt is an integer in [lo, hi], def when absent or empty.
func (p params) optionalInt(name string, lo, hi, def int64) (int64, error) {
	if s, ok := p.value(name); !ok || strings.TrimSpace(s) == "" {
		return def, nil
	}
	return p.integer(name, lo, hi)
}

// price is a required amount in [0, maxPrice]. A '+' of an exponent
// ("1.5E+6", as the RUBiS client writes floats without escaping it)
// arrives as a space and is read back as '+'.
func (p params) price(name string) (float64, error) {
	s, ok := p.value(name)
	if !ok {
		return 0, &ParamError{name, "missing"}
	}
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "+")
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, &ParamError{name, fmt.Sprintf("%q is not an amount", clip(s))}
	}
	if f < 0 || f > maxPrice {
		return 0, &ParamError{name, fmt.Sprintf("%v is outside 0..%v", f, maxPrice)}
	}
	return f, nil
}

// clip shortens a rejected value for its message.
func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func parseRegisterUser(v url.Values) (r RegisterUserRequest, err error) {
	p := params(v)
	var errs [6]error
	r.Firstname, errs[0] = p.text("firstname", maxShortText, 0)
	r.Lastname, errs[1] = p.text("lastname", maxShortText, 0)
	r.Nickname, errs[2] = p.nonEmpty("nickname", maxShortText)
	r.Email, errs[3] = p.text("email", maxEmail, 0)
	r.Password, errs[4] = p.nonEmpty("password", maxShortText)
	r.Region, errs[5] = p.text("region", maxLookup, 0)
	return r, firstError(errs[:]...)
}

// browseCategoriesParams: BrowseCategories.php lists categories to
// search (no parameter), to search in a region (region), or to sell in
// (nickname and password: the Sell page's SelectCategoryToSellItem).
type browseCategoriesParams struct {
	Region             string
	HasRegion          bool
	Nickname, Password string
	Sell               bool
}

func parseBrowseCategories(v url.Values) (b browseCategoriesParams, err error) {
	p := params(v)
	if s, ok := p.value("region"); ok {
		b.Region, b.HasRegion = s, true
		if err := checkText("region", s, maxLookup, 0); err != nil {
			return b, err
		}
	}
	nick, _ := p.value("nickname")
	pass, _ := p.value("password")
	if nick != "" || pass != "" {
		b.Sell = true
		b.Nickname, b.Password = nick, pass
		if err := firstError(checkText("nickname", nick, maxLookup, 0), checkText("password", pass, maxLookup, 0)); err != nil {
			return b, err
		}
	}
	return b, nil
}

// searchParams are the paging parameters and the category's name, which
// the page only shows and passes on.
type searchParams struct {
	Category     int64
	CategoryName string
	Region       int64
	Page         int
	NbOfItems    int
}

func parseSearch(v url.Values, withRegion bool) (s searchParams, err error) {
	p := params(v)
	var errs [5]error
	s.Category, errs[0] = p.id("category")
	s.CategoryName, errs[1] = p.text("categoryName", maxLookup, 0)
	page, e := p.optionalInt("page", 0, maxPage, 0)
	s.Page, errs[2] = int(page), e
	n, e := p.optionalInt("nbOfItems", 1, MaxItemsPerPage, DefaultItemsPerPage)
	s.NbOfItems, errs[3] = int(n), e
	if withRegion {
		s.Region, errs[4] = p.id("region")
	}
	return s, firstError(errs[:]...)
}

func parseItemID(v url.Values) (int64, error) { return params(v).id("itemId") }

func parseUserID(v url.Values) (int64, error) { return params(v).id("userId") }

// authParams are a login and the item it is for.
type authParams struct {
	Nickname, Password string
	ItemID             int64
}

func parseAuthItem(v url.Values) (a authParams, err error) {
	p := params(v)
	var errs [3]error
	a.Nickname, errs[0] = p.text("nickname", maxLookup, 0)
	a.Password, errs[1] = p.text("password", maxLookup, 0)
	a.ItemID, errs[2] = p.id("itemId")
	return a, firstError(errs[:]...)
}

func parseLogin(v url.Values) (nickname, password string, err error) {
	p := params(v)
	nickname, e1 := p.text("nickname", maxLookup, 0)
	password, e2 := p.text("password", maxLookup, 0)
	return nickname, password, firstError(e1, e2)
}

// commentTarget: PutCommentAuth.php's itemId and to.
func parseCommentTarget(v url.Values) (itemID, to int64, err error) {
	p := params(v)
	itemID, e1 := p.id("itemId")
	to, e2 := p.id("to")
	return itemID, to, firstError(e1, e2)
}

func parsePutComment(v url.Values) (PutCommentRequest, error) {
	a, err := parseAuthItem(v)
	to, e := params(v).id("to")
	return PutCommentRequest{Nickname: a.Nickname, Password: a.Password, ItemID: a.ItemID, To: to}, firstError(err, e)
}

func parseStoreBuyNow(v url.Values) (r StoreBuyNowRequest, err error) {
	p := params(v)
	var errs [4]error
	r.UserID, errs[0] = p.id("userId")
	r.ItemID, errs[1] = p.id("itemId")
	r.Qty, errs[2] = p.id("qty")
	r.MaxQty, errs[3] = p.id("maxQty")
	return r, firstError(errs[:]...)
}

func parseStoreBid(v url.Values) (r StoreBidRequest, err error) {
	p := params(v)
	var errs [7]error
	r.UserID, errs[0] = p.id("userId")
	r.ItemID, errs[1] = p.id("itemId")
	r.MinBid, errs[2] = p.price("minBid")
	r.Bid, errs[3] = p.price("bid")
	r.MaxBid, errs[4] = p.price("maxBid")
	r.Qty, errs[5] = p.id("qty")
	r.MaxQty, errs[6] = p.id("maxQty")
	return r, firstError(errs[:]...)
}

func parseStoreComment(v url.Values) (r StoreCommentRequest, err error) {
	p := params(v)
	var errs [5]error
	r.To, errs[0] = p.id("to")
	r.From, errs[1] = p.id("from")
	r.ItemID, errs[2] = p.id("itemId")
	r.Rating, errs[3] = p.integer("rating", minRating, maxRating)
	r.Comment, errs[4] = p.text("comment", 0, maxLongText)
	return r, firstError(errs[:]...)
}

// parseSellItemForm: SellItemForm.php's category and user.
func parseSellItemForm(v url.Values) (category, user int64, err error) {
	p := params(v)
	category, e1 := p.id("category")
	user, e2 := p.id("user")
	return category, user, firstError(e1, e2)
}

func parseRegisterItem(v url.Values) (r RegisterItemRequest, err error) {
	p := params(v)
	var errs [10]error
	r.UserID, errs[0] = p.id("userId")
	r.CategoryID, errs[1] = p.id("categoryId")
	r.Name, errs[2] = p.text("name", maxItemName, 0)
	r.InitialPrice, errs[3] = p.price("initialPrice")
	r.ReservePrice, errs[4] = p.price("reservePrice")
	r.BuyNow, errs[5] = p.price("buyNow")
	r.Duration, errs[6] = p.integer("duration", 1, maxDuration)
	r.Quantity, errs[7] = p.integer("quantity", 1, math.MaxInt32)
	// The PHP's default when the form leaves it out.
	r.Description = "No description"
	if _, ok := p.value("description"); ok {
		r.Description, errs[8] = p.text("description", 0, maxLongText)
	}
	return r, firstError(errs[:]...)
}
