package rubis

import (
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseStoreBid(t *testing.T) {
	for _, c := range []struct {
		query string
		want  StoreBidRequest
		bad   string // the parameter refused, "" when accepted
	}{
		{"itemId=5&userId=3&minBid=10.0&bid=12&maxBid=14.5&qty=1&maxQty=2", StoreBidRequest{UserID: 3, ItemID: 5, MinBid: 10, Bid: 12, MaxBid: 14.5, Qty: 1, MaxQty: 2}, ""},
		// The RUBiS client's unescaped exponent: '+' arrives as a space.
		{"itemId=5&userId=3&minBid=1.2345E+6&bid=1.2345E+6&maxBid=2E6&qty=1&maxQty=1", StoreBidRequest{UserID: 3, ItemID: 5, MinBid: 1.2345e6, Bid: 1.2345e6, MaxBid: 2e6, Qty: 1, MaxQty: 1}, ""},
		{"itemId=-1&userId=0&minBid=0&bid=0&maxBid=0&qty=0&maxQty=0", StoreBidRequest{ItemID: -1}, ""},
		{"userId=3&minBid=1&bid=1&maxBid=1&qty=1&maxQty=1", StoreBidRequest{}, "itemId"},
		{"itemId=5&userId=3&minBid=NaN&bid=1&maxBid=1&qty=1&maxQty=1", StoreBidRequest{}, "minBid"},
		{"itemId=5&userId=3&minBid=1&bid=1e400&maxBid=1&qty=1&maxQty=1", StoreBidRequest{}, "bid"},
		{"itemId=5&userId=3&minBid=1&bid=1&maxBid=-2&qty=1&maxQty=1", StoreBidRequest{}, "maxBid"},
		{"itemId=2147483648&userId=3&minBid=1&bid=1&maxBid=1&qty=1&maxQty=1", StoreBidRequest{}, "itemId"},
		{"itemId=1%20OR%201=1&userId=3&minBid=1&bid=1&maxBid=1&qty=1&maxQty=1", StoreBidRequest{}, "itemId"},
	} {
		v, _ := url.ParseQuery(c.query)
		got, err := parseStoreBid(v)
		var pe *ParamError
		switch {
		case c.bad == "" && (err != nil || got != c.want):
			t.Errorf("%s: %+v, %v; want %+v", c.query, got, err, c.want)
		case c.bad != "" && (!errors.As(err, &pe) || pe.Param != c.bad):
			t.Errorf("%s: %v; want parameter %s refused", c.query, err, c.bad)
		}
	}
}

func TestParseSearchDefaults(t *testing.T) {
	v, _ := url.ParseQuery("category=4&categoryName=Coins")
	s, err := parseSearch(v, false)
	if err != nil || s.Page != 0 || s.NbOfItems != DefaultItemsPerPage || s.Category != 4 || s.CategoryName != "Coins" {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	for _, q := range []string{"category=4&categoryName=x&nbOfItems=0", "category=4&categoryName=x&nbOfItems=101", "category=4&categoryName=x&page=-1", "categoryName=x"} {
		v, _ := url.ParseQuery(q)
		if _, err := parseSearch(v, false); err == nil {
			t.Errorf("%s accepted", q)
		}
	}
}

// pageParsers are every page's parameter parsing, for the fuzz target.
var pageParsers = map[string]func(url.Values) error{
	"RegisterUser":     func(v url.Values) error { _, err := parseRegisterUser(v); return err },
	"BrowseCategories": func(v url.Values) error { _, err := parseBrowseCategories(v); return err },
	"SearchByCategory": func(v url.Values) error { _, err := parseSearch(v, false); return err },
	"SearchByRegion":   func(v url.Values) error { _, err := parseSearch(v, true); return err },
	"ItemID":           func(v url.Values) error { _, err := parseItemID(v); return err },
	"UserID":           func(v url.Values) error { _, err := parseUserID(v); return err },
	"AuthItem":         func(v url.Values) error { _, err := parseAuthItem(v); return err },
	"Login":            func(v url.Values) error { _, _, err := parseLogin(v); return err },
	"CommentTarget":    func(v url.Values) error { _, _, err := parseCommentTarget(v); return err },
	"PutComment":       func(v url.Values) error { _, err := parsePutComment(v); return err },
	"StoreBuyNow":      func(v url.Values) error { _, err := parseStoreBuyNow(v); return err },
	"StoreBid":         func(v url.Values) error { _, err := parseStoreBid(v); return err },
	"StoreComment":     func(v url.Values) error { _, err := parseStoreComment(v); return err },
	"SellItemForm":     func(v url.Values) error { _, _, err := parseSellItemForm(v); return err },
	"RegisterItem":     func(v url.Values) error { _, err := parseRegisterItem(v); return err },
}

// FuzzParams feeds arbitrary query strings to every page's parsing: none
// may panic, every refusal is a *ParamError, and what is accepted is
// within what the database stores.
func FuzzParams(f *testing.F) {
	for _, s := range []string{
		"itemId=5&userId=3&minBid=10&bid=12&maxBid=14&qty=1&maxQty=2",
		"category=1&categoryName=Antiques+%26+Art&page=2&nbOfItems=20&region=3",
		"firstname=a&lastname=b&nickname=c&password=d&email=e&region=AZ--Phoenix",
		"to=1&from=2&itemId=3&rating=-5&comment=%27%3B+DROP+TABLE+users%3B+--",
		"userId=1&categoryId=2&name=x&description=y&initialPrice=1.5E+3&reservePrice=0&buyNow=0&duration=7&quantity=1",
		"nickname=%27+OR+%271%27%3D%271&password=x&itemId=1+UNION+SELECT+1",
		"itemId=%00&page=99999999999999999999&nbOfItems=-1&bid=NaN",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		v, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		for name, parse := range pageParsers {
			err := parse(v)
			var pe *ParamError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s(%q): %T %v, want a *ParamError", name, query, err, err)
			}
		}
		if r, err := parseStoreBid(v); err == nil {
			for _, f := range []float64{r.MinBid, r.Bid, r.MaxBid} {
				if math.IsNaN(f) || f < 0 || f > maxPrice {
					t.Fatalf("StoreBid(%q) accepted amount %v", query, f)
				}
			}
			if r.ItemID > math.MaxInt32 || r.ItemID < math.MinInt32 {
				t.Fatalf("StoreBid(%q) accepted item %d", query, r.ItemID)
			}
		}
		if r, err := parseStoreComment(v); err == nil {
			if !utf8.ValidString(r.Comment) || strings.IndexByte(r.Comment, 0) >= 0 || len(r.Comment) > maxLongText || r.Rating < minRating || r.Rating > maxRating {
				t.Fatalf("StoreComment(%q) accepted %+v", query, r)
			}
		}
		if r, err := parseRegisterUser(v); err == nil {
			for _, s := range []string{r.Firstname, r.Lastname, r.Nickname, r.Password} {
				if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxShortText {
					t.Fatalf("RegisterUser(%q) accepted %q", query, s)
				}
			}
		}
		if s, err := parseSearch(v, true); err == nil && (s.Page < 0 || s.Page > maxPage || s.NbOfItems < 1 || s.NbOfItems > MaxItemsPerPage) {
			t.Fatalf("search(%q) accepted page %d of %d", query, s.Page, s.NbOfItems)
		}
	})
}
