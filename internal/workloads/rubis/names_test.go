package rubis

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
)

// The regions and categories are the kit's own files, byte for byte, read
// as its client reads them: the 15 regions and the category that differed
// (so that the original client, given its files, got error pages) are the
// kit's names.
func TestNamesAreTheKits(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ data, sha string }{
		"ebay_regions.txt":           {ebayRegions, "87fa663cd68cb30cc53a27b51906cb605136b9b9db92f6dcd20f952e0c69123e"},
		"ebay_simple_categories.txt": {ebayCategories, "5e2fdc5ac80c97cd9a4bb5c0d5c682c5ce4eb539b0c595dbf1135e36b78d7c5e"},
	} {
		if sum := sha256.Sum256([]byte(c.data)); hex.EncodeToString(sum[:]) != c.sha {
			t.Errorf("%s is not the kit's file (sha256 %x)", name, sum)
		}
	}
	if len(regionNames) != numRegions || len(categoryNames) != numCategories {
		t.Fatalf("%d regions, %d categories; want %d and %d", len(regionNames), len(categoryNames), numRegions, numCategories)
	}
	// Ids from 1, as regions.sql numbers them.
	for id, want := range map[int]string{
		1: "AZ--Phoenix", 14: "FL--Tampa-St. Pete", 15: "FL--West Palm Beach", 18: "ID--Billings-Boise", 21: "KS--Kansas City",
		24: "MA--Boston ", 28: "MN--Minn-St. Paul", 31: "MT--Billings-Boise", 33: "NC--Greensboro", 34: "NC--Raleigh-Durham",
		35: "ND--Bismarck-Pierre", 45: "OH--Dayton", 51: "SD--Bismarck-Pierre", 55: "TX--Dallas-Fort Worth",
		59: "VA--Norfolk-VA Beach", 61: "WA--Seattle-Tacoma", 62: "WI--Milwaukee",
	} {
		if got := regionNames[id-1]; got != want {
			t.Errorf("region %d: %q, want the kit's %q", id, got, want)
		}
	}
	if got := categoryNames[10]; got != "Jewelry, Gems & Watches" {
		t.Errorf("category 11: %q, want the kit's %q", got, "Jewelry, Gems & Watches")
	}
	if categoryNames[0] != "Antiques & Art" || categoryNames[19] != "Everything Else" {
		t.Errorf("categories 1 and 20: %q, %q; want the names without the count or the blank before it", categoryNames[0], categoryNames[19])
	}
	wantItems := []int64{1374, 2691, 259, 2874, 538, 7521, 664, 586, 1077, 976, 2325, 1051, 1420, 170, 1069, 3029, 305, 242, 3671, 825}
	if !slices.Equal(categoryItems, wantItems) {
		t.Errorf("items per category %v, want the file's %v", categoryItems, wantItems)
	}
}

func TestParseNames(t *testing.T) {
	t.Parallel()
	lines := readLines("a\r\nb \rc\n")
	if !slices.Equal(lines, []string{"a", "b ", "c"}) {
		t.Errorf("readLines: %q", lines)
	}
	for _, bad := range []string{"Books 12", "Books (x)", "(3)", "Books )3("} {
		if _, _, err := parseCategories(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("parseCategories(%q): %v, want an error naming line 1", bad, err)
		}
	}
	if _, err := parseRegions("one\ntwo"); err == nil || !strings.Contains(err.Error(), "2 lines, want 62") {
		t.Errorf("parseRegions of 2 lines: %v", err)
	}
}

// --items-per-category: original deals the active items as InitDB does
// given the kit's file (its counts scaled to the population, exactly, in
// round robin from item i's category i mod 20, skipping the categories
// already full); even deals item i to i mod 20. Old items are i mod 20
// under both.
func TestItemsPerCategory(t *testing.T) {
	t.Parallel()
	count := func(pop population) []int64 {
		n := make([]int64, numCategories)
		for id := pop.FirstActiveItem(); id <= pop.Items(); id++ {
			n[pop.categoryOf(id)-1]++
		}
		return n
	}
	for _, c := range []struct {
		scale  int
		spread string
		want   []int64
	}{
		{1, "", []int64{14, 27, 3, 29, 5, 76, 7, 6, 11, 10, 23, 11, 14, 2, 11, 31, 3, 2, 37, 8}},
		{1, SpreadOriginal, []int64{14, 27, 3, 29, 5, 76, 7, 6, 11, 10, 23, 11, 14, 2, 11, 31, 3, 2, 37, 8}},
		{100, SpreadOriginal, []int64{1388, 2718, 262, 2903, 544, 7598, 671, 592, 1088, 986, 2349, 1062, 1434, 172, 1080, 3060, 308, 244, 3708, 833}},
		{1, SpreadEven, []int64{17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16}},
	} {
		pop := mustSpread(t, c.scale, c.spread)
		if got := count(pop); !slices.Equal(got, c.want) {
			t.Errorf("scale %d, %q: active items per category %v, want %v", c.scale, c.spread, got, c.want)
		}
		for _, id := range []int64{1, 20, 21, pop.OldItems} {
			if got := pop.categoryOf(id); got != (id-1)%numCategories+1 {
				t.Errorf("scale %d, %q: old item %d in category %d, want %d", c.scale, c.spread, id, got, (id-1)%numCategories+1)
			}
		}
	}
	// The deal: the first 20 active items go round the categories (the
	// first active item's index, 5000, is 0 mod 20); in the second round,
	// the categories with 2 items (Photo, Tickets & Travel) take their
	// last one, and in the third their turns pass to the next.
	pop := mustSpread(t, 1, SpreadOriginal)
	first := pop.FirstActiveItem()
	for k := int64(0); k < 40; k++ {
		if got := pop.categoryOf(first + k); got != k%20+1 {
			t.Errorf("active item %d: category %d, want %d", k, got, k%20+1)
		}
	}
	if got := pop.categoryOf(first + 40 + 13); got != 15 {
		t.Errorf("third round, Photo's turn: category %d, want 15 (Pottery & Glass, the next not full)", got)
	}
	if _, err := pop.withSpread("skewed"); err == nil || !strings.Contains(err.Error(), "original or even") {
		t.Errorf("withSpread(skewed): %v, want an error naming the values", err)
	}
}
