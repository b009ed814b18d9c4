package rubis

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"maps"
	"math"
	"strings"
	"testing"
	"time"
)

// testBase is the time base of the tests that do not need the present.
var testBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustPopulation(t testing.TB, scale int) population {
	t.Helper()
	return mustSpread(t, scale, "")
}

// mustSpread is the population at scale with its items dealt as spread
// says (--items-per-category; empty: the default).
func mustSpread(t testing.TB, scale int, spread string) population {
	t.Helper()
	pop, err := populationAt(scale)
	if err == nil {
		pop, err = pop.withSpread(spread)
	}
	if err != nil {
		t.Fatal(err)
	}
	return pop
}

func TestPopulationAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scale                                  int
		users, old, active, items, firstActive int64
	}{
		{0, 10_000, 5_000, 330, 5_330, 5_001},
		{1, 10_000, 5_000, 330, 5_330, 5_001},
		{10, 100_000, 50_000, 3_300, 53_300, 50_001},
		// The paper's database.
		{100, 1_000_000, 500_000, 33_000, 533_000, 500_001},
		{maxScale, 100_000_000, 50_000_000, 3_300_000, 53_300_000, 50_000_001},
	} {
		pop := mustPopulation(t, tc.scale)
		if pop.Users != tc.users || pop.OldItems != tc.old || pop.ActiveItems != tc.active ||
			pop.Items() != tc.items || pop.FirstActiveItem() != tc.firstActive || pop.Comments() != tc.items {
			t.Errorf("populationAt(%d) = %+v (items %d, first active %d, comments %d)",
				tc.scale, pop, pop.Items(), pop.FirstActiveItem(), pop.Comments())
		}
		if pop.Comments() > math.MaxInt32 || pop.Users > math.MaxInt32 {
			t.Errorf("populationAt(%d): ids beyond the INTEGER columns", tc.scale)
		}
	}
	for _, bad := range []int{-1, maxScale + 1} {
		if _, err := populationAt(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprint(bad)) {
			t.Errorf("populationAt(%d): error %v, want one naming the scale", bad, err)
		}
	}
}

func TestUserIdentity(t *testing.T) {
	t.Parallel()
	if nickname(42) != "user42" || password(42) != "password42" || email(42) != "Great42.User42@rubis.com" ||
		firstname(42) != "Great42" || lastname(42) != "User42" {
		t.Errorf("user 42: %s %s %s %s %s", nickname(42), password(42), email(42), firstname(42), lastname(42))
	}
	for id, want := range map[int64]int64{1: 1, 62: 62, 63: 1, 124: 62, 125: 1} {
		if got := regionOf(id); got != want {
			t.Errorf("regionOf(%d) = %d, want %d", id, got, want)
		}
	}
	even := mustSpread(t, 1, SpreadEven)
	for id, want := range map[int64]int64{1: 1, 20: 20, 21: 1} {
		if got := even.categoryOf(id); got != want {
			t.Errorf("categoryOf(%d) = %d, want %d", id, got, want)
		}
	}
	if len(email(maxScale*usersPerScale)) > 50 || len(nickname(maxScale*usersPerScale)) > 20 {
		t.Error("the largest user's email or nickname overflows its column")
	}
	for _, n := range regionNames {
		if len(n) > 25 || n == "" {
			t.Errorf("region name %q does not fit regions.name", n)
		}
	}
	seen := map[string]bool{}
	for _, n := range append(regionNames[:], categoryNames[:]...) {
		if seen[n] {
			t.Errorf("name %q twice", n)
		}
		seen[n] = true
	}
}

// TestRandomAccess checks that a row does not depend on which rows were
// generated before it: the property that lets items carry their bid counts
// and users their ratings, and that keeps tables independent.
func TestRandomAccess(t *testing.T) {
	t.Parallel()
	pop := mustPopulation(t, 1)
	forward, backward := newGenerator(pop, 7, testBase), newGenerator(pop, 7, testBase)
	got := make(map[int64]item)
	for id := pop.Items(); id >= 1; id-- {
		backward.comment(id)
		got[id] = backward.item(id)
	}
	for id := int64(1); id <= pop.Items(); id++ {
		if it := forward.item(id); it != got[id] {
			t.Fatalf("item %d: %+v in order, %+v in reverse", id, it, got[id])
		}
		if s := forward.sellerOf(id); s != got[id].seller {
			t.Fatalf("sellerOf(%d) = %d, item says %d", id, s, got[id].seller)
		}
	}
}

// TestPopulationRules checks every generated row of scale 1 against the
// rules of InitDB and the invariants the loader promises.
func TestPopulationRules(t *testing.T) {
	t.Parallel()
	pop := mustPopulation(t, 1)
	g := newGenerator(pop, 3, testBase)
	var buf [maxBidsPerItem]bid
	for id := int64(1); id <= pop.Items(); id++ {
		it := g.item(id)
		active := id >= pop.FirstActiveItem()
		if it.seller < 1 || it.seller > pop.Users || it.initialPrice < 1 || it.initialPrice > maxInitialPrice ||
			it.quantity < 1 || it.quantity > maxItemQuantity || it.descriptionLen < 1 || it.descriptionLen > maxDescriptionLen {
			t.Fatalf("item %d out of range: %+v", id, it)
		}
		if it.reservePrice != 0 && (it.reservePrice < it.initialPrice || it.reservePrice > it.initialPrice+maxPriceAddend) {
			t.Fatalf("item %d: reserve %d for initial price %d", id, it.reservePrice, it.initialPrice)
		}
		if it.buyNow != 0 && (it.buyNow < it.initialPrice+it.reservePrice || it.buyNow > it.initialPrice+it.reservePrice+maxPriceAddend) {
			t.Fatalf("item %d: buy now %d for initial %d, reserve %d", id, it.buyNow, it.initialPrice, it.reservePrice)
		}
		d := it.end.Sub(it.start)
		if d < 24*time.Hour || d > maxAuctionDays*24*time.Hour || d%(24*time.Hour) != 0 {
			t.Fatalf("item %d lasts %v", id, d)
		}
		if active {
			if it.start.After(testBase) || it.end.Before(testBase.Add(time.Hour)) || it.nbBids < 0 || it.nbBids >= maxBidsPerItem {
				t.Fatalf("active item %d: %v..%v, %d bids (base %v)", id, it.start, it.end, it.nbBids, testBase)
			}
		} else if !it.end.Before(testBase) || it.end.Before(testBase.Add(-time.Duration(maxEndedAgo)*time.Second)) || it.nbBids != 0 {
			t.Fatalf("old item %d: %v..%v, %d bids", id, it.start, it.end, it.nbBids)
		}
		bids, maxBid := g.bids(&it, &buf)
		if len(bids) != it.nbBids {
			t.Fatalf("item %d: %d bids, nb_of_bids %d", id, len(bids), it.nbBids)
		}
		prev, prevAt, top := it.initialPrice, it.start, int64(0)
		for _, b := range bids {
			if b.bid <= prev || b.bid > prev+maxBidIncrement || b.maxBid != 2*b.bid-prev || b.qty < 1 || b.qty > it.quantity ||
				b.user < 1 || b.user > pop.Users || b.at.Before(prevAt) || b.at.After(testBase) || b.itemID != id {
				t.Fatalf("item %d (initial %d, qty %d): bad bid %+v after %d at %v", id, it.initialPrice, it.quantity, b, prev, prevAt)
			}
			prev, prevAt, top = b.bid, b.at, max(top, b.maxBid)
		}
		if maxBid != top {
			t.Fatalf("item %d: max_bid %d, its bids' largest max_bid %d", id, maxBid, top)
		}
		c := g.comment(id)
		if c.from < 1 || c.from > pop.Users || len(c.text) < 1 || len(c.text) > maxCommentLen {
			t.Fatalf("comment %d: %+v", id, c)
		}
		if at := g.commentDate(&it); at.After(testBase) || at.Before(it.start) {
			t.Fatalf("comment %d dated %v, item %v..%v", id, at, it.start, it.end)
		}
	}
	first, last := g.userSince(1), g.userSince(pop.Users)
	oldest := testBase.Add(-time.Duration(maxEndedAgo+maxAuctionDays*day) * time.Second)
	if !first.Before(last) || !last.Before(oldest) {
		t.Errorf("users registered %v..%v, not before the oldest auction's start %v", first, last, oldest)
	}
}

func TestUserRatings(t *testing.T) {
	t.Parallel()
	pop := mustPopulation(t, 1)
	g := newGenerator(pop, 5, testBase)
	want := make(map[int64]int64)
	var total int64
	for id := int64(1); id <= pop.Comments(); id++ {
		it := g.item(id)
		c := g.comment(id)
		want[it.seller] += c.rating
		total += c.rating
	}
	ratings := g.userRatings()
	var sum int64
	for u := int64(1); u <= pop.Users; u++ {
		if int64(ratings[u]) != want[u] {
			t.Fatalf("user %d: rating %d, comments about them sum to %d", u, ratings[u], want[u])
		}
		sum += int64(ratings[u])
	}
	if sum != total {
		t.Errorf("ratings sum to %d, comments to %d", sum, total)
	}
}

// binomialTolerance is how far a count of n Bernoulli(p) draws may stray
// from n·p: 5 standard deviations, which a correct generator exceeds with
// probability below 6e-7 (two-sided normal bound), so that a failure means
// a wrong rule, not bad luck, for any seed.
func binomialTolerance(n int64, p float64) float64 {
	return 5 * math.Sqrt(float64(n)*p*(1-p))
}

// itemShares are the expected shares of InitDB's item rules. An item is
// "unique" (quantity 1) with 80%, and a multiple item draws 1..10, so 1
// one time in ten: quantity 1 has probability 0.8 + 0.2 × 0.1.
var itemShares = []struct {
	what string
	p    float64
}{
	{"quantity 1", float64(percentUniqueItems)/100 + (1-float64(percentUniqueItems)/100)/maxItemQuantity},
	{"a reserve price", float64(percentReservePrice) / 100},
	{"a buy-now price", float64(percentBuyNow) / 100},
}

func checkShares(t *testing.T, n int64, counts [3]int64) {
	t.Helper()
	for i, s := range itemShares {
		want := float64(n) * s.p
		if tol := binomialTolerance(n, s.p); math.Abs(float64(counts[i])-want) > tol {
			t.Errorf("%d of %d items with %s, want %.0f ± %.0f", counts[i], n, s.what, want, tol)
		}
	}
}

func TestItemDistributions(t *testing.T) {
	t.Parallel()
	pop := mustPopulation(t, 10)
	for _, seed := range []uint64{1, 2, 3} {
		g := newGenerator(pop, seed, testBase)
		var counts [3]int64
		var bids int64
		for id := int64(1); id <= pop.Items(); id++ {
			it := g.item(id)
			counts[0] += b2i(it.quantity == 1)
			counts[1] += b2i(it.reservePrice > 0)
			counts[2] += b2i(it.buyNow > 0)
			bids += int64(it.nbBids)
		}
		checkShares(t, pop.Items(), counts)
		// Bids per active item are uniform on 0..19: mean 9.5, variance
		// (20² − 1)/12 = 33.25.
		mean, sd := 9.5*float64(pop.ActiveItems), math.Sqrt(33.25*float64(pop.ActiveItems))
		if math.Abs(float64(bids)-mean) > 5*sd {
			t.Errorf("seed %d: %d bids on %d active items, want %.0f ± %.0f", seed, bids, pop.ActiveItems, mean, 5*sd)
		}
		if got := g.bidCount(); got != bids {
			t.Errorf("bidCount %d, items say %d", got, bids)
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestPopulationSeeds checks that a seed fixes every table and that
// another seed changes every table that draws.
func TestPopulationSeeds(t *testing.T) {
	t.Parallel()
	pop := mustPopulation(t, 1)
	a, again, b := popChecksumsOf(t, 1, pop, testBase), popChecksumsOf(t, 1, pop, testBase), popChecksumsOf(t, 2, pop, testBase)
	if !maps.Equal(a, again) {
		t.Errorf("seed 1 twice: %v and %v", a, again)
	}
	for table := range a {
		random := table != "categories" && table != "regions" && table != "buy_now" && table != "ids"
		if random && a[table] == b[table] {
			t.Errorf("%s: seeds 1 and 2 give the same rows", table)
		}
	}
	if c := popChecksumsOf(t, 1, pop, testBase.Add(time.Second)); c["items"] == a["items"] {
		t.Error("another time base gives the same items")
	}
}

// popChecksum is a digest of a table's rows: its count and a hash of its
// values in order, each by kind (integer, float, text, time in seconds),
// so that the same rows read from any backend give the same digest.
type popChecksum struct {
	Rows int64
	Hash [sha256.Size]byte
}

func (c popChecksum) String() string { return fmt.Sprintf("%d rows %x", c.Rows, c.Hash[:6]) }

type rowHasher struct {
	h    hash.Hash
	rows int64
	buf  [9]byte
}

func newRowHasher() *rowHasher { return &rowHasher{h: sha256.New()} }

func (r *rowHasher) add(values []any) error {
	r.rows++
	for _, v := range values {
		switch v := v.(type) {
		case int64:
			r.word('i', uint64(v))
		case float64:
			r.word('f', math.Float64bits(v))
		case string:
			r.word('s', uint64(len(v)))
			r.h.Write([]byte(v))
		case time.Time:
			r.word('t', uint64(v.Unix()))
		default:
			return fmt.Errorf("value %v of type %T", v, v)
		}
	}
	return nil
}

func (r *rowHasher) word(kind byte, x uint64) {
	r.buf[0] = kind
	binary.LittleEndian.PutUint64(r.buf[1:], x)
	r.h.Write(r.buf[:])
}

func (r *rowHasher) sum() popChecksum {
	c := popChecksum{Rows: r.rows}
	r.h.Sum(c.Hash[:0])
	return c
}

// popChecksumsOf are the tables' checksums from the generators alone.
func popChecksumsOf(t testing.TB, seed uint64, pop population, now time.Time) map[string]popChecksum {
	t.Helper()
	out := make(map[string]popChecksum)
	for _, tbl := range popTables(seed, pop, now) {
		h := newRowHasher()
		for tbl.rows.Next() {
			if err := h.add(tbl.rows.Values()); err != nil {
				t.Fatalf("table %s: %v", tbl.name, err)
			}
		}
		out[tbl.name] = h.sum()
	}
	return out
}
