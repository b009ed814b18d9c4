package rubis

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// The regions and categories are the original kit's files (original/,
// ORIGIN.md says whence), read as its client reads them: the original
// client, given its own copies, sends these very names, and a name the
// site did not know would be an error page.

//go:embed original/ebay_regions.txt
var ebayRegions string

//go:embed original/ebay_simple_categories.txt
var ebayCategories string

var (
	// regionNames are the 62 regions in id order.
	regionNames = mustRegions(ebayRegions)
	// categoryNames are the 20 categories in id order, and
	// categoryItems the active items the file gives each (its skew:
	// Collectibles 7,521, Photo 170; 32,667 in all).
	categoryNames, categoryItems = mustCategories(ebayCategories)
)

// readLines splits s as Java's BufferedReader.readLine does: at \n, \r\n
// or \r, a last line without its end kept, the blanks of a line kept.
func readLines(s string) []string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// parseRegions reads a regions file: one name a line (RUBiSProperties).
func parseRegions(s string) ([]string, error) {
	lines := readLines(s)
	if len(lines) != numRegions {
		return nil, fmt.Errorf("regions file: %d lines, want %d", len(lines), numRegions)
	}
	return lines, nil
}

// parseCategories reads a categories file as the original client does:
// "NAME (ITEMS)" a line, the name what precedes the last '(' less one
// character, the count what is between the last '(' and the last ')'.
func parseCategories(s string) (names []string, items []int64, err error) {
	for i, line := range readLines(s) {
		open, closing := strings.LastIndexByte(line, '('), strings.LastIndexByte(line, ')')
		if open < 1 || closing < open {
			return nil, nil, fmt.Errorf("categories file, line %d %q: want NAME (ITEMS)", i+1, line)
		}
		n, err := strconv.ParseInt(line[open+1:closing], 10, 64)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("categories file, line %d %q: items %q: want a count", i+1, line, line[open+1:closing])
		}
		names, items = append(names, line[:open-1]), append(items, n)
	}
	if len(names) != numCategories {
		return nil, nil, fmt.Errorf("categories file: %d categories, want %d", len(names), numCategories)
	}
	return names, items, nil
}

// mustRegions and mustCategories parse the embedded files: a failure is
// a bug of this package, caught by any test.
func mustRegions(s string) []string {
	names, err := parseRegions(s)
	if err != nil {
		panic(err)
	}
	return names
}

func mustCategories(s string) ([]string, []int64) {
	names, items, err := parseCategories(s)
	if err != nil {
		panic(err)
	}
	return names, items
}
