package sqlitedrivers_test

import (
	"os"
	"testing"

	sd "github.com/tierbench/tierbench/bench/sqlitedrivers"

	// Registers database/sql driver "sqlite3". (Its embed package is
	// deprecated since the wasm2go switch and only prints a warning.)
	_ "github.com/ncruces/go-sqlite3/driver"
	// Registers database/sql driver "sqlite".
	_ "modernc.org/sqlite"
)

// The pure-Go candidates. github.com/mattn/go-sqlite3 (cgo) is in ./mattn:
// it also registers "sqlite3", so it cannot share a binary with ncruces.
var drivers = []sd.Driver{
	{Name: "modernc", SQLName: "sqlite", Module: "modernc.org/sqlite", DSN: sd.PragmaDSN},
	{Name: "ncruces", SQLName: "sqlite3", Module: "github.com/ncruces/go-sqlite3", DSN: sd.PragmaDSN},
}

func TestMain(m *testing.M) {
	code := m.Run()
	sd.Cleanup()
	os.Exit(code)
}

func TestConfig(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.Name, func(t *testing.T) { sd.CheckConfig(t, d) })
	}
}

func TestTxLock(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.Name, func(t *testing.T) { sd.CheckTxLock(t, d) })
	}
}

func run(b *testing.B, fn func(*testing.B, sd.Driver)) {
	for _, d := range drivers {
		b.Run(d.Name, func(b *testing.B) { fn(b, d) })
	}
}

func BenchmarkPointSelect(b *testing.B)         { run(b, sd.PointSelect) }
func BenchmarkPointSelectParallel(b *testing.B) { run(b, sd.PointSelectParallel) }
func BenchmarkHoldingsRead(b *testing.B)        { run(b, sd.HoldingsRead) }
func BenchmarkBuyStock(b *testing.B)            { run(b, sd.BuyStock) }
func BenchmarkBuyStockParallel(b *testing.B)    { run(b, sd.BuyStockParallel) }
func BenchmarkBulkLoad(b *testing.B)            { run(b, sd.BulkLoad) }
