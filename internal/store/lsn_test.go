package store_test

import (
	"testing"

	"github.com/tierbench/tierbench/internal/store"
)

func TestLSN(t *testing.T) {
	for _, c := range []struct {
		text string
		at   uint64
	}{
		{"0/0", 0},
		{"0/1", 1},
		{"16/b374d848", 0x16_b374d848},
		{"ffffffff/ffffffff", 1<<64 - 1},
	} {
		if got := store.FormatLSN(c.at); got != c.text {
			t.Errorf("FormatLSN(%#x) = %q, want %q", c.at, got, c.text)
		}
		if got, err := store.ParseLSN(c.text); err != nil || got != c.at {
			t.Errorf("ParseLSN(%q) = %#x, %v; want %#x", c.text, got, err, c.at)
		}
	}
	if got, err := store.ParseLSN("16/B374D848"); err != nil || got != 0x16_b374d848 {
		t.Errorf("ParseLSN of PostgreSQL's capitals: %#x, %v", got, err)
	}
	for _, bad := range []string{"", "16", "16/", "/1", "x/1", "1/100000000", "-1/0", "1/2/3"} {
		if _, err := store.ParseLSN(bad); err == nil {
			t.Errorf("ParseLSN(%q) accepted", bad)
		}
	}
}

func TestTerminalAdvance(t *testing.T) {
	var term store.Terminal
	for _, at := range []uint64{5, 3, 9, 9} {
		term.Advance(at)
	}
	if got := term.Position(); got != 9 {
		t.Errorf("position %d, want 9 (the latest, never back)", got)
	}
}
