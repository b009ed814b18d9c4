package rubis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/tierbench/tierbench/internal/store/storetest"
)

// imagesOf are a page's <IMG SRC="…"> in order, found as the original
// client finds them (upper case, quoted).
func imagesOf(body string) []string {
	var out []string
	prefix := []byte(`<IMG SRC="`)
	for rest := []byte(body); ; {
		i := bytes.Index(rest, prefix)
		if i < 0 {
			return out
		}
		rest = rest[i+len(prefix):]
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return out
		}
		out = append(out, string(rest[:end]))
		rest = rest[end:]
	}
}

// The pages carry the original's images where its PHP pages print them
// (the logo on every page, bid_now.jpg per listed item and on ViewItem,
// buy_it_now.jpg for an item offered to buy now), and the site serves
// them, the original's bytes, at the original's paths.
func TestWebImages(t *testing.T) {
	t.Parallel()
	const (
		logo   = "/PHP/RUBiS_logo.jpg"
		bidNow = "/PHP/bid_now.jpg"
		buyNow = "/PHP/buy_it_now.jpg"
	)
	repeat := func(s string, n int) []string { return slices.Repeat([]string{s}, n) }
	storetest.Each(t, func(t *testing.T, dsn string) {
		w := setupWeb(t, dsn)
		ctx := context.Background()
		offered := w.q.Int("SELECT MIN(id) FROM items WHERE buy_now > 0 AND nb_of_bids = 0") // offered until the first bid
		plain := w.q.Int("SELECT MIN(id) FROM items WHERE buy_now = 0")
		inCategory := w.q.Int("SELECT COUNT(*) FROM items WHERE category = 6 AND end_date >= ?", w.base)
		if offered == 0 || plain == 0 || inCategory < 20 {
			t.Fatalf("population: item offered to buy now %d, item not %d, %d items in category 6; want both and ≥ 20", offered, plain, inCategory)
		}
		bidder := w.q.Int("SELECT MIN(b.user_id) FROM bids b JOIN items i ON i.id = b.item_id")
		me, err := w.d.AboutMe(ctx, 0, AboutMeRequest{Nickname: nickname(bidder), Password: password(bidder)})
		if err != nil || len(me.Bidding) == 0 {
			t.Fatalf("AboutMe of bidder %d: %d items bid on, %v", bidder, len(me.Bidding), err)
		}
		id := func(n int64) string { return strconv.FormatInt(n, 10) }
		for _, c := range []struct {
			path string
			v    map[string]string
			want []string
		}{
			{"/PHP/index.html", nil, []string{logo}},
			{"/PHP/browse.html", nil, []string{logo}},
			{"/PHP/BrowseRegions.php", nil, []string{logo}},
			{"/PHP/SearchItemsByCategory.php", map[string]string{"category": "6", "categoryName": "Collectibles", "page": "0", "nbOfItems": "20"},
				append([]string{logo}, repeat(bidNow, 20)...)},
			{"/PHP/SearchItemsByCategory.php", map[string]string{"category": "6", "categoryName": "Collectibles", "page": "0", "nbOfItems": "3"},
				[]string{logo, bidNow, bidNow, bidNow}},
			{"/PHP/ViewItem.php", map[string]string{"itemId": id(offered)}, []string{logo, buyNow, bidNow}},
			{"/PHP/ViewItem.php", map[string]string{"itemId": id(plain)}, []string{logo, bidNow}},
			{"/PHP/PutBid.php", map[string]string{"itemId": id(offered), "nickname": "user4", "password": "password4"}, []string{logo, buyNow}},
			{"/PHP/PutBid.php", map[string]string{"itemId": id(plain), "nickname": "user4", "password": "password4"}, []string{logo}},
			{"/PHP/AboutMe.php", map[string]string{"nickname": nickname(bidder), "password": password(bidder)},
				append([]string{logo}, repeat(bidNow, len(me.Bidding))...)},
			{"/PHP/ViewItem.php", map[string]string{"itemId": "999999"}, []string{logo}}, // the error page
		} {
			v := vals()
			for k, x := range c.v {
				v.Set(k, x)
			}
			status, body := w.fetch(t, false, c.path, v)
			if got := imagesOf(body); status != http.StatusOK || !slices.Equal(got, c.want) {
				t.Errorf("GET %s?%s: %d, images %q; want 200 and %q", c.path, v.Encode(), status, got, c.want)
			}
		}
		for path, want := range map[string]struct {
			size int
			sha  string
		}{
			logo:   {20296, "eb32826e7ab7efa7163e14d5ac43f818e4c847e5bed92218a0e8bc93395aee36"},
			bidNow: {3019, "fbc968a096e5be165468f113eba87f1392b8dc4873cd51a5a52b9d1ccbe46a02"},
			buyNow: {4927, "120e5500ee9feb6e237d915ef1f952cbdb821369ed1abd5a38fac93b21b230e5"},
		} {
			resp, err := http.Get(w.srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			sum := sha256.Sum256(body)
			if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/jpeg" ||
				len(body) != want.size || hex.EncodeToString(sum[:]) != want.sha {
				t.Errorf("GET %s: %d %s, %d bytes (%v); want 200 image/jpeg, the original's %d bytes", path, resp.StatusCode,
					resp.Header.Get("Content-Type"), len(body), err, want.size)
			}
		}
	})
}
